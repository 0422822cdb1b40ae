#!/usr/bin/env bash
# Builds what the gRPC and WebSocket benchmarks need into target/go-bin, from the Go module proxy:
#
#   - ghz, the gRPC load generator strain is compared with (pinned below)
#   - grpc-servers, grpc-go serving its examples' Greeter and RouteGuide (scripts/grpc-servers.sh,
#     the same build the tests use)
#   - ws-bench-client, a closed-loop WebSocket echo client on gorilla/websocket (bench/ws-go)
#   - sse-go, a Server-Sent Events load client on net/http (bench/sse-go, standard library only)
#
# Usage: bash bench/tools.sh   (then target/go-bin/ghz, grpc-servers, ws-bench-client and sse-go)
#
# Idempotent and quiet: it builds only what is missing (ghz) or stale (grpc-servers), says one
# line on stderr for each build, and shows the go command's output only when a build fails.
# ghz takes about 1.5 minutes on 2 cores from an empty module cache. GO names the go command
# (default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
ghz_version=v0.120.0

if ! target/go-bin/ghz --version >/dev/null 2>&1; then
    echo "tools.sh: building ghz $ghz_version into target/go-bin" >&2
    if ! out=$(GOBIN="$PWD/target/go-bin" "$go" install "github.com/bojand/ghz/cmd/ghz@$ghz_version" 2>&1); then
        printf '%s\n' "$out" >&2
        exit 1
    fi
fi
GO="$go" bash scripts/grpc-servers.sh >/dev/null
# The WebSocket benchmark's peer: a closed-loop echo client on gorilla/websocket (bench/ws-go).
if [ ! -x target/go-bin/ws-bench-client ] || [ bench/ws-go/main.go -nt target/go-bin/ws-bench-client ]; then
    echo "tools.sh: building ws-bench-client into target/go-bin" >&2
    if ! out=$(cd bench/ws-go && CGO_ENABLED=0 "$go" build -o "$OLDPWD/target/go-bin/ws-bench-client" . 2>&1); then
        printf '%s\n' "$out" >&2
        exit 1
    fi
fi
# The Server-Sent Events benchmark's peer: a goroutine per stream on net/http (bench/sse-go).
if [ ! -x target/go-bin/sse-go ] || [ bench/sse-go/main.go -nt target/go-bin/sse-go ]; then
    echo "tools.sh: building sse-go into target/go-bin" >&2
    if ! out=$(cd bench/sse-go && CGO_ENABLED=0 "$go" build -o "$OLDPWD/target/go-bin/sse-go" . 2>&1); then
        printf '%s\n' "$out" >&2
        exit 1
    fi
fi
