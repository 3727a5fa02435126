#!/usr/bin/env bash
# Starts, stops and inspects a standing local EDL cluster: a real control
# plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, all
# v1.36.3) with kwok fake nodes, run by test/cmd/localcluster in the
# background. No containers, no root.
#
# Usage:
#   hack/cluster.sh up      start the cluster (a no-op if it runs); prints the kubeconfig path
#   hack/cluster.sh down    stop it: SIGTERM, then SIGKILL after 30 s; no process is left
#                           (an edl that make demo started, DIR/edl.pid, is stopped first)
#   hack/cluster.sh status  say whether it runs and list its nodes; exit 1 if it does not run
#
# Environment (the Makefile's cluster-up / cluster-down pass these):
#   EDL_CACHE_DIR        cache root                      default $HOME/.cache/edl
#   EDL_CLUSTER_DIR      the cluster's directory         default $EDL_CACHE_DIR/cluster
#   EDL_NODES            number of nodes (node-0 ...)    default 3
#   EDL_NODE_CPU         CPU of each node                default 18
#   EDL_NODE_MEMORY      memory of each node             default 100Gi
#   EDL_NODE_GPU         nvidia.com/gpu of each node     default 0
#   EDL_NODE_PODS        pods per node                   default 110
#   EDL_REAL_NODES       real nodes beside them (0 or 1) default 0; 1 adds real-0: kubelet,
#                        containerd, kube-proxy and CoreDNS on this machine (root; installs
#                        Debian's containerd, runc, CNI plugins and iptables, builds and loads
#                        the images) and taints the kwok nodes kwok.x-k8s.io/node=fake:NoSchedule
#   EDL_CONTROLPLANE_BIN control plane binaries          default: built by hack/build-control-plane.sh
#
# Files in the cluster's directory:
#   kubeconfig          admin kubeconfig, present only while the cluster is up
#   localcluster.pid    the pid of test/cmd/localcluster
#   localcluster.log    its output; the components' logs are in state/logs/
#   state/              certificates, etcd data, logs (wiped at every up)
#   edl.pid, edl.log    the edl that make demo runs against the cluster (test/cmd/demo)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${EDL_CACHE_DIR:-${HOME}/.cache/edl}"
DIR="${EDL_CLUSTER_DIR:-${CACHE}/cluster}"
KUBECONFIG_FILE="${DIR}/kubeconfig"
PID_FILE="${DIR}/localcluster.pid"
EDL_PID_FILE="${DIR}/edl.pid"
LOG="${DIR}/localcluster.log"
START_TIMEOUT=300

pid() {
	[[ -f "${PID_FILE}" ]] && cat "${PID_FILE}"
}

# alive: the process exists and is not a zombie waiting to be reaped.
alive() {
	local state
	state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
	[[ -n "${state}" && "${state}" != Z* ]]
}

running() {
	local p
	p="$(pid)" || return 1
	[[ -n "${p}" ]] && alive "${p}"
}

bin_dir() {
	if [[ -n "${EDL_CONTROLPLANE_BIN:-}" ]]; then
		echo "${EDL_CONTROLPLANE_BIN}"
	else
		"${ROOT}/hack/build-control-plane.sh" --print-dir
	fi
}

kubectl() {
	"$(bin_dir)/kubectl" --kubeconfig "${KUBECONFIG_FILE}" "$@"
}

