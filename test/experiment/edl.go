package experiment

import "time"

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
