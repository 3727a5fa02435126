package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Summary is the means of one run over its window.
type Summary struct {
	Scenario Scenario
	Variant  Variant
	// Samples in the window, and the window's length.
	Samples int
	Window  time.Duration
	// MeanUtilization and the means of the bounds average the samples in
	// the window.
	MeanUtilization, MeanIdeal, MeanIdealAround, MeanIdealTrainers float64
	// MeanIdealFixed averages the bound of what EDL cannot influence
	// (Sample.IdealFixed); FixedDerived says it was derived, an upper bound.
	MeanIdealFixed float64
	FixedDerived   bool
	// MeanUseful averages the useful utilization (Sample.Useful): the
	// utilization less what the jobs not Running hold.
	MeanUseful float64
	// MeanHeldWaiting averages the share of the allocatable CPU that the
	// Running pods of jobs not Running hold, MostHeldWaiting its highest
	// sample; MeanHeldByRole splits the mean by the pods' role (derived
	// for a Result read back without the split: HeldDerived).
	MeanHeldWaiting, MostHeldWaiting float64
	MeanHeldByRole                   RoleShare
	HeldDerived                      bool

	// Jobs submitted; NeverRunning of them never reached phase Running.
	Jobs, NeverRunning int
	// MeanPending averages, over the jobs, the time from submission to phase
	// Running; a job that never ran counts until the end of the run (so the
	// mean is a lower bound when NeverRunning > 0). MeanFirstTrainer is the
	// same up to the first trainer Running.
	MeanPending, MeanFirstTrainer time.Duration

	// WebPods created in the window and how long they waited for a node:
	// created → Running, or until the end for one still pending. Pods
	// deleted before they ran (a scale-down) are left out; WebDropped counts
	// them.
	WebPods, WebDropped    int
	WebP50, WebP95, WebMax time.Duration
	// WebMostPending is the most web pods pending in one sample.
	WebMostPending int
	// MeanTrainers averages the Running trainers over the window.
	MeanTrainers float64
	// Scalings counts edl's trainer scalings over the whole run.
	Scalings int
	// WebAdded and TrainersStoppedForWeb are the Result's: the web pods the
	// up-steps added and the Running trainers stopped while they did.
	WebAdded, TrainersStoppedForWeb int

	// Pools are the node pools' means over the window, and the waits of
	// the trainers EDL's growth added to the jobs of each, over the whole
	// run; none without pools.
	Pools []PoolSummary
	// Growth is the same waits over every pool, or the whole cluster.
	Growth GrowthSummary
	// RegrowLags are, per web down-step, how long the trainers took to
	// grow into the room it left (regrowLags).
	RegrowLags []time.Duration
	// Teams is what a Teams run measured of the teams' shares.
	Teams TeamsSummary
	// Interval is the run's autoscale interval.
	Interval time.Duration
}

// RoleShare is a share of the allocatable CPU split by the role of the pods
// that hold it.
type RoleShare struct {
	Master, Pserver, Trainer float64
}

// PoolSummary is one pool's figures in a Summary.
type PoolSummary struct {
	Name     string
	Resource Resource
	// MeanUtilization, MeanUseful and the means of the bounds average the
	// pool's utilization of its Resource, useful utilization and packing
	// bounds over the window's samples.
	MeanUtilization, MeanUseful, MeanIdeal, MeanIdealAround, MeanIdealTrainers, MeanIdealFixed float64
	Growth                                                                                     GrowthSummary
}

// GrowthSummary is how long the trainer pods EDL's growth added waited for
// a node.
type GrowthSummary struct {
	// Trainers counts the pods; Late those that waited longer than one
	// autoscale interval.
	Trainers, Late int
	// Pending is the sum of their waits (a pod still waiting counts until
	// the end), Longest the longest.
	Pending, Longest time.Duration
}

// add counts one pod that waited d.
func (g *GrowthSummary) add(d, interval time.Duration) {
	g.Trainers++
	g.Pending += d
	g.Longest = max(g.Longest, d)
	if d > interval {
		g.Late++
	}
}

