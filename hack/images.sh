#!/usr/bin/env bash
# Images without a registry: builds the images a real node runs as OCI
# archives in a cache outside the repository, and imports them into a
# containerd. `make images` runs `hack/images.sh` (build, then load when a
# containerd is up).
#
#   hack/images.sh [all]          build every archive; load them if a containerd is up
#   hack/images.sh build          build every archive (each only when its inputs changed)
#   hack/images.sh load [SOCKET]  import every archive into the containerd at SOCKET
#                                 (default: $EDL_CONTAINERD_SOCK or /run/containerd/containerd.sock),
#                                 namespace k8s.io, the one the CRI (and so kubelet) reads
#   hack/images.sh rootfs         build the trainer's Debian rootfs only; prints its path
#   hack/images.sh test-trainer   run example/torch/train.py under torchrun, 2 processes,
#                                 3 epochs, in a chroot of that rootfs (root)
#   hack/images.sh names          print "<archive> <image name>" for each image
#
# The archives, one per image, in ${EDL_CACHE_DIR:-$HOME/.cache/edl}/images:
#   edl-controller.oci.tar      docker.io/paddlepaddle/edl-controller:<VERSION>
#                               (what the manifests run: kustomization.yaml's newTag is VERSION)
#   pause.oci.tar               registry.k8s.io/pause:3.10.2 (containerd's sandbox_image; the release of the pinned k8s.io/kubernetes build/pause)
#   edl-torch-example.oci.tar   docker.io/paddlepaddle/edl-torch-example:<VERSION>
# `load` imports every *.oci.tar there, so an image another script writes
# there with hack/images (e.g. CoreDNS) is loaded too.
#
# The archives are written by hack/images, a Go program on
# github.com/google/go-containerregistry (see its doc comment for why).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${EDL_CACHE_DIR:-${HOME}/.cache/edl}"
DIR="${CACHE}/images"
RELEASE="$(cat "${ROOT}/VERSION")"
SOCK_DEFAULT="${EDL_CONTAINERD_SOCK:-/run/containerd/containerd.sock}"

EDL_IMAGE="docker.io/paddlepaddle/edl-controller:${RELEASE}"
PAUSE_IMAGE="registry.k8s.io/pause:3.10.2"
TRAINER_IMAGE="docker.io/paddlepaddle/edl-torch-example:${RELEASE}"

# The trainer's rootfs: Debian 13 for python3-torch 2.6 (torchrun's
# --local-addr; Debian 12 has 1.13). Only these packages and their hard
# dependencies; no recommends, no docs, man pages or locales.
SUITE=trixie
# The Debian archive is the one this machine's apt uses (its first URI),
# so that the rootfs comes from where every other package here comes from.
host_mirror() {
	local uri
	uri="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
	[[ -n "${uri}" ]] || uri="$(awk '$1 == "deb" && $2 !~ /^\[/ {print $2; exit} $1 == "deb" {print $3; exit}' /etc/apt/sources.list 2>/dev/null || true)"
	echo "${uri}"
}
MIRROR="${EDL_DEBIAN_MIRROR:-$(host_mirror)}"
PACKAGES=python3,python3-torch
MMDEBSTRAP_ARGS=(
	--variant=minbase
	--include="${PACKAGES}"
	--aptopt='APT::Install-Recommends "false"'
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/info/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-include=/usr/share/locale/locale.alias'
	# The host's resolv.conf and hostname, which mmdebstrap copies in, are
	# the runtime's to provide; logs and the old copies of dpkg's state are
	# of no use in an image.
	--customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname" "$1"/var/lib/dpkg/*-old "$1"/var/cache/debconf/*-old; find "$1/var/log" -type f -delete'
)
# The rootfs is keyed by its recipe: a change of suite, mirror or package
# list builds a new one; otherwise it is built once.
ROOTFS_KEY="$(printf '%s\n' "${SUITE}" "${MIRROR}" "${MMDEBSTRAP_ARGS[@]}" | sha256sum | cut -c1-12)"
ROOTFS="${DIR}/rootfs/${SUITE}-${ROOTFS_KEY}.tar.gz"

log() { echo "==> $*"; }

# need installs Debian packages a step needs when its command is missing.
need() { # command package...
	command -v "$1" >/dev/null && return
	local cmd="$1"
	shift
	echo "installing $* (apt-get, for ${cmd})"
	if [[ ${EUID} -ne 0 ]]; then
		echo "${cmd} is missing and installing it needs root: apt-get install $*" >&2
		exit 1
	fi
	# Another apt-get may hold the lock (a parallel script): wait for it. A
	# new machine's package lists may be missing or old: read them first.
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@" >/dev/null
}

