#!/usr/bin/env bash
# The one build command of the edl binary: `make build` and the Dockerfile
# both run it, so that the image holds the binary the tests built. The
# kubectl plugin, kubectl-edl, is built beside it the same way.
#
#   hack/build.sh [OUTPUT] [VERSION]    # defaults: bin/edl, $VERSION or dev
#
# A static binary (no cgo), reproducible paths (-trimpath), no symbol tables
# (-s -w), and the version that `edl -version` prints.
set -euo pipefail

out="${1:-bin/edl}"
version="${2:-${VERSION:-dev}}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "$out" ./cmd/edl
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "$(dirname "$out")/kubectl-edl" ./cmd/kubectl-edl
# kubectl (v1.26 and newer) completes `kubectl edl <TAB>` by running
# kubectl_complete-edl from the PATH: the plugin under that name.
ln -sf kubectl-edl "$(dirname "$out")/kubectl_complete-edl"
