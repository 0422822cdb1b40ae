# strain's container image: the binary built with the release profile (`dist`) on Debian, run
# from distroless's C runtime image (glibc and libgcc, no shell) as its non-root user 65532, as
# the manifests of `strain k8s-job` expect (entrypoint strain, runAsUser 65532).
#
#   docker build -t REGISTRY/strain:TAG .        (or: podman build -t REGISTRY/strain:TAG .)
#
# The build stage needs what a checkout does: cmake and libclang for the BoringSSL under
# HTTP/3, a C++ compiler for it and LuaJIT. TLS roots are compiled in (webpki-roots), and
# Kubernetes mounts /etc/resolv.conf and /etc/hosts, so the runtime image needs nothing more.

FROM docker.io/library/rust:1.95-slim-bookworm AS build
# Debian replaces a package's version with each point release, so a pinned version would
# stop resolving; the toolchain image itself is pinned.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake libclang-dev g++ make perl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --profile dist --locked --bin strain \
 && cp target/dist/strain /strain \
 && /strain --version

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /strain /usr/local/bin/strain
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/strain"]
