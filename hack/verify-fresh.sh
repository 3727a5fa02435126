#!/usr/bin/env bash
# verify-fresh.sh proves that the project's own files install what they use:
# it runs `make verify` (gofmt, go vet, the generated-code check) and builds
# edl as a new user's machine would, with the Go module cache, the Go build
# cache, HOME and EDL's cache directory all new, empty temporary directories.
# Everything comes from the Go module proxy, pinned by go.mod and go.sum; a
# step that reads a module's files without downloading them, or a tool that
# only a warm machine has, fails here although it passes on a warm machine.
#
# Usage: hack/verify-fresh.sh        (make verify-fresh; .ci/run runs it)
#
# The user's Go settings (GOPROXY, GOFLAGS, ... from the environment or from
# `go env -w`) are kept: only the caches are new. The control-plane binaries
# are not rebuilt here (hack/build-control-plane.sh downloads its modules with
# `go mod download` and builds into a new directory whenever its pins change).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
tmp="$(mktemp -d)"
# The module cache is read-only; make it removable first.
trap 'chmod -R u+w "${tmp}" 2>/dev/null || true; rm -rf "${tmp}"' EXIT

# `go env -w` settings live under HOME, which is about to be empty.
GOENV="$(go env GOENV)"
export GOENV
mkdir -p "${tmp}/home"
export HOME="${tmp}/home"
export XDG_CACHE_HOME="${tmp}/home/.cache"
export GOPATH="${tmp}/gopath"
export GOMODCACHE="${tmp}/gomodcache"
export GOCACHE="${tmp}/gocache"
export EDL_CACHE_DIR="${tmp}/edl"
unset GOBIN

cd "${ROOT}"
start=${SECONDS}
echo "verify-fresh: make verify and the edl build with empty caches under ${tmp}"
make --no-print-directory verify
hack/build.sh "${tmp}/bin/edl" fresh >/dev/null
version="$("${tmp}/bin/edl" -version)"
echo "verify-fresh: passed in $((SECONDS - start))s (built ${version}; downloaded $(du -sh "${GOMODCACHE}" | cut -f1) of modules)"
