#!/usr/bin/env bash
# Builds h2load (nghttp2's load generator) with HTTP/3, for bench/h3.py, from Debian 12
# (bookworm)'s own packages and source packages only:
#
#   - BoringSSL: Debian's prebuilt android-libboringssl(-dev) (13.0.0+r24-2), which has the
#     QUIC API ngtcp2 needs (SSL_set_quic_method & co.); unpacked, not installed
#   - nghttp3 0.8.0   (bookworm source package nghttp3 0.8.0-2)
#   - ngtcp2  0.12.1  (bookworm source package ngtcp2 0.12.1+dfsg-1+deb12u1), built with its
#     BoringSSL crypto backend
#   - nghttp2 1.52.0  (bookworm source package nghttp2 1.52.0-1+deb12u3): the same h2load as
#     Debian's nghttp2-client, plus HTTP/3. Its configure.ac asks for ngtcp2 >= 0.13.0; that is
#     lowered to 0.12.0 (it compiles and runs against 0.12.1). Debian's own h2load is built
#     without HTTP/3, so `h2load --npn-list h3` needs this one.
#
# Usage (as root: it adds deb-src lines and installs build dependencies with apt-get):
#
#   bash bench/build-h2load-h3.sh [CACHE_DIR]      # default CACHE_DIR: target/peers/h2load-h3
#
# Result: CACHE_DIR/prefix/bin/h2load (its RUNPATH points into CACHE_DIR/prefix, so leave it
# there). Run it as  h2load --npn-list h3 -t 1 -c C -m M -D SECONDS https://localhost:PORT/
# and read the `requests: N total, N started, N done, N succeeded, ...` line.
#
# Idempotent: when CACHE_DIR/prefix/bin/h2load exists, runs, and links ngtcp2 and nghttp3 (it
# speaks h3), the script prints its path and does nothing else. Delete CACHE_DIR to rebuild.
# About 1.5 minutes on 2 cores. Steps:
#   1. deb-src lines for bookworm, bookworm-updates and bookworm-security in
#      /etc/apt/sources.list.d/strain-bench-h3-src.sources (skipped when apt already knows the
#      nghttp3 source package), then apt-get update
#   2. apt-get install the build tools and libev, c-ares, zlib headers
#   3. apt-get download android-libboringssl(-dev), dpkg -x into CACHE_DIR
#   4. apt-get source the three packages at the versions above (override with NGHTTP3_V,
#      NGTCP2_V, NGHTTP2_V, full Debian versions, if bookworm has moved on)
#   5-7. cmake (nghttp3, ngtcp2) and autotools (nghttp2: 1.52's CMake only knows quictls,
#      its configure knows BoringSSL), all installed into CACHE_DIR/prefix
# J=N sets the parallel jobs (default: nproc).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=${1:-$REPO/target/peers/h2load-h3}
mkdir -p "$ROOT"
ROOT=$(cd "$ROOT" && pwd)   # absolute: it ends up in the binary's RUNPATH
P=$ROOT/prefix
SRC=$ROOT/src
BIN=$P/bin/h2load
J=${J:-$(nproc)}
NGHTTP3_V=${NGHTTP3_V:-0.8.0-2}
NGTCP2_V=${NGTCP2_V:-0.12.1+dfsg-1+deb12u1}
NGHTTP2_V=${NGHTTP2_V:-1.52.0-1+deb12u3}

