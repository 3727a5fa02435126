package live

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/paddlepaddle/edl/test/trace"
)

// First is the workload's first n jobs by arrival.
func First(w trace.Workload, n int) trace.Workload {
	jobs := append([]trace.JobSpec(nil), w.Jobs...)
	slices.SortStableFunc(jobs, func(a, b trace.JobSpec) int { return cmp.Compare(a.Arrival, b.Arrival) })
	w.Jobs = jobs[:min(n, len(jobs))]
	return w
}

// Comparison is a replay beside the simulator's run of the same jobs.
type Comparison struct {
	Live, Sim       *trace.Result
	LiveAvg, SimAvg float64
}

// Compare replays o and simulates the same jobs under the same policy,
// interval and restart cost.
func Compare(ctx context.Context, o Options) (*Comparison, error) {
	policies, err := trace.LookupPolicies([]string{o.Policy}, nodes*gpusPerNode)
	if err != nil {
		return nil, err
	}
	sim, err := trace.Run(SimConfig(o), o.Workload, policies[0])
	if err != nil {
		return nil, err
	}
	live, err := Run(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Comparison{Live: live, Sim: sim, LiveAvg: trace.Summarize(live).AvgJCT, SimAvg: trace.Summarize(sim).AvgJCT}, nil
}

// String is the comparison's table: each job's JCT and resizes, live and
// simulated, and the averages.
func (c *Comparison) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s under %s: average JCT live %.0f s, simulated %.0f s (%+.1f%%)\n", c.Live.Workload, c.Live.Policy,
		c.LiveAvg, c.SimAvg, 100*(c.LiveAvg/c.SimAvg-1))
	fmt.Fprintf(&b, "%-16s %10s %10s %8s %8s\n", "job", "live JCT", "sim JCT", "resizes", "(sim)")
	for i, j := range c.Live.Jobs {
		s := c.Sim.Jobs[i]
		fmt.Fprintf(&b, "%-16s %10.0f %10.0f %8d %8d\n", j.Name, j.JCT(), s.JCT(), j.Resizes, s.Resizes)
	}
	return b.String()
}
