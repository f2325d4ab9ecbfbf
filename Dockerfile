# Multi-stage build of hintstream: cgo needs libzmq's headers to build and
# its shared library to run.
FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libzmq3-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -o /out/hintstream ./cmd/hintstream

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libzmq5 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/hintstream /usr/local/bin/hintstream
USER 65534:65534
# `hintstream run` serves /metrics, /healthz and /readyz here unless
# --http-addr says otherwise; `hintstream healthcheck` asks the same
# address, so the image needs no curl or wget. Kubernetes ignores
# HEALTHCHECK and probes with its own httpGet (deploy/helm).
ENV HINTSTREAM_HTTP_ADDR=:9090
EXPOSE 9090
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/hintstream", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/hintstream"]
CMD ["run", "--help"]
