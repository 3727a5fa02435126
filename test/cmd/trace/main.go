// Command trace replays the Pollux trace's workloads through edl's planner
// (package test/trace) under each policy asked for, and writes into -out
// summary.csv (a row per workload and policy), jobs.csv (a row per job)
// and jct-<workload>.png (the distribution of the jobs' completion times,
// a line per policy).
//
//	go run ./test/cmd/trace -workloads test/trace/testdata/pollux/workloads/workload-1.csv -policies fulfillment,static -out /tmp/trace
//
// Without flags it runs workloads 1 to 5 at 1.0× and 2.0× load under every
// policy there is, from the copy of the trace in test/trace/testdata (run
// it from the repository's root, or give -data), into _output/trace.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/paddlepaddle/edl/test/trace"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// The planner allocates a plan's worth of short-lived values every
		// interval; collecting less often saves a third of the CPU.
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:]))
}

// run runs the command with its arguments and returns its exit code.
func run(args []string) int {
	if err := simulate(args); err != nil {
		fmt.Fprintf(os.Stderr, "trace: %v\n", err)
		return 1
	}
	return 0
}

// flags are the command's options.
type flags struct {
	data, workloads, policies, out string
	parallel                       int
	cfg                            trace.Config
}

func parseFlags(args []string) (flags, error) {
	def := trace.DefaultConfig()
	f := flags{cfg: def}
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.StringVar(&f.data, "data", filepath.Join("test", "trace", "testdata", "pollux"), "the Pollux trace: traces/<application>/ and the workloads directories (the default is relative to the repository root)")
	fs.StringVar(&f.workloads, "workloads", "", "comma-separated workload files (default: workload-1 to -5 of <data>/workloads and <data>/workloads-2.0)")
	fs.StringVar(&f.policies, "policies", strings.Join(trace.PolicyNames(), ","), "comma-separated policies: "+strings.Join(trace.PolicyNames(), ", "))
	fs.StringVar(&f.out, "out", filepath.Join("_output", "trace"), "directory for summary.csv, jobs.csv and the plots")
	fs.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "runs at once")
	fs.IntVar(&f.cfg.Nodes, "nodes", def.Nodes, "nodes in the cluster")
	fs.IntVar(&f.cfg.GPUsPerNode, "gpus_per_node", def.GPUsPerNode, "GPUs of each node")
	fs.DurationVar(&f.cfg.Interval, "interval", def.Interval, "time between two plans (edl's autoscaler interval)")
	fs.DurationVar(&f.cfg.RestartCost, "restart_cost", def.RestartCost, "time a job makes no progress after it starts and after each resize")
	scoring := fs.String("scoring", string(def.Scoring), "kube-scheduler's NodeResourcesFit scoring: MostAllocated (packs) or LeastAllocated (spreads)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch s := trace.Scoring(*scoring); s {
	case trace.MostAllocated, trace.LeastAllocated:
		f.cfg.Scoring = s
	default:
		return f, fmt.Errorf("-scoring %q: MostAllocated or LeastAllocated", *scoring)
	}
	if f.parallel < 1 {
		return f, fmt.Errorf("-parallel %d: at least 1", f.parallel)
	}
	return f, nil
}

// defaultWorkloads are workloads 1 to 5 at 1.0× and 2.0× load.
func defaultWorkloads(data string) []string {
	var out []string
	for _, dir := range []string{"workloads", "workloads-2.0"} {
		for i := 1; i <= 5; i++ {
			out = append(out, filepath.Join(data, dir, fmt.Sprintf("workload-%d.csv", i)))
		}
	}
	return out
}

func simulate(args []string) error {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	policies, err := trace.LookupPolicies(split(f.policies), f.cfg.Nodes*f.cfg.GPUsPerNode)
	if err != nil {
		return err
	}
	workloads, err := readWorkloads(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	began := time.Now()
	runs, err := runAll(f, workloads, policies)
	if err != nil {
		return err
	}
	return write(f.out, runs, time.Since(began))
}

// readWorkloads reads the applications and the workloads of -workloads,
// or the default ones; two workloads of one name are an error.
func readWorkloads(f flags) ([]trace.Workload, error) {
	apps, err := trace.LoadApplications(filepath.Join(f.data, "traces"))
	if err != nil {
		return nil, err
	}
	paths := split(f.workloads)
	if len(paths) == 0 {
		paths = defaultWorkloads(f.data)
	}
	var workloads []trace.Workload
	seen := map[string]string{}
	for _, p := range paths {
		w, err := trace.ReadWorkload(p, apps)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[w.Name]; dup {
			return nil, fmt.Errorf("workloads %s and %s are both named %s in the results", other, p, w.Name)
		}
		seen[w.Name] = p
		workloads = append(workloads, w)
	}
	return workloads, nil
}

// runAll runs every workload under every policy, f.parallel at once, and
// returns the results by workload, then policy, in the order given.
func runAll(f flags, workloads []trace.Workload, policies []trace.Policy) ([]*trace.Result, error) {
	runs := make([]*trace.Result, len(workloads)*len(policies))
	// The largest workloads first, so that no long run is left to the end
	// alone.
	order := make([]int, len(workloads))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(workloads[b].Jobs), len(workloads[a].Jobs)) })
	var g errgroup.Group
	g.SetLimit(f.parallel)
	for _, i := range order {
		for k, p := range policies {
			w := workloads[i]
			g.Go(func() error {
				began := time.Now()
				r, err := trace.Run(f.cfg, w, p)
				if err != nil {
					return err
				}
				runs[i*len(policies)+k] = r
				fmt.Printf("%-18s %-12s %4d jobs, %6d plans, %s\n", w.Name, p.Name, len(r.Jobs), r.Plans, time.Since(began).Round(time.Millisecond))
				return nil
			})
		}
	}
	return runs, g.Wait()
}

// write writes the results and prints the summary.
func write(out string, runs []*trace.Result, wall time.Duration) error {
	sums := make([]trace.Summary, len(runs))
	for i, r := range runs {
		sums[i] = trace.Summarize(r)
	}
	summary, err := trace.WriteSummary(out, sums)
	if err != nil {
		return err
	}
	jobs, err := trace.WriteJobs(out, runs)
	if err != nil {
		return err
	}
	plots, err := trace.PlotJCT(out, runs)
	if err != nil {
		return err
	}
	fmt.Printf("\n%-18s %-12s %9s %9s %9s %9s %6s %8s\n", "workload", "policy", "avg_jct", "p50_jct", "p99_jct", "makespan", "util", "resize/h")
	for _, s := range sums {
		fmt.Printf("%-18s %-12s %9.0f %9.0f %9.0f %9.0f %6.3f %8.3f\n", s.Workload, s.Policy, s.AvgJCT, s.P50JCT, s.P99JCT,
			s.Makespan, s.Utilization, s.ResizesPerJobHour)
	}
	fmt.Printf("\n%d runs in %s; %s, %s and %d plots in %s\n", len(runs), wall.Round(time.Millisecond), filepath.Base(summary),
		filepath.Base(jobs), len(plots), out)
	return nil
}

// split is the comma-separated items of s, trimmed, without empty ones.
func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
