# Multi-stage build of the waitroom service for machines with normal registry
# access: `docker build -t waitroom/waitroom:local .` or `docker compose up --build`.
# (Where golang images cannot be pulled, scripts/build-images.sh app compiles on
# the host and uses scripts/Dockerfile.local instead.)

# The release this is (docker build --build-arg VERSION=v0.9.0 --build-arg
# REVISION=$(git rev-parse HEAD) .): what `waitroom version`, /healthz and
# the image's labels say. The context leaves .git out: Go cannot tell them.
ARG VERSION=devel
ARG REVISION=

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules in their own layer: source edits do not re-download dependencies.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static binary: the final image has no libc. web/static is embedded by go:embed.
# VERSION is declared here, not above, so a new one reuses the module layer.
ARG VERSION
RUN CGO_ENABLED=0 go build -trimpath \
	-ldflags="-s -w -X github.com/waitroom/waitroom/internal/infra/version.version=${VERSION}" \
	-o /out/ ./cmd/waitroom ./cmd/demo-order

FROM scratch
ARG VERSION
ARG REVISION
LABEL org.opencontainers.image.title="waitroom" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}" \
	org.opencontainers.image.source="https://github.com/waitroom/waitroom"
# CA roots for TLS to Redis (rediss://) or other HTTPS endpoints.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/waitroom /waitroom
# The demo order page (docker-compose.yml runs it with entrypoint /demo-order).
COPY --from=build /out/demo-order /demo-order
# Same unprivileged uid/gid as distroless "nonroot".
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/waitroom"]