up() {
	if running; then
		echo "cluster already running (pid $(pid))"
		echo "kubeconfig: ${KUBECONFIG_FILE}"
		return
	fi
	mkdir -p "${DIR}"
	if [[ -z "${EDL_CONTROLPLANE_BIN:-}" ]]; then
		# A no-op when the binaries are there; a cold build takes minutes.
		"${ROOT}/hack/build-control-plane.sh" >&2
		EDL_CONTROLPLANE_BIN="$("${ROOT}/hack/build-control-plane.sh" --print-dir)"
	fi
	export EDL_CONTROLPLANE_BIN
	if [[ "${EDL_REAL_NODES:-0}" != 0 ]]; then
		"${ROOT}/hack/real-node-deps.sh" >&2
		"${ROOT}/hack/images.sh" build >&2
	fi
	echo "building test/cmd/localcluster"
	(cd "${ROOT}" && go build -o "${DIR}/localcluster" ./test/cmd/localcluster)

	rm -f "${KUBECONFIG_FILE}"
	echo "starting the cluster in ${DIR} (log: ${LOG})"
	# setsid: the cluster outlives this shell and its terminal's signals.
	setsid nohup "${DIR}/localcluster" \
		-dir "${DIR}" \
		-nodes "${EDL_NODES:-3}" \
		-node-cpu "${EDL_NODE_CPU:-18}" \
		-node-memory "${EDL_NODE_MEMORY:-100Gi}" \
		-node-gpu "${EDL_NODE_GPU:-0}" \
		-node-pods "${EDL_NODE_PODS:-110}" \
		-real-nodes "${EDL_REAL_NODES:-0}" \
		</dev/null >"${LOG}" 2>&1 &
	local child=$! t0=${SECONDS}
	# localcluster writes the kubeconfig once its nodes are Ready.
	until [[ -f "${KUBECONFIG_FILE}" ]]; do
		if ! alive "${child}"; then
			echo "the cluster failed to start; end of ${LOG}:" >&2
			tail -n 40 "${LOG}" >&2
			exit 1
		fi
		if ((SECONDS - t0 > START_TIMEOUT)); then
			echo "the cluster did not come up in ${START_TIMEOUT}s; stopping it. End of ${LOG}:" >&2
			tail -n 40 "${LOG}" >&2
			down >&2
			exit 1
		fi
		sleep 0.5
	done
	kubectl wait --for=condition=Ready nodes --all --timeout=120s >/dev/null
	echo "cluster up in $((SECONDS - t0))s (pid ${child})"
	kubectl get nodes
	echo "kubeconfig: ${KUBECONFIG_FILE}"
}

# stop_edl stops the edl that make demo started against the cluster, by the
# pid in its pid file, if that process still is an edl.
stop_edl() {
	local p i
	[[ -f "${EDL_PID_FILE}" ]] || return 0
	p="$(cat "${EDL_PID_FILE}")"
	if [[ -n "${p}" ]] && alive "${p}" && [[ "$(ps -o comm= -p "${p}" 2>/dev/null)" == edl* ]]; then
		echo "stopping edl (pid ${p})"
		kill -TERM "${p}" 2>/dev/null || true
		for ((i = 0; i < 20; i++)); do
			alive "${p}" || break
			sleep 0.5
		done
		if alive "${p}"; then
			echo "edl still running after 10s: SIGKILL"
			kill -KILL "${p}" 2>/dev/null || true
		fi
	fi
	rm -f "${EDL_PID_FILE}"
}

down() {
	local p
	stop_edl
	if ! running; then
		echo "cluster not running"
	else
		p="$(pid)"
		echo "stopping the cluster (pid ${p})"
		kill -TERM "${p}"
		local i
		for ((i = 0; i < 60; i++)); do
			alive "${p}" || break
			sleep 0.5
		done
		if alive "${p}"; then
			echo "still running after 30s: SIGKILL"
			# The components die with it: the kernel sends them SIGKILL when
			# their parent dies (Pdeathsig).
			kill -KILL "${p}" 2>/dev/null || true
			sleep 1
		fi
	fi
	# Whatever still runs with the cluster's state directory on its command
	# line belongs to it (a component orphaned by a crash); end it by pid.
	local left
	left="$(pgrep -f -- "${DIR}/state/" || true)"
	if [[ -n "${left}" ]]; then
		echo "killing leftover processes: ${left//$'\n'/ }"
		# shellcheck disable=SC2086
		kill -KILL ${left} 2>/dev/null || true
	fi
	# A real node's pods, mounts, interfaces and iptables rules outlive a
	# localcluster that was killed: clean them (a no-op when there are none).
	if [[ -x "${DIR}/localcluster" && -e /var/lib/edl-node && $(id -u) -eq 0 ]]; then
		"${DIR}/localcluster" -clean-real-node
	fi
	rm -f "${PID_FILE}" "${KUBECONFIG_FILE}"
}

status() {
	if ! running; then
		echo "cluster not running"
		return 1
	fi
	echo "cluster running (pid $(pid)), directory ${DIR}"
	echo "kubeconfig: ${KUBECONFIG_FILE}"
	if [[ -f "${EDL_PID_FILE}" ]] && alive "$(cat "${EDL_PID_FILE}")"; then
		echo "edl running (pid $(cat "${EDL_PID_FILE}")), log ${DIR}/edl.log"
	fi
	kubectl get nodes
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
