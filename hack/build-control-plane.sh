#!/usr/bin/env bash
# Builds the Kubernetes control plane that EDL's integration tests and local
# cluster run: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok and kubectl, and what a real node runs beside them: kubelet,
# kube-proxy and CoreDNS, all from Go modules pinned in
# hack/tools/{k8s,etcd,kwok,coredns}.
#
# Usage:
#   hack/build-control-plane.sh              build what is missing; last line is the bin dir
#   hack/build-control-plane.sh --print-dir  print the bin dir only, build nothing
#   hack/build-control-plane.sh --check      exit 0 when every binary is there, 1 otherwise
#
# The binaries go to a cache outside the repository:
#   ${EDL_CACHE_DIR:-$HOME/.cache/edl}/controlplane-<key>/bin
# where <key> names the pinned versions and a hash of the tools modules' go.mod
# and go.sum, so changing a pin builds into a new directory. A complete
# directory is never rebuilt. Only the Go toolchain and the Go module proxy are
# needed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/hack/tools"
BINARIES=(etcd kwok kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy coredns)

# pin prints the version a tools module requires of a module. Reading the pins
# from the go.mod files keeps them in one place; go mod edit parses go.mod
# without touching the network.
pin() { # dir module
	(cd "$1" && GOWORK=off go mod edit -json) |
		awk -v p="\"Path\": \"$2\"," 'found { gsub(/.*"Version": "|".*/, ""); print; exit } index($0, p) { found = 1 }'
}

K8S_VERSION="$(pin "${TOOLS}/k8s" k8s.io/kubernetes)"
ETCD_VERSION="$(pin "${TOOLS}/etcd" go.etcd.io/etcd/server/v3)"
KWOK_VERSION="$(pin "${TOOLS}/kwok" sigs.k8s.io/kwok)"
COREDNS_VERSION="$(pin "${TOOLS}/coredns" github.com/coredns/coredns)"
if [[ -z "${K8S_VERSION}" || -z "${ETCD_VERSION}" || -z "${KWOK_VERSION}" || -z "${COREDNS_VERSION}" ]]; then
	echo "cannot read pinned versions from ${TOOLS}/*/go.mod" >&2
	exit 1
fi

HASH="$(cd "${TOOLS}" && cat k8s/go.mod k8s/go.sum etcd/go.mod etcd/go.sum kwok/go.mod kwok/go.sum coredns/go.mod coredns/go.sum coredns/main.go | sha256sum | cut -c1-12)"
KEY="k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}-coredns-${COREDNS_VERSION}-${HASH}"
CACHE="${EDL_CACHE_DIR:-${HOME}/.cache/edl}"
BIN="${CACHE}/controlplane-${KEY}/bin"

complete() {
	local b
	for b in "${BINARIES[@]}"; do
		[[ -x "${BIN}/${b}" ]] || return 1
	done
}

case "${1:-}" in
--print-dir)
	echo "${BIN}"
	exit 0
	;;
--check)
	complete
	exit
	;;
"") ;;
*)
	echo "usage: $0 [--print-dir|--check]" >&2
	exit 2
	;;
esac

if complete; then
	echo "control plane binaries up to date in ${BIN}"
	echo "${BIN}"
	exit 0
fi

mkdir -p "${BIN}"
# Two builds of the same key (say, two test packages at once) would only
# waste time; the second waits for the first and then finds everything built.
if command -v flock >/dev/null; then
	exec 9>"${BIN}/../.build.lock"
	if ! flock -n 9; then
		echo "waiting for another build into ${BIN}"
		flock 9
	fi
	if complete; then
		echo "control plane binaries up to date in ${BIN}"
		echo "${BIN}"
		exit 0
	fi
fi

# The tools modules stand alone: no go.work, no cgo. Flags given on the command
# line win over GOFLAGS, the rest of GOFLAGS (-buildvcs=false, ...) is kept.
export GOWORK=off CGO_ENABLED=0
GO_BUILD=(go build -trimpath -buildvcs=false -mod=readonly)

