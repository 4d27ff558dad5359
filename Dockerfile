# The reqlogd image: one static binary on an empty base, run as a non-root user,
# with the embedded store's data directory as its volume.
#
#   podman build -t reqlog .     (or docker build; Containerfile links here, since
#                                 BuildKit cannot read a Dockerfile that is a link)
#
# deploy/image/build does the same with the version and revision stamped from git,
# and without a registry, from the host's Go toolchain (the README's "Deploy it").
#
# Settings come from REQLOG_* environment variables as usual; secrets preferably
# from files (REQLOG_API_KEYS_FILE, REQLOG_PORTAL_SECRET_FILE, ...). Nothing secret
# is built in.

# Any image with a Go toolchain new enough for go.mod, a POSIX shell and the CA
# certificates at /etc/ssl/certs/ca-certificates.crt.
ARG GO_IMAGE=docker.io/library/golang:1.26

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Static (no libc in the final image), with the toolchain at hand: a go.mod asking
# for a newer one fails the build instead of downloading a toolchain.
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly GOMODCACHE=/go/pkg/mod GOCACHE=/root/.cache/go-build
ARG GOPROXY=https://proxy.golang.org,direct
COPY . .
# The build context leaves .git out, so go build cannot stamp the revision:
# it is passed in and set at link time (reqlogd -version prints it).
ARG VERSION=
ARG REVISION=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /rootfs/usr/local/bin/reqlogd ./cmd/reqlogd
# The rest of the final filesystem: CA certificates (TLS to Elasticsearch or
# MongoDB), the user, the data directory and a /tmp for SQLite's temporary files.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/var/lib/reqlog /rootfs/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && echo 'reqlogd:x:65532:65532:reqlogd:/var/lib/reqlog:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'reqlogd:x:65532:' > /rootfs/etc/group \
 && chown 65532:65532 /rootfs/var/lib/reqlog && chmod 0750 /rootfs/var/lib/reqlog \
 && chmod 1777 /rootfs/tmp

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /rootfs/var/lib/reqlog /var/lib/reqlog
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 65532:65532
# The persistent default store keeps a database file per day, the generated
# development key and the portal secret here: mount a volume.
ENV REQLOG_SQLITE_DIR=/var/lib/reqlog
WORKDIR /var/lib/reqlog
VOLUME ["/var/lib/reqlog"]
# REQLOG_ADDR's default, :8080. /healthz (live) and /readyz (the store answers)
# are the probes; /metrics is Prometheus, unauthenticated.
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/reqlogd"]

ARG VERSION=
ARG REVISION=
LABEL org.opencontainers.image.title="reqlog" \
      org.opencontainers.image.description="reqlogd: a self-hostable request-log service (submit and fetch HTTP exchanges, customer portal)" \
      org.opencontainers.image.source="https://github.com/reqlog/reqlog" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
