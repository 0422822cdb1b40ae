# Sourced by scripts/dist.sh and scripts/test.sh: builds for glibc 2.28 and later through
# cargo-zigbuild, zig (both from PyPI, pinned, in target/zig-venv) being the C compiler and
# linker, so one x86_64 binary runs on Debian 10, RHEL 8, Ubuntu 18.10 and every later release.
# After sourcing, `portable_cargo SUBCOMMAND ARGS...` runs cargo's build, test or clippy for that
# target (its output in target/x86_64-unknown-linux-gnu/PROFILE/).

PORTABLE_TARGET=x86_64-unknown-linux-gnu.2.28
PORTABLE_DIR=x86_64-unknown-linux-gnu
portable_venv=target/zig-venv

if [ ! -x "$portable_venv/bin/cargo-zigbuild" ] || ! "$portable_venv/bin/python3" -c 'import ziglang' >/dev/null 2>&1; then
    echo "portable-env.sh: installing cargo-zigbuild and zig into $portable_venv (the glibc 2.28 build)"
    python3 -c 'import ensurepip' >/dev/null 2>&1 || {
        sudo_cmd=""
        [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
        $sudo_cmd apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-venv >/dev/null
    }
    python3 -m venv "$portable_venv"
    "$portable_venv/bin/pip" install -q --disable-pip-version-check 'cargo-zigbuild==0.24.1' 'ziglang==0.17.1'
fi
# zig by its path, not the venv on PATH: the venv's python3 would shadow the machine's for the
# tests that follow.
CARGO_ZIGBUILD_ZIG_PATH=$("$portable_venv/bin/python3" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
export CARGO_ZIGBUILD_ZIG_PATH
portable_zigbuild="$PWD/$portable_venv/bin/cargo-zigbuild"

# bindgen (boring-sys's bindings) parses BoringSSL's headers with the machine's libclang, which
# cannot find its own stddef.h among the include flags cargo-zigbuild gives it for zig's
# headers; its own resource directory is given instead (only type layouts come from it, which
# are the same on every x86_64 glibc). cargo-zigbuild sets the variable itself, so only a forced
# [env] entry of cargo's configuration reaches the build script.
portable_clang_include=""
if [ -n "${LIBCLANG_PATH:-}" ]; then
    portable_clang_include=$(ls -d "$LIBCLANG_PATH"/clang/*/include 2>/dev/null | sort -V | tail -1)
fi
[ -n "$portable_clang_include" ] ||
    portable_clang_include=$(ls -d /usr/lib/llvm-*/lib/clang/*/include 2>/dev/null | sort -V | tail -1)
if [ -z "$portable_clang_include" ]; then
    echo "portable-env.sh: no libclang resource directory under /usr/lib/llvm-*: install libclang-dev" >&2
    exit 1
fi
portable_config="$portable_venv/cargo-env.toml"
cat > "$portable_config" <<EOF
[env]
BINDGEN_EXTRA_CLANG_ARGS_x86_64-unknown-linux-gnu = { value = "-I$portable_clang_include", force = true }
EOF
# BoringSSL's few C++ symbols come from zig's own libc++, linked statically (the host's
# libstdc++.a, which .cargo/config.toml names, is built against the host's newer glibc).
export BORING_BSSL_RUST_CPPLIB=c++
# LuaJIT unwinds its errors itself (setjmp and longjmp, as Lua 5.1 does, which mlua is made for),
# not through the system's DWARF unwinder: zig links LLVM's libunwind, whose __register_frame
# takes single FDEs, not the table LuaJIT registers for its JIT code with libgcc in mind (a debug
# LuaJIT asserts "bad JIT unwind table registration"). cc-rs and LuaJIT's makefile both read it.
export TARGET_CFLAGS=-DLUAJIT_NO_UNWIND

portable_cargo() {
    local sub=$1
    shift
    [ "$sub" = build ] && sub=zigbuild
    "$portable_zigbuild" "$sub" --target "$PORTABLE_TARGET" --config "$portable_config" "$@"
}
