# syntax=docker/dockerfile:1
#
# The one gputally image: the node exporter and the weekly report.
#
#   docker build --build-arg VERSION=$(git describe --tags) -t gputally/gputally:dev .
#
# NVML is loaded at run time (dlopen) from the driver libraries the NVIDIA container
# toolkit injects into the pod, so the binary is built with cgo against glibc and runs on a
# distroless base that has glibc but no shell and no package manager. The image carries no
# DCGM library: `--backend=auto` falls back to NVML; the dcgm backend needs libdcgm from
# the host.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" GOFLAGS=-buildvcs=false \
    go build -trimpath \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=gputally \
        -X github.com/prometheus/common/version.BuildDate=1970-01-01T00:00:00Z" \
      -o /out/gputally ./cmd/gputally \
 && /out/gputally version

# base-debian12 (not static): glibc for cgo and dlopen of libnvidia-ml.so.1.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/gputally /gputally
# nonroot (65532), the uid the Helm chart's securityContext runs as.
USER 65532:65532
EXPOSE 9400
ENTRYPOINT ["/gputally"]
CMD ["exporter"]
