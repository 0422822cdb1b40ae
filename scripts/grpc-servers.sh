#!/usr/bin/env bash
# Builds the gRPC servers the integration tests load (tests/servers/grpc-go: grpc-go serving
# its examples' helloworld and route_guide services) into target/go-bin when their sources
# change, writes the services' schema into target/grpc-protos, and prints the exports the tests
# read:
#
#   eval "$(bash scripts/grpc-servers.sh)" && cargo test --test main grpc
#
# target/grpc-protos holds helloworld.proto and route_guide.proto as the examples module ships
# them (route_guide.proto is written in edition 2023), and servers.protoset, the descriptor set
# compiled into the server.
#
# scripts/test.sh runs it. Silent on stdout but for the exports; one line on stderr when it
# builds; the go command's own output only when the build fails. GO names the go command
# (default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
src=tests/servers/grpc-go
bin=target/go-bin/grpc-servers
protos=target/grpc-protos

# A hash of the sources kept beside the binary says which sources it was built from: file
# times change with every checkout, and a stale server would test the wrong thing quietly.
stamp=$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -d' ' -f1)
if [ ! -x "$bin" ] || [ "$(cat "$bin.sha256" 2>/dev/null)" != "$stamp" ] ||
    [ ! -s "$protos/servers.protoset" ]; then
    go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
    echo "grpc-servers.sh: building $bin (needed by the gRPC tests)" >&2
    mkdir -p "$(dirname "$bin")" "$protos"
    # Without cgo the build needs no C toolchain; Go's own resolver is all a loopback server needs.
    if ! out=$(cd "$src" && CGO_ENABLED=0 "$go" build -o "$root/$bin.new" . 2>&1); then
        printf '%s\n' "$out" >&2
        exit 1
    fi
    # The .proto sources are the examples module's own, from the module cache at the version
    # go.sum pins, so they always match the generated code the server is built from.
    examples=$(cd "$src" && "$go" list -m -f '{{.Dir}}' google.golang.org/grpc/examples)
    install -m 0644 "$examples/helloworld/helloworld/helloworld.proto" \
        "$examples/route_guide/routeguide/route_guide.proto" "$protos/"
    "$bin.new" -write-protoset "$protos/servers.protoset"
    rm -rf "$protos/proto3"
    mv "$bin.new" "$bin"
    echo "$stamp" >"$bin.sha256"
fi
printf 'export STRAIN_TEST_GRPC_SERVERS=%q\n' "$root/$bin"
printf 'export STRAIN_TEST_GRPC_PROTOS=%q\n' "$root/$protos"
