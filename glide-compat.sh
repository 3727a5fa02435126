#!/usr/bin/env bash
# glide-compat.sh: the original EDL's build steps, on Go modules.
#
# The original README built EDL with
#
#   glide install --strip-vendor
#   go build -o path/to/output github.com/paddlepaddle/edl/cmd/edl
#
# Glide is long retired; the dependencies are now pinned in go.mod and go.sum.
# This script keeps the two steps for people and scripts that follow them:
#
#   ./glide-compat.sh install          vendor the pinned dependencies into vendor/ (go mod vendor)
#   ./glide-compat.sh build [output]   build ./cmd/edl from vendor/ (default output: bin/edl)
#   ./glide-compat.sh yaml             print the direct dependencies in glide.yaml form
#
# `build` uses the flags of `make build` (static, -trimpath, stripped, the
# version stamped in) plus -mod=vendor, so it needs nothing but the Go
# toolchain and vendor/. VERSION overrides the stamped version, as with make.
#
# While vendor/ exists, every go command in the repository builds from it
# (Go's default when a vendor directory is present) and fails once go.mod
# changes and vendor/ is stale: run `install` again, or delete vendor/ to go
# back to the module cache. vendor/ is ignored by git.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODULE="github.com/paddlepaddle/edl"

usage() {
	echo "usage: $0 install | build [output] | yaml" >&2
	exit 2
}

cmd_install() {
	cd "${ROOT}"
	go mod vendor
	echo "vendored $(grep -c '^# ' vendor/modules.txt) modules into ${ROOT}/vendor"
}

cmd_build() {
	local out="${1:-bin/edl}"
	cd "${ROOT}"
	if [[ ! -f vendor/modules.txt ]]; then
		echo "$0: ${ROOT}/vendor is missing: run '$0 install' first" >&2
		exit 1
	fi
	local version="${VERSION:-}"
	if [[ -z "${version}" ]]; then
		version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
	fi
	CGO_ENABLED=0 go build -mod=vendor -trimpath -ldflags "-s -w -X main.version=${version}" -o "${out}" ./cmd/edl
	echo "built ${out} (edl ${version})"
}

cmd_yaml() {
	cd "${ROOT}"
	echo "package: ${MODULE}"
	echo "import:"
	# -mod=readonly: with vendor/ present Go would refuse to list modules.
	go list -mod=readonly -m \
		-f '{{if not (or .Main .Indirect)}}- package: {{.Path}}{{"\n"}}{{with .Replace}}  repo: {{.Path}}{{"\n"}}  version: {{.Version}}{{else}}  version: {{.Version}}{{end}}{{end}}' \
		all | sed '/^$/d'
}

[[ $# -ge 1 ]] || usage
case "$1" in
install)
	[[ $# -eq 1 ]] || usage
	cmd_install
	;;
build)
	[[ $# -le 2 ]] || usage
	shift
	cmd_build "$@"
	;;
yaml)
	[[ $# -eq 1 ]] || usage
	cmd_yaml
	;;
*)
	usage
	;;
esac
