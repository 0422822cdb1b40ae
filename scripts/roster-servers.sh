#!/usr/bin/env bash
# Builds the Go net/http server of the roster of real servers (tests/servers/go-http, a module
# with no dependencies) into target/go-bin when its sources change; prints the export the
# tests read:
#
#   eval "$(bash scripts/roster-servers.sh)" && cargo test --test integration roster
#
# scripts/test.sh runs it. Silent on stdout but for the export; one line on stderr when it
# builds; the go command's own output only when the build fails. GO names the go command
# (default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
src=tests/servers/go-http
bin=target/go-bin

stamp=$(cd "$src" && cat go.mod ./*.go | sha256sum | cut -d' ' -f1)
if [ ! -x "$bin/go-http" ] || [ "$(cat "$bin/go-http.sha256" 2>/dev/null)" != "$stamp" ]; then
    go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
    echo "roster-servers.sh: building $bin/go-http (needed by the roster tests)" >&2
    mkdir -p "$bin"
    if ! out=$(cd "$src" && CGO_ENABLED=0 "$go" build -o "$root/$bin/go-http" . 2>&1); then
        printf '%s\n' "$out" >&2
        exit 1
    fi
    echo "$stamp" >"$bin/go-http.sha256"
fi
printf 'export STRAIN_TEST_GO_HTTP=%q\n' "$root/$bin/go-http"