START=${SECONDS}

# build runs one go build in the background and reports every 30 s, so a long
# compile is never silent; the binary appears under its name only when done.
build() { # name module-dir package ldflags
	local name=$1 dir=$2 pkg=$3 ldflags=$4 t0=${SECONDS} pid rc
	if [[ -x "${BIN}/${name}" ]]; then
		echo "  ${name}: already built"
		return
	fi
	echo "  ${name}: building ${pkg} ..."
	(cd "${dir}" && exec "${GO_BUILD[@]}" -ldflags "${ldflags}" -o "${BIN}/${name}.tmp" "${pkg}") &
	pid=$!
	while ! wait_for "${pid}" 30; do
		echo "  ${name}: still building ($((SECONDS - t0))s)"
	done
	rc=0
	wait "${pid}" || rc=$?
	if [[ ${rc} -ne 0 ]]; then
		rm -f "${BIN}/${name}.tmp"
		echo "  ${name}: build failed after $((SECONDS - t0))s" >&2
		exit "${rc}"
	fi
	mv -f "${BIN}/${name}.tmp" "${BIN}/${name}"
	echo "  ${name}: built in $((SECONDS - t0))s"
}

# wait_for returns 0 once pid has exited, 1 after secs if it still runs.
wait_for() { # pid secs
	local i
	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 1
	done
	! kill -0 "$1" 2>/dev/null
}

trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

echo "building control plane (kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}, coredns ${COREDNS_VERSION}) into ${BIN}"
for d in etcd kwok k8s coredns; do
	echo "  downloading the modules of hack/tools/${d} ..."
	(cd "${TOOLS}/${d}" && go mod download)
done

# The release's publication time as the build date keeps the build reproducible;
# go mod download above put the module's .info file, which holds it, in the cache.
K8S_BUILD_DATE="$(cd "${TOOLS}/k8s" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)"
K8S_MINOR="$(echo "${K8S_VERSION}" | cut -d. -f2)"
K8S_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	K8S_LDFLAGS+=" -X ${pkg}.gitVersion=${K8S_VERSION}"
	K8S_LDFLAGS+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${K8S_MINOR}"
	K8S_LDFLAGS+=" -X ${pkg}.gitCommit= -X ${pkg}.gitTreeState=clean"
	K8S_LDFLAGS+=" -X ${pkg}.buildDate=${K8S_BUILD_DATE:-1970-01-01T00:00:00Z}"
done

build etcd "${TOOLS}/etcd" go.etcd.io/etcd/server/v3 "-s -w"
build kwok "${TOOLS}/kwok" sigs.k8s.io/kwok/cmd/kwok "-s -w"
build kube-apiserver "${TOOLS}/k8s" k8s.io/kubernetes/cmd/kube-apiserver "${K8S_LDFLAGS}"
build kube-controller-manager "${TOOLS}/k8s" k8s.io/kubernetes/cmd/kube-controller-manager "${K8S_LDFLAGS}"
build kube-scheduler "${TOOLS}/k8s" k8s.io/kubernetes/cmd/kube-scheduler "${K8S_LDFLAGS}"
build kubectl "${TOOLS}/k8s" k8s.io/kubernetes/cmd/kubectl "${K8S_LDFLAGS}"
build kubelet "${TOOLS}/k8s" k8s.io/kubernetes/cmd/kubelet "${K8S_LDFLAGS}"
build kube-proxy "${TOOLS}/k8s" k8s.io/kubernetes/cmd/kube-proxy "${K8S_LDFLAGS}"
build coredns "${TOOLS}/coredns" . "-s -w -X github.com/coredns/coredns/coremain.GitCommit=${COREDNS_VERSION}"
echo "control plane built in $((SECONDS - START))s"
echo "${BIN}"
