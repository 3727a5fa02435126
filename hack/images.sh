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
#   pause.oci.tar               registry.k8s.io/pause:3.10 (containerd's sandbox_image)
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
PAUSE_IMAGE="registry.k8s.io/pause:3.10"
TRAINER_IMAGE="docker.io/paddlepaddle/edl-torch-example:${RELEASE}"

# The trainer's rootfs: Debian 13 for python3-torch 2.6 (torchrun's
# --local-addr; Debian 12 has 1.13). Only these packages and their hard
# dependencies; no recommends, no docs, man pages or locales.
SUITE=trixie
MIRROR="${EDL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
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
	# Another apt-get may hold the lock (a parallel script): wait for it.
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

case "${1:-all}" in
rootfs)
	build_rootfs
	echo "${ROOTFS}"
	;;
*)
	echo "usage: $0 [all|build|load [SOCKET]|rootfs|test-trainer|names]" >&2
	exit 2
	;;
esac