build_rootfs() {
	if [[ -s "${ROOTFS}" ]]; then
		return
	fi
	if [[ ${EUID} -ne 0 ]]; then
		echo "building the trainer's rootfs (mmdebstrap) needs root" >&2
		exit 1
	fi
	need mmdebstrap mmdebstrap
	mkdir -p "$(dirname "${ROOTFS}")"
	log "building the trainer's rootfs: Debian ${SUITE} minbase + ${PACKAGES} (mmdebstrap, once, into ${ROOTFS})"
	local start=${SECONDS} tmp="${ROOTFS}.tmp"
	# Device nodes are left out (the runtime mounts /dev), so the layer
	# unpacks without CAP_MKNOD.
	mmdebstrap --quiet "${MMDEBSTRAP_ARGS[@]}" \
		"${SUITE}" - "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${MIRROR} ${SUITE} main" |
		mmtarfilter --path-exclude='/dev/*' | gzip -n >"${tmp}"
	mv "${tmp}" "${ROOTFS}"
	log "rootfs built in $((SECONDS - start)) s: $(du -h "${ROOTFS}" | cut -f1) compressed"
}

# pause_source prints the directory of the k8s.io/kubernetes module that
# hack/tools/k8s pins (the control plane's), which holds build/pause.
pause_source() {
	(cd "${ROOT}/hack/tools/k8s" && GOWORK=off go mod download k8s.io/kubernetes &&
		GOWORK=off go list -m -f '{{.Dir}}' k8s.io/kubernetes)
}

# pause_tag is the pause release of that module's build/pause/Makefile.
pause_tag() {
	awk '$1 == "TAG" && $2 == "?=" { print $3; exit }' "$1/build/pause/Makefile"
}

build() {
	local bld="${DIR}/build" start
	mkdir -p "${bld}"
	log "building the image builder (hack/images)"
	(cd "${ROOT}" && go build -o "${bld}/images" ./hack/images)

	# 1. The controller, as the Dockerfile makes it: hack/build.sh's static
	# edl on a distroless-like static:nonroot (passwd and group with 65532,
	# /tmp, the CA certificates), user 65532, the same entrypoint and cmd.
	start=${SECONDS}
	log "building edl ${RELEASE} (hack/build.sh)"
	"${ROOT}/hack/build.sh" "${bld}/edl" "${RELEASE}"
	"${bld}/images" -out "${DIR}/edl-controller.oci.tar" -name "${EDL_IMAGE}" \
		-file "${bld}/edl:/usr/local/bin/edl:0755" -nonroot -ca-certs /etc/ssl/certs/ca-certificates.crt \
		-user 65532:65532 -entrypoint '["/usr/local/bin/edl"]' -cmd '["-log_level","info"]'
	log "edl-controller: $((SECONDS - start)) s, $(du -h "${DIR}/edl-controller.oci.tar" | cut -f1)"

	# 2. pause, as Kubernetes builds it (build/pause: gcc -Os -static, USER
	# 65535:65535, ENTRYPOINT /pause on scratch).
	local src tag
	need gcc gcc libc6-dev
	src="$(pause_source)"
	tag="$(pause_tag "${src}")"
	if [[ "registry.k8s.io/pause:${tag}" != "${PAUSE_IMAGE}" ]]; then
		echo "the k8s.io/kubernetes module builds pause ${tag}; set PAUSE_IMAGE in $0 to registry.k8s.io/pause:${tag}" >&2
		exit 1
	fi
	gcc -Os -Wall -Werror -static -DVERSION="v${tag}-edl" -o "${bld}/pause" "${src}/build/pause/linux/pause.c"
	"${bld}/images" -out "${DIR}/pause.oci.tar" -name "${PAUSE_IMAGE}" \
		-file "${bld}/pause:/pause:0755" -user 65535:65535 -entrypoint '["/pause"]'

	# 3. The example trainer: the Debian rootfs, example/torch/train.py, the
	# shell stand-in for the PaddlePaddle launcher (example/paddle_k8s),
	# edl_libuv_off (Debian's torch lacks libuv, which torchrun's stores ask
	# for: see example/torch/edl_libuv_off.py), and the progress helper
	# edl_progress (example/edl_progress.py), importable by any python3.
	build_rootfs
	start=${SECONDS}
	local torch="${ROOT}/example/torch" site=/usr/lib/python3/dist-packages
	"${bld}/images" -out "${DIR}/edl-torch-example.oci.tar" -name "${TRAINER_IMAGE}" -base "${ROOTFS}" \
		-file "${torch}/train.py:/workspace/train.py:0644" \
		-file "${ROOT}/example/paddle_k8s:/usr/local/bin/paddle_k8s:0755" \
		-file "${torch}/edl_libuv_off.py:${site}/edl_libuv_off.py:0644" \
		-file "${torch}/edl_libuv_off.pth:${site}/edl_libuv_off.pth:0644" \
		-file "${ROOT}/example/edl_progress.py:${site}/edl_progress.py:0644" \
		-workdir /workspace -env PYTHONUNBUFFERED=1 -env USE_LIBUV=0 -cmd '["python3","/workspace/train.py"]'
	log "edl-torch-example: $((SECONDS - start)) s, $(du -h "${DIR}/edl-torch-example.oci.tar" | cut -f1)"
}

