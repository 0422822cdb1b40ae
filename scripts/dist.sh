#!/usr/bin/env bash
# Builds what a release ships, into dist/:
#   dist/strain-x86_64-linux-gnu.tar.gz   the binary, its man page and bash, zsh and fish
#                                         completions, README and licence, in strain-VERSION/
#   dist/strain_VERSION_amd64.deb         the same, installed under /usr
# The binary runs on glibc 2.28 and later and needs no shared library but the C library's own
# (scripts/portable-env.sh); this script checks both before packing it.
#
#   scripts/dist.sh [--profile P]   P: dist (the default: fat LTO, what releases ship), or
#                                   dev, which the test command packs from its own build
set -euo pipefail
cd "$(dirname "$0")/.."

profile=dist
while [ $# -gt 0 ]; do
    case $1 in
        --profile) profile=${2:?--profile needs a profile}; shift 2 ;;
        *) echo "dist.sh: unknown argument '$1' (usage: scripts/dist.sh [--profile dist|dev])" >&2; exit 2 ;;
    esac
done

# shellcheck source=scripts/portable-env.sh
. scripts/portable-env.sh
portable_cargo build --profile "$profile" --locked --quiet
out_dir=$profile
[ "$profile" = dev ] && out_dir=debug
bin="target/$PORTABLE_DIR/$out_dir/strain"

# The C library's own libraries are the only ones a binary may need on every glibc system.
allowed='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2)$'
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
extra=$(printf '%s\n' "$needed" | grep -Ev "$allowed" || true)
if [ -n "$extra" ]; then
    echo "dist.sh: $bin needs shared libraries beyond the C library's: $extra" >&2
    exit 1
fi
newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ "$(printf '%s\n2.28\n' "$newest" | sort -V | tail -1)" != 2.28 ]; then
    echo "dist.sh: $bin needs glibc $newest, past 2.28" >&2
    exit 1
fi

version=$("$bin" --version | awk '{print $2}')
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p dist
# Shipped without its debug information (the dist profile keeps line tables for profiling
# here): a fifth of the size. The symbols stay, so perf still names functions.
objcopy --strip-debug "$bin" "$stage/strain"
bin="$stage/strain"

# The archive: one directory, as users unpack it.
tree="$stage/strain-$version"
mkdir -p "$tree/completions"
install -m 0755 "$bin" "$tree/strain"
"$bin" man > "$tree/strain.1"
"$bin" completions bash > "$tree/completions/strain.bash"
"$bin" completions zsh > "$tree/completions/_strain"
"$bin" completions fish > "$tree/completions/strain.fish"
cp README.md "$tree/"
cp LICENSE "$tree/"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf dist/strain-x86_64-linux-gnu.tar.gz "strain-$version"

# The Debian package, laid out by hand for dpkg-deb: the binary is already built and checked,
# and its one dependency is the C library, at the version the check above found.
root="$stage/deb"
install -D -m 0755 "$bin" "$root/usr/bin/strain"
install -d "$root/usr/share/man/man1"
gzip -9n < "$tree/strain.1" > "$root/usr/share/man/man1/strain.1.gz"
install -D -m 0644 "$tree/completions/strain.bash" "$root/usr/share/bash-completion/completions/strain"
install -D -m 0644 "$tree/completions/_strain" "$root/usr/share/zsh/vendor-completions/_strain"
install -D -m 0644 "$tree/completions/strain.fish" "$root/usr/share/fish/vendor_completions.d/strain.fish"
install -d "$root/usr/share/doc/strain"
{
    echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    echo "Upstream-Name: strain"
    echo
    echo "Files: *"
    echo "License: MIT"
    sed 's/^$/./; s/^/ /' LICENSE
} > "$root/usr/share/doc/strain/copyright"
chmod 0644 "$root/usr/share/doc/strain/copyright"
install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<EOF
Package: strain
Version: $version
Architecture: amd64
Maintainer: strain developers <strain@localhost>
Depends: libc6 (>= $newest)
Section: net
Priority: optional
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Description: HTTP load generator
 wrk's flags and output, constant-rate load with honest latency (wrk2), a
 cache and proxy test rig (jtest), replay of recorded traffic, HTTP/2, HTTP/3,
 gRPC and WebSocket, with reports, capacity search and A/B verdicts.
EOF
(cd "$root" && find usr -type f -exec md5sum {} + > DEBIAN/md5sums)
deb="dist/strain_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "dist.sh: dist/strain-x86_64-linux-gnu.tar.gz and $deb (glibc $newest and later; needs ${needed//$'\n'/, })"