speaks_h3() {
  # ldd's output is read whole first: `ldd | grep -q` under pipefail fails when grep's early
  # exit leaves ldd writing into a closed pipe (SIGPIPE).
  local libs
  [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1 && libs=$(ldd "$BIN") &&
    grep -q 'libngtcp2\.' <<<"$libs" && grep -q 'libnghttp3\.' <<<"$libs"
}

if speaks_h3; then
  echo "h2load with HTTP/3 already built: $BIN ($("$BIN" --version | head -1))"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "error: run as root (apt-get: deb-src lines, build dependencies)" >&2
  exit 2
fi
if ! grep -q '^VERSION_CODENAME=bookworm' /etc/os-release; then
  echo "warning: this is not Debian bookworm; the pinned source versions may not exist" >&2
fi
mkdir -p "$P" "$SRC" "$ROOT/debs"

# 1. deb-src for the Debian mirror (bookworm only)
if ! apt-cache showsrc nghttp3 2>/dev/null | grep -q "^Version: ${NGHTTP3_V}\$"; then
  cat > /etc/apt/sources.list.d/strain-bench-h3-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq
fi

# 2. build tools and libraries (h2load needs libev and zlib; --enable-app also wants c-ares)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  build-essential dpkg-dev cmake pkg-config autoconf automake libtool \
  libev-dev libc-ares-dev zlib1g-dev >/dev/null

# 3. BoringSSL from Debian's android-libboringssl packages, unpacked into $P/boringssl
cd "$ROOT/debs"
rm -f android-libboringssl*.deb
apt-get download android-libboringssl android-libboringssl-dev
rm -rf "$ROOT/bssl"; mkdir -p "$ROOT/bssl"
for f in android-libboringssl*.deb; do dpkg -x "$f" "$ROOT/bssl"; done
rm -rf "$P/boringssl"; mkdir -p "$P/boringssl/lib" "$P/boringssl/include"
cp -a "$ROOT/bssl/usr/include/android/openssl" "$P/boringssl/include/"
cp -a "$ROOT/bssl/usr/lib/x86_64-linux-gnu/android/." "$P/boringssl/lib/"

# 4. sources (each unpacks into NAME-UPSTREAMVERSION/)
cd "$SRC"
rm -rf nghttp3-*/ ngtcp2-*/ nghttp2-*/
apt-get source -qq "nghttp3=$NGHTTP3_V" "ngtcp2=$NGTCP2_V" "nghttp2=$NGHTTP2_V"
up() { local v=${1%-*}; echo "${v#*:}"; }   # Debian version -> upstream version
D3=$SRC/nghttp3-$(up "$NGHTTP3_V")
DT=$SRC/ngtcp2-$(up "$NGTCP2_V")
D2=$SRC/nghttp2-$(up "$NGHTTP2_V")

# 5. nghttp3 (library only)
cd "$D3"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$P" \
  -DENABLE_LIB_ONLY=ON -DENABLE_STATIC_LIB=OFF -DCMAKE_INSTALL_RPATH="$P/lib"
cmake --build build -j"$J"
cmake --install build

# 6. ngtcp2 with the BoringSSL crypto backend (the static library stays ON: examples link it)
cd "$DT"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$P" \
  -DENABLE_OPENSSL=OFF -DENABLE_GNUTLS=OFF -DENABLE_BORINGSSL=ON \
  -DBORINGSSL_INCLUDE_DIR="$P/boringssl/include" \
  "-DBORINGSSL_LIBRARIES=$P/boringssl/lib/libssl.so;$P/boringssl/lib/libcrypto.so" \
  -DCMAKE_INSTALL_RPATH="$P/lib;$P/boringssl/lib"
cmake --build build -j"$J"
cmake --install build
# its .pc says -lngtcp2_crypto_boringssl, but 0.12 installs only the _static archive
ln -sf libngtcp2_crypto_boringssl_static.a "$P/lib/libngtcp2_crypto_boringssl.a"

# 7. nghttp2's h2load (autotools)
cd "$D2"
sed -i 's/libngtcp2 >= 0.13.0/libngtcp2 >= 0.12.0/' configure.ac
autoreconf -i
mkdir -p _build && cd _build
PKG_CONFIG_PATH="$P/lib/pkgconfig" ../configure --prefix="$P" \
  --enable-app --enable-http3 --disable-python-bindings --disable-examples \
  --disable-hpack-tools --with-libngtcp2 --with-libnghttp3 --with-libev --with-openssl \
  OPENSSL_CFLAGS="-I$P/boringssl/include" \
  OPENSSL_LIBS="-L$P/boringssl/lib -lssl -lcrypto" \
  LDFLAGS="-Wl,-rpath,$P/lib -Wl,-rpath,$P/boringssl/lib"
make -C third-party -j"$J"
make -C lib -j"$J"
make -C src -j"$J" h2load
make -C lib install
make -C src install-binPROGRAMS bin_PROGRAMS=h2load

if ! speaks_h3; then
  echo "error: $BIN was built but does not link ngtcp2/nghttp3" >&2
  exit 1
fi
echo "built: $BIN ($("$BIN" --version | head -1))"
