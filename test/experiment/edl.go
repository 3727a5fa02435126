package experiment

import (
	"fmt"
	"time"
)

// EDLStartup is how long the experiment and the demo watch a new edl
// before they go on: one that exits within it (a bad flag, no API server,
// no CRD) is an error.
const EDLStartup = 2 * time.Second

// EDLStopGrace is how long edl may take to exit after SIGTERM at the end of
// a run before it is killed.
const EDLStopGrace = 10 * time.Second

// EDLArgs are the flags an experiment runs edl with: the kubeconfig, the
// autoscale interval, and -dry_run when EDL is off. A single replica needs no
// leader election, and its HTTP server takes any free port, so that runs on
// one machine never collide on :8080. Everything else keeps edl's defaults
// (max_load_desired 0.97, cooldown 3 cycles).
func EDLArgs(kubeconfig string, interval time.Duration, mode Mode) []string {
	args := []string{"-kubeconfig", kubeconfig, "-autoscale_interval", interval.String(), "-log_level", "info",
		"-leader_elect=false", "-http_addr", "127.0.0.1:0"}
	if mode == Off {
		args = append(args, "-dry_run")
	}
	return args
}

// CompressedRates are kube-controller-manager's and kube-scheduler's flags
// that raise their client rates (--kube-api-qps, --kube-api-burst) from
// their defaults (20/30 and 50/100) by compression, the factor by which the
// run compresses time. Teams runs with them, and edl with
// -max_moves_per_second raised by the same factor: its figures are
// reclaim's times in autoscale intervals, and a reclaim is bounded by how
// many pods kube-controller-manager deletes and creates a second, a rate the
// compressed interval would otherwise shrink against. The other scenarios
// keep the defaults.
func CompressedRates(compression float64) (controllerManager, scheduler []string) {
	rate := func(qps, burst float64) []string {
		return []string{fmt.Sprintf("--kube-api-qps=%g", qps*compression), fmt.Sprintf("--kube-api-burst=%d", int(burst*compression))}
	}
	return rate(20, 30), rate(50, 100)
}