# load imports every archive into the containerd at $1, namespace k8s.io.
load() {
	local sock="${1:-${SOCK_DEFAULT}}" a n=0
	if [[ ! -S "${sock}" ]]; then
		echo "no containerd socket at ${sock}" >&2
		exit 1
	fi
	command -v ctr >/dev/null || need ctr containerd
	for a in "${DIR}"/*.oci.tar; do
		[[ -e "${a}" ]] || continue
		log "importing $(basename "${a}") into ${sock}"
		ctr --address "${sock}" -n k8s.io images import --all-platforms "${a}"
		n=$((n + 1))
	done
	if ((n == 0)); then
		echo "no archives in ${DIR}: run $0 build first" >&2
		exit 1
	fi
}

# test_trainer runs train.py under torchrun in a chroot of the rootfs, in
# namespaces of its own (mount, pid) so /proc and /dev go away with it.
test_trainer() {
	build_rootfs
	local tmp
	tmp="$(mktemp -d /tmp/edl-trainer.XXXXXX)"
	# shellcheck disable=SC2064
	trap "rm -rf --one-file-system '${tmp}'" EXIT
	tar -xzf "${ROOTFS}" -C "${tmp}" --numeric-owner
	mkdir -p "${tmp}/workspace"
	cp "${ROOT}/example/torch/train.py" "${tmp}/workspace/train.py"
	cp "${ROOT}"/example/torch/edl_libuv_off.{py,pth} "${ROOT}/example/edl_progress.py" "${tmp}/usr/lib/python3/dist-packages/"
	unshare --mount --pid --fork --propagation private sh -ec '
		mount -t proc proc "$1/proc"
		mount --rbind /dev "$1/dev"
		root="$1"
		run() { chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root GLOO_SOCKET_IFNAME=lo USE_LIBUV=0 EDL_CHECKPOINT_DIR=/tmp/ckpt "$@"; }
		echo "--- torchrun, 2 processes, epochs 1-3"
		run EDL_EPOCHS=3 python3 -m torch.distributed.run --nnodes=1 --nproc-per-node=2 /workspace/train.py
		echo "--- again, 1 process, to epoch 5: resumes from the checkpoint"
		run EDL_EPOCHS=5 python3 -m torch.distributed.run --nnodes=1 --nproc-per-node=1 /workspace/train.py
	' sh "${tmp}"
}

names() {
	echo "${DIR}/edl-controller.oci.tar ${EDL_IMAGE}"
	echo "${DIR}/pause.oci.tar ${PAUSE_IMAGE}"
	echo "${DIR}/edl-torch-example.oci.tar ${TRAINER_IMAGE}"
}

case "${1:-all}" in
all)
	build
	if [[ -S "${SOCK_DEFAULT}" ]]; then
		load "${SOCK_DEFAULT}"
	else
		echo "no container runtime up (no containerd socket at ${SOCK_DEFAULT}): the archives in ${DIR} are ready to import (hack/images.sh load SOCKET)"
	fi
	;;
build) build ;;
load) load "${2:-}" ;;
rootfs)
	build_rootfs
	echo "${ROOTFS}"
	;;
test-trainer)
	shift
	test_trainer
	;;
names) names ;;
*)
	echo "usage: $0 [all|build|load [SOCKET]|rootfs|test-trainer|names]" >&2
	exit 2
	;;
esac
