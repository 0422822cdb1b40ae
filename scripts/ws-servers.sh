#!/usr/bin/env bash
# Builds the WebSocket servers the integration tests load: gorilla/websocket's own echo and chat
# examples (examples/echo/server.go, examples/chat), unchanged, from the module cache at the
# version tests/servers/ws-go/go.sum pins, into target/go-bin when that pin changes; prints the
# exports the tests read:
#
#   eval "$(bash scripts/ws-servers.sh)" && cargo test --test main websocket
#
# scripts/test.sh runs it. Silent on stdout but for the exports; one line on stderr when it
# builds; the go command's own output only when the build fails. GO names the go command
# (default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
src=tests/servers/ws-go
bin=target/go-bin

stamp=$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -d' ' -f1)
if [ ! -x "$bin/ws-echo" ] || [ ! -x "$bin/ws-chat" ] || [ "$(cat "$bin/ws-servers.sha256" 2>/dev/null)" != "$stamp" ]; then
    go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
    echo "ws-servers.sh: building $bin/ws-echo and $bin/ws-chat (needed by the WebSocket tests)" >&2
    mkdir -p "$bin"
    # The echo example is one file marked `//go:build ignore` (it is run with `go run`):
    # named on the command line, it builds as its own main package inside this module.
    # `go list -m` names the module's directory only once it is downloaded.
    if ! out=$(cd "$src" && "$go" mod download github.com/gorilla/websocket 2>&1 &&
        dir=$("$go" list -m -f '{{.Dir}}' github.com/gorilla/websocket) &&
        CGO_ENABLED=0 "$go" build -o "$root/$bin/ws-echo" "$dir/examples/echo/server.go" 2>&1 &&
        CGO_ENABLED=0 "$go" build -o "$root/$bin/ws-chat" github.com/gorilla/websocket/examples/chat 2>&1); then
        printf '%s\n' "$out" >&2
        exit 1
    fi
    echo "$stamp" >"$bin/ws-servers.sha256"
fi
printf 'export STRAIN_TEST_WS_ECHO=%q\n' "$root/$bin/ws-echo"
printf 'export STRAIN_TEST_WS_CHAT=%q\n' "$root/$bin/ws-chat"