// summarizePools averages each pool's utilization and bound over the
// samples from start on, and sums the growth waits of its jobs' trainers.
func summarizePools(samples []Sample, start time.Duration, growth []TrainerWait, end, interval time.Duration) []PoolSummary {
	var out []PoolSummary
	index := map[string]int{}
	counts := map[string]int{}
	for _, x := range samples {
		if x.At < start {
			continue
		}
		for _, p := range x.Pools {
			i, ok := index[p.Name]
			if !ok {
				i = len(out)
				index[p.Name] = i
				out = append(out, PoolSummary{Name: p.Name, Resource: p.Resource()})
			}
			out[i].MeanUtilization += p.Utilization()
			out[i].MeanUseful += p.Useful()
			out[i].MeanIdeal += p.Ideal
			out[i].MeanIdealAround += p.IdealAround
			out[i].MeanIdealTrainers += p.IdealTrainers
			out[i].MeanIdealFixed += p.IdealFixed
			counts[p.Name]++
		}
	}
	for i := range out {
		n := float64(counts[out[i].Name])
		out[i].MeanUtilization /= n
		out[i].MeanUseful /= n
		out[i].MeanIdeal /= n
		out[i].MeanIdealAround /= n
		out[i].MeanIdealTrainers /= n
		out[i].MeanIdealFixed /= n
	}
	for _, w := range growth {
		if i, ok := index[w.Pool]; ok {
			out[i].Growth.add(w.Wait(end), interval)
		}
	}
	slices.SortFunc(out, func(a, b PoolSummary) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Summarize computes a run's Summary.
func Summarize(r *Result) Summary {
	s := Summary{Scenario: r.Scenario, Variant: r.Variant, Scalings: r.Scalings, WebAdded: r.WebAdded, TrainersStoppedForWeb: r.TrainersStoppedForWeb,
		HeldDerived: r.HeldDerived, FixedDerived: r.FixedDerived, Interval: r.Size.Interval}
	if r.Scenario == Teams {
		s.Teams = SummarizeTeams(r)
	}
	var util, useful, ideal, around, forTrainers, fixed, trainers, held float64
	var byRole RoleShare
	for _, x := range r.Samples {
		if x.At < r.WindowStart {
			continue
		}
		s.Samples++
		util += x.Utilization
		useful += x.Useful()
		if alloc := float64(x.CPUAllocMilli); alloc > 0 {
			h := float64(x.CPUHeldWaitingMilli) / alloc
			held += h
			s.MostHeldWaiting = max(s.MostHeldWaiting, h)
			byRole.Master += float64(x.HeldWaiting.Master) / alloc
			byRole.Pserver += float64(x.HeldWaiting.Pserver) / alloc
			byRole.Trainer += float64(x.HeldWaiting.Trainer) / alloc
		}
		ideal += x.Ideal
		around += x.IdealAround
		forTrainers += x.IdealTrainers
		fixed += x.IdealFixed
		trainers += float64(x.RunningTrainers)
		s.WebMostPending = max(s.WebMostPending, x.WebPending)
	}
	if s.Samples > 0 {
		n := float64(s.Samples)
		s.MeanUtilization, s.MeanIdeal, s.MeanTrainers = util/n, ideal/n, trainers/n
		s.MeanHeldWaiting, s.MeanIdealAround, s.MeanIdealTrainers = held/n, around/n, forTrainers/n
		s.MeanUseful, s.MeanIdealFixed = useful/n, fixed/n
		s.MeanHeldByRole = RoleShare{Master: byRole.Master / n, Pserver: byRole.Pserver / n, Trainer: byRole.Trainer / n}
	}
	s.Window = r.End - r.WindowStart

	var pending, first time.Duration
	for _, j := range r.Jobs {
		s.Jobs++
		if j.Running >= 0 {
			pending += j.Running - j.Submitted
		} else {
			s.NeverRunning++
			pending += r.End - j.Submitted
		}
		if j.FirstTrainer >= 0 {
			first += j.FirstTrainer - j.Submitted
		} else {
			first += r.End - j.Submitted
		}
	}
	if s.Jobs > 0 {
		s.MeanPending = pending / time.Duration(s.Jobs)
		s.MeanFirstTrainer = first / time.Duration(s.Jobs)
	}

	var waits []time.Duration
	for _, w := range r.Web {
		if w.Created < r.WindowStart {
			continue
		}
		switch {
		case w.Running >= 0:
			waits = append(waits, w.Running-w.Created)
		case w.Deleted >= 0:
			s.WebDropped++
		default:
			waits = append(waits, r.End-w.Created)
		}
	}
	s.WebPods = len(waits)
	if len(waits) > 0 {
		slices.Sort(waits)
		s.WebP50, s.WebP95, s.WebMax = percentile(waits, 50), percentile(waits, 95), waits[len(waits)-1]
	}

	s.RegrowLags = regrowLags(r.Samples, r.Steps)
	s.Pools = summarizePools(r.Samples, r.WindowStart, r.Growth, r.End, r.Size.Interval)
	for _, w := range r.Growth {
		s.Growth.add(w.Wait(r.End), r.Size.Interval)
	}
	return s
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Published are the original report's figures for one scenario.
type Published struct {
	UtilizationOn, UtilizationOff string
	PendingOn, PendingOff         string
	NeverRunningOff               string
}

// Original are the figures of the original EDL report (133 nodes, 2,348
// cores; see the report in the repository's history).
var Original = map[Scenario]Published{
	Training: {UtilizationOn: "≈76%", UtilizationOff: "≈76%", PendingOn: "42.9 s", PendingOff: "280.5 s", NeverRunningOff: "14 of 20"},
	Shared:   {UtilizationOn: "83.4% (blog: ≈90%)", UtilizationOff: "61.9%"},
}

// Table renders the Markdown table of one scenario: one column per run,
// then the original's figures. Each run's ideal bound is a row: the demand,
// and so the bound, differs between EDL on and off in Shared.
func Table(scenario Scenario, runs []Summary) string {
	orig, hasOrig := Original[scenario]
	var b strings.Builder
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	secs := func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
	row := func(name string, f func(Summary) string, origOn, origOff string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, r := range runs {
			fmt.Fprintf(&b, " %s |", f(r))
		}
		if hasOrig {
			fmt.Fprintf(&b, " %s | %s |", origOn, origOff)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| %s |", scenario)
	for _, r := range runs {
		fmt.Fprintf(&b, " %s |", r.Variant.Label())
	}
	if hasOrig {
		b.WriteString(" original, EDL on | original, EDL off |")
	}
	b.WriteString("\n|---|")
	for range runs {
		b.WriteString("---|")
	}
	if hasOrig {
		b.WriteString("---|---|")
	}
	b.WriteString("\n")
	if scenario == Pools {
		poolRows(runs, row, pct)
	} else {
		row(UsefulRow, func(s Summary) string { return pct(s.MeanUseful) }, "—", "—")
		row("mean CPU allocation utilization", func(s Summary) string { return pct(s.MeanUtilization) }, orig.UtilizationOn, orig.UtilizationOff)
		row("ideal bound (mean)", func(s Summary) string { return pct(s.MeanIdeal) }, "—", "—")
		if scenario == Shared {
			row(FixedRow, func(s Summary) string { return derived(pct(s.MeanIdealFixed), s.FixedDerived) }, "—", "—")
			row(aroundRow, func(s Summary) string { return pct(s.MeanIdealAround) }, "—", "—")
		}
		row(trainersRow, func(s Summary) string { return pct(s.MeanIdealTrainers) }, "—", "—")
	}
	switch scenario {
	case Training:
		row("mean job pending time (submission → phase Running)", func(s Summary) string { return secs(s.MeanPending) }, orig.PendingOn, orig.PendingOff)
		row("mean time to the first trainer Running", func(s Summary) string { return secs(s.MeanFirstTrainer) }, "—", "—")
		row("jobs never Running", func(s Summary) string { return fmt.Sprintf("%d of %d", s.NeverRunning, s.Jobs) }, "0", orig.NeverRunningOff)
	case Teams:
		teamRows(runs, row, pct)
	case Shared, Pools:
		row("web pod pending time p50 / p95 (max)", func(s Summary) string {
			return fmt.Sprintf("%.1f s / %.1f s (%.1f s; %d pods)", s.WebP50.Seconds(), s.WebP95.Seconds(), s.WebMax.Seconds(), s.WebPods)
		}, "—", "—")
		row("most web pods pending at once", func(s Summary) string { return strconv.Itoa(s.WebMostPending) }, "—", "—")
		row("mean trainers Running", func(s Summary) string { return fmt.Sprintf("%.0f", s.MeanTrainers) }, "—", "—")
		row(fmt.Sprintf("Running trainers stopped per web pod the up-steps added (CPU alone needs %.1f)", float64(WebSize.cpuMilli())/float64(TrainerSize.cpuMilli())),
			stoppedPerWebPod, "—", "—")
		row(fmt.Sprintf("regrowth after each web down-step (until %.0f%% of the trainers it let grow ran; to the sample)", 100*RegrowShare),
			func(s Summary) string { return lags(s.RegrowLags) }, "—", "—")
	}
	row(HeldRow, func(s Summary) string { return pct(s.MeanHeldWaiting) + " / " + pct(s.MostHeldWaiting) }, "—", "—")
	row(HeldByRoleRow, func(s Summary) string {
		split := pct(s.MeanHeldByRole.Master) + " / " + pct(s.MeanHeldByRole.Pserver) + " / " + pct(s.MeanHeldByRole.Trainer)
		return derived(split, s.HeldDerived)
	}, "—", "—")
	if scenario == Pools {
		growth := func(f func(GrowthSummary) string) func(Summary) string {
			return func(s Summary) string {
				var parts []string
				for _, p := range s.Pools {
					parts = append(parts, p.Name+" "+f(p.Growth))
				}
				return strings.Join(parts, ", ")
			}
		}
		row("trainers added by EDL's growth", growth(func(g GrowthSummary) string { return strconv.Itoa(g.Trainers) }), "", "")
		row("their Pending-seconds (waiting for a node), total", growth(func(g GrowthSummary) string { return secs(g.Pending) }), "", "")
		row("longest wait of one / waits longer than an interval", growth(func(g GrowthSummary) string {
			return fmt.Sprintf("%s / %d", secs(g.Longest), g.Late)
		}), "", "")
	}
	row("trainer scalings applied by edl", func(s Summary) string { return strconv.Itoa(s.Scalings) }, "—", "—")
	return b.String()
}

// The rows of the useful utilization and of the CPU held by waiting jobs.
const (
	UsefulRow     = "mean useful CPU utilization (Running pods of the jobs that run, and every other Running pod)"
	HeldRow       = "CPU held by waiting jobs (Running pods of jobs not Running), mean / max"
	HeldByRoleRow = "of it by role, mean: master / pserver / trainer"
)

// FixedRow names the bound of what EDL cannot influence.
const FixedRow = "bound of what EDL cannot influence, the web pods placed before any job where they run (mean)"

// derived marks a figure ReadResult derived.
func derived(figure string, isDerived bool) string {
	if isDerived {
		return figure + " (derived)"
	}
	return figure
}

// aroundRow names the bound with the web pods held where they run.
const aroundRow = "ideal bound with the web pods where kube-scheduler put them (mean)"

// trainersRow names the bound of the trainers alone, every other pod held
// where it runs.
const trainersRow = "bound of the trainers, every other pod where it runs (mean)"

// lags is "6 s, 4 s, 8 s", or "—" for none.
func lags(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return strings.Join(parts, ", ")
}

// stoppedPerWebPod is "0.7 (210 for 300)": the Running trainers stopped
// during the web service's up-steps per web pod they added.
func stoppedPerWebPod(s Summary) string {
	if s.WebAdded == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f (%d for %d)", float64(s.TrainersStoppedForWeb)/float64(s.WebAdded), s.TrainersStoppedForWeb, s.WebAdded)
}

// poolRows are the rows of each pool's utilization and bound.
func poolRows(runs []Summary, row func(string, func(Summary) string, string, string), pct func(float64) string) {
	var pools []PoolSummary
	for _, r := range runs {
		if len(r.Pools) > len(pools) {
			pools = r.Pools
		}
	}
	for i, p := range pools {
		at := func(s Summary) (PoolSummary, bool) {
			if i < len(s.Pools) && s.Pools[i].Name == p.Name {
				return s.Pools[i], true
			}
			return PoolSummary{}, false
		}
		value := func(f func(PoolSummary) float64) func(Summary) string {
			return func(s Summary) string {
				if ps, ok := at(s); ok {
					return pct(f(ps))
				}
				return "—"
			}
		}
		row(fmt.Sprintf("%s pool: mean useful %s utilization", p.Name, strings.ToUpper(string(p.Resource))),
			value(func(ps PoolSummary) float64 { return ps.MeanUseful }), "", "")
		row(fmt.Sprintf("%s pool: mean %s allocation utilization", p.Name, strings.ToUpper(string(p.Resource))),
			value(func(ps PoolSummary) float64 { return ps.MeanUtilization }), "", "")
		row(fmt.Sprintf("%s pool: ideal bound (mean)", p.Name), value(func(ps PoolSummary) float64 { return ps.MeanIdeal }), "", "")
		if p.Resource == CPU {
			row(fmt.Sprintf("%s pool: %s", p.Name, FixedRow), func(s Summary) string {
				return derived(value(func(ps PoolSummary) float64 { return ps.MeanIdealFixed })(s), s.FixedDerived)
			}, "", "")
			row(fmt.Sprintf("%s pool: %s", p.Name, aroundRow), value(func(ps PoolSummary) float64 { return ps.MeanIdealAround }), "", "")
			row(fmt.Sprintf("%s pool: %s", p.Name, trainersRow), value(func(ps PoolSummary) float64 { return ps.MeanIdealTrainers }), "", "")
		}
	}
}
