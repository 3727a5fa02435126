// Command tracelive replays the first jobs of a Pollux workload on the
// local control plane under edl (package test/trace/live), once per
// policy, beside the simulator's run of the same jobs, and writes into
// -out summary.csv (a row per policy, live and simulated: the policy
// column reads fulfillment/live, fulfillment/simulated) and
// comparison.txt (each job's JCT, live and simulated).
//
//	EDL_CONTROLPLANE_BIN="$(hack/build-control-plane.sh --print-dir)" go run ./test/cmd/tracelive -edl bin/edl
//
// Its defaults are the full replay of make trace-live: the first 40 jobs
// of workload-1 at 60×, under fulfillment and goodput.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/paddlepaddle/edl/test/trace"
	"github.com/paddlepaddle/edl/test/trace/live"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "tracelive: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	d := live.Defaults()
	fs := flag.NewFlagSet("tracelive", flag.ContinueOnError)
	data := fs.String("data", filepath.Join("test", "trace", "testdata", "pollux"), "the Pollux trace (relative to the repository root by default)")
	workload := fs.String("workload", filepath.Join("workloads", "workload-1.csv"), "the workload file, under -data")
	jobs := fs.Int("jobs", 40, "the workload's first jobs to replay")
	policies := fs.String("policies", "fulfillment,goodput", "comma-separated: fulfillment, goodput")
	out := fs.String("out", filepath.Join("_output", "trace-live"), "directory for summary.csv, comparison.txt and the runs' logs")
	edl := fs.String("edl", "", "the edl binary (empty: build it)")
	fs.Float64Var(&d.Speed, "speed", d.Speed, "times faster than the trace")
	fs.DurationVar(&d.Interval, "interval", d.Interval, "edl's -autoscale_interval, wall time")
	fs.DurationVar(&d.RestartCost, "restart_cost", d.RestartCost, "a restart's cost, in the trace's time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *jobs < 1 {
		return fmt.Errorf("-jobs %d: at least 1", *jobs)
	}
	apps, err := trace.LoadApplications(filepath.Join(*data, "traces"))
	if err != nil {
		return err
	}
	w, err := trace.ReadWorkload(filepath.Join(*data, *workload), apps)
	if err != nil {
		return err
	}
	w = live.First(w, *jobs)
	w.Name = fmt.Sprintf("%s-first-%d", w.Name, len(w.Jobs))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var sums []trace.Summary
	var text strings.Builder
	for _, p := range strings.Split(*policies, ",") {
		o := d
		o.Workload, o.Policy, o.EDL, o.Dir, o.Progress = w, p, *edl, filepath.Join(*out, p), os.Stdout
		began := time.Now()
		fmt.Printf("replaying %d jobs of %s under %s at %g×\n", len(w.Jobs), w.Name, p, o.Speed)
		c, err := live.Compare(ctx, o)
		if err != nil {
			return err
		}
		fmt.Printf("%s(%s)\n\n", c, time.Since(began).Round(time.Second))
		text.WriteString(c.String() + "\n")
		l, s := trace.Summarize(c.Live), trace.Summarize(c.Sim)
		l.Policy, s.Policy = p+"/live", p+"/simulated"
		sums = append(sums, l, s)
	}
	if _, err := trace.WriteSummary(*out, sums); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "comparison.txt"), []byte(text.String()), 0o600)
}
