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
ENTRYPOINT ["/usr/local/bin/hintstream"]
CMD ["run", "--help"]
