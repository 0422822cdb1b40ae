#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (`.ci/run` calls this script).
# Installs what the tests need that a fresh Debian machine lacks (nginx), then runs the format
# and lint gates and every test.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_pkgs+=(nginx-light)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "test.sh: installing ${need_pkgs[*]} (needed by the integration tests)"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
# nginx-light's package starts a system nginx on port 80; the tests run their own.
command -v systemctl >/dev/null 2>&1 && systemctl stop nginx >/dev/null 2>&1 || true

cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
cargo test --all-targets --quiet
