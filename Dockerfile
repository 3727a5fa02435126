# The EDL controller image: a static edl on distroless, as uid 65532.
#
#   docker build --build-arg VERSION=$(cat VERSION) -t paddlepaddle/edl-controller:$(cat VERSION) .
#
# The build stage runs hack/build.sh, the same command as `make build`
# (cmd/edl/build_test.go checks that they stay the same).

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN hack/build.sh /out/edl "${VERSION}"

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/edl /usr/local/bin/edl
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/edl"]
CMD ["-log_level", "info"]
