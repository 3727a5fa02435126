#!/usr/bin/env bash
# Installs what a real node needs from Debian's packages, as root: containerd
# 1.6 and runc (the CRI runtime kubelet v1.36 talks to), the CNI plugins
# (bridge, host-local, loopback), iptables (kube-proxy's Services) and
# conntrack. A no-op when all are there.
#
# Why Debian's containerd 1.6 rather than a 2.x built from the Go module
# proxy: kubelet v1.36.3 runs with it (it logs once that the runtime lacks
# RuntimeConfig and keeps its own cgroup driver), it installs in seconds and
# needs no build; 2.x is the way out if a later kubelet refuses 1.x.
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2)
FILES=(/usr/bin/containerd /usr/sbin/runc /usr/lib/cni/bridge /usr/sbin/iptables /usr/sbin/conntrack /usr/sbin/ip)

missing=0
for f in "${FILES[@]}"; do
	[[ -e "${f}" ]] || missing=1
done
if [[ ${missing} -eq 0 ]]; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "a real node needs root to install ${PACKAGES[*]}" >&2
	exit 1
fi
echo "installing ${PACKAGES[*]} from Debian's packages for the real node"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
