# syntax=docker/dockerfile:1
#
# The xconn image: one static binary (CGO_ENABLED=0; SQLite is pure Go) on
# distroless/static, run as the non-root user 65532, state in the /data
# volume. The entrypoint is xconn: "docker run IMAGE serve webchat", "...
# host URL", "... version --json". Every serve and host command serves
# /livez and /readyz on XCONN_HEALTH (:8081), which the HEALTHCHECK probes
# with "xconn probe" (the image has no shell and no curl).
#
#   docker build -t xconn \
#     --build-arg VERSION=0.1.0 \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) \
#     --build-arg DATE=$(date -u +%y%m%d%H%M) .
#
# See deploy/README.md for the docker run lines of each command.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# VERSION, COMMIT and DATE (YYMMDDhhmm, UTC) become "xconn version" and the
# connectors' Card build metadata; unset, the binary says it has none.
ARG VERSION=0.0.0-dev
ARG COMMIT=
ARG DATE=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -buildvcs=false -o /out/xconn -ldflags "-s -w \
      -X github.com/xconn/xconn/internal/buildinfo.version=${VERSION} \
      -X github.com/xconn/xconn/internal/buildinfo.gitTag=v${VERSION} \
      -X github.com/xconn/xconn/internal/buildinfo.gitRev=${COMMIT} \
      -X github.com/xconn/xconn/internal/buildinfo.buildTime=${DATE}" \
      ./cmd/xconn \
 && /out/xconn version \
 && mkdir -p /out/data && chmod 0700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=0.0.0-dev
ARG COMMIT=
LABEL org.opencontainers.image.title="xconn" \
      org.opencontainers.image.description="Toolkit for the xAgent Connector protocol 3.0: connectors, host, conformance" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/xconn /usr/local/bin/xconn
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# The serve commands' and the host's data directory; --listen on every
# interface (a non-loopback listener refuses to start without an API key);
# /livez and /readyz on :8081.
ENV XCONN_DATA=/data \
    XCONN_HOST_DATA=/data \
    XCONN_LISTEN=0.0.0.0:8080 \
    XCONN_HEALTH=:8081
VOLUME ["/data"]
EXPOSE 8080 8081
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/xconn", "probe"]
ENTRYPOINT ["/usr/local/bin/xconn"]
CMD ["--help"]
