package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// TeamsSummary is what a Teams run measured of the teams' shares.
type TeamsSummary struct {
	// FairSamples counts the samples in which every team has unmet demand;
	// DeviationP95 and DeviationMax are the nearest-rank p95 and the
	// maximum over them of the largest distance of a team's use from its
	// weighted fair share, in points of the allocatable CPU.
	FairSamples                int
	DeviationP95, DeviationMax float64
	// SettledSamples, SettledP95 and SettledMax are the same over the
	// samples at least ReclaimAllowance intervals after the last burst:
	// the deviation once the reclaim had its time.
	SettledSamples         int
	SettledP95, SettledMax float64
	// Teams are each team's mean use and fair share over those samples,
	// as parts of the allocatable CPU.
	Teams []TeamMeans
	// ReclaimJobs are, for each job of a reclaiming burst, the time from
	// its submission to its phase Running (its minimum running); negative
	// for a job that never ran before it ended.
	ReclaimJobs []time.Duration
	// ReclaimShares are, for each reclaiming burst, the time from its
	// submission to the first sample in which the team used 90% of its
	// fair share; negative if it did not before the schedule changed
	// next (phaseEnd): a later phase changes the fair share.
	ReclaimShares []time.Duration
	// StoppedWhole counts the jobs preempted whole.
	StoppedWhole int
	// TrainersRemoved counts the Running trainers deleted while their job
	// was not; TrainersReclaimed the trainers the reclaiming bursts' teams
	// ran at most in the phase of each burst, summed.
	TrainersRemoved, TrainersReclaimed int
}

// TeamMeans is one team's mean use, fair share and the share EDL deserved
// it (0 without TrainingQueues).
type TeamMeans struct {
	Name                  string
	Share, Fair, Deserved float64
}

// ReclaimAllowance is how many autoscale intervals after a burst the
// settled deviation leaves out: the time the acceptance gives a
// reclaiming team to reach 90% of its share.
const ReclaimAllowance = 4

// ReclaimShare is the part of its fair share a reclaiming team must reach
// for TeamsSummary.ReclaimShares.
const ReclaimShare = 0.9

// SummarizeTeams computes the TeamsSummary of a Teams run.
func SummarizeTeams(r *Result) TeamsSummary {
	out := TeamsSummary{StoppedWhole: len(r.StoppedWhole), TrainersRemoved: r.TrainersRemoved}
	var devs, settled []float64
	sums := map[string]*TeamMeans{}
	var names []string
	for _, s := range r.Samples {
		if len(s.Teams) == 0 || s.CPUAllocMilli == 0 {
			continue
		}
		all := true
		for _, t := range s.Teams {
			all = all && t.Unmet()
		}
		if !all {
			continue
		}
		alloc := float64(s.CPUAllocMilli)
		worst := 0.0
		for _, t := range s.Teams {
			worst = max(worst, math.Abs(float64(t.CPURunningMilli)-t.FairMilli)/alloc)
			m := sums[t.Name]
			if m == nil {
				m = &TeamMeans{Name: t.Name}
				sums[t.Name] = m
				names = append(names, t.Name)
			}
			m.Share += float64(t.CPURunningMilli) / alloc
			m.Fair += t.FairMilli / alloc
			m.Deserved += float64(t.DeservedMilli) / alloc
		}
		devs = append(devs, 100*worst)
		recent := false
		for _, b := range r.Bursts {
			recent = recent || (s.At >= b.At && s.At < b.At+ReclaimAllowance*r.Size.Interval)
		}
		if !recent {
			settled = append(settled, 100*worst)
		}
	}
	out.FairSamples, out.SettledSamples = len(devs), len(settled)
	out.DeviationP95, out.DeviationMax = p95Max(devs)
	out.SettledP95, out.SettledMax = p95Max(settled)
	slices.Sort(names)
	for _, name := range names {
		m := *sums[name]
		m.Share /= float64(out.FairSamples)
		m.Fair /= float64(out.FairSamples)
		m.Deserved /= float64(out.FairSamples)
		out.Teams = append(out.Teams, m)
	}

	running := map[string]JobTiming{}
	for _, j := range r.Jobs {
		running[j.Name] = j
	}
	for _, b := range r.Bursts {
		if !b.Reclaiming {
			continue
		}
		for _, name := range b.Jobs {
			j, ok := running[name]
			switch {
			case ok && j.Running >= 0:
				out.ReclaimJobs = append(out.ReclaimJobs, j.Running-j.Submitted)
			default:
				out.ReclaimJobs = append(out.ReclaimJobs, -1)
			}
		}
		reached := time.Duration(-1)
		most := 0
		until := phaseEnd(r.Bursts, b.At, r.End)
		for _, s := range r.Samples {
			if s.At < b.At || s.At >= until {
				continue
			}
			for _, t := range s.Teams {
				if t.Name != b.Team {
					continue
				}
				most = max(most, t.Trainers)
				if reached < 0 && t.FairMilli > 0 && t.CPURunningMilli > 0 && float64(t.CPURunningMilli) >= ReclaimShare*t.FairMilli {
					reached = s.At - b.At
				}
			}
		}
		out.ReclaimShares = append(out.ReclaimShares, reached)
		out.TrainersReclaimed += most
	}
	return out
}

// phaseEnd is when the schedule changes next after a burst submitted at
// at: the next submission or end of any burst more than a second later (a
// phase's deletions and submissions are milliseconds apart), or end.
func phaseEnd(bursts []Burst, at, end time.Duration) time.Duration {
	next := end + 1
	for _, b := range bursts {
		for _, t := range []time.Duration{b.At, b.End} {
			if t > at+time.Second && t < next {
				next = t
			}
		}
	}
	return next
}

// p95Max is the nearest-rank p95 and the maximum of vs; 0 for none.
func p95Max(vs []float64) (p95, most float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	vs = slices.Sorted(slices.Values(vs))
	rank := int(math.Ceil(0.95 * float64(len(vs))))
	return vs[min(max(rank, 1), len(vs))-1], vs[len(vs)-1]
}

// durationStats are the nearest-rank p95 and the maximum of ds, and how
// many of them are negative (never reached); the negative ones are left out
// of both.
func durationStats(ds []time.Duration) (p95, most time.Duration, never int) {
	var ok []time.Duration
	for _, d := range ds {
		if d < 0 {
			never++
			continue
		}
		ok = append(ok, d)
	}
	if len(ok) == 0 {
		return -1, -1, never
	}
	slices.Sort(ok)
	return percentile(ok, 95), ok[len(ok)-1], never
}

// teamsDeviationRow names the deviation from the weighted fair share.
const teamsDeviationRow = "deviation from the weighted fair share, p95 / max (points of the cluster's CPU, over the samples where every team has unmet demand)"

// teamRows are the rows of Teams' table: fairness, reclaim, what was
// stopped.
func teamRows(runs []Summary, row func(string, func(Summary) string, string, string), pct func(float64) string) {
	row(teamsDeviationRow, func(s Summary) string {
		t := s.Teams
		if t.FairSamples == 0 {
			return "— (no such sample)"
		}
		return fmt.Sprintf("%.1f / %.1f (%d samples)", t.DeviationP95, t.DeviationMax, t.FairSamples)
	}, "", "")
	row(fmt.Sprintf("of those, the samples %d intervals or more after the last burst: p95 / max", ReclaimAllowance),
		func(s Summary) string {
			t := s.Teams
			if t.SettledSamples == 0 {
				return "— (no such sample)"
			}
			return fmt.Sprintf("%.1f / %.1f (%d samples)", t.SettledP95, t.SettledMax, t.SettledSamples)
		}, "", "")
	var names []string
	for _, r := range runs {
		for _, m := range r.Teams.Teams {
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	for _, name := range names {
		spec := TeamSpecs[slices.IndexFunc(TeamSpecs, func(t TeamSpec) bool { return t.Name == name })]
		title := fmt.Sprintf("team %s (weight %d", name, spec.Weight)
		if spec.Guarantee > 0 {
			title += fmt.Sprintf(", guarantee %.0f%% of the CPU", 100*spec.Guarantee)
		}
		row(title+"): mean share / fair share / EDL's deserved share over those samples", func(s Summary) string {
			for _, m := range s.Teams.Teams {
				if m.Name == name {
					deserved := "—"
					if m.Deserved > 0 {
						deserved = pct(m.Deserved)
					}
					return pct(m.Share) + " / " + pct(m.Fair) + " / " + deserved
				}
			}
			return "—"
		}, "", "")
	}
	intervals := func(d, interval time.Duration) string {
		if interval <= 0 {
			return fmt.Sprintf("%.1f s", d.Seconds())
		}
		return fmt.Sprintf("%.1f s (%.1f intervals)", d.Seconds(), d.Seconds()/interval.Seconds())
	}
	stats := func(ds []time.Duration, interval time.Duration, what string) string {
		p95, most, never := durationStats(ds)
		if len(ds) == 0 {
			return "—"
		}
		out := fmt.Sprintf("%d %s", len(ds), what)
		if never < len(ds) {
			out = intervals(p95, interval) + " / " + intervals(most, interval) + "; " + out
		}
		if never > 0 {
			out += fmt.Sprintf(", %d never", never)
		}
		return out
	}
	row("reclaim: job submitted by a team below its share → its minimum Running (phase Running), p95 / max",
		func(s Summary) string { return stats(s.Teams.ReclaimJobs, s.Interval, "jobs") }, "", "")
	row(fmt.Sprintf("reclaim: burst submitted → the team at %.0f%% of its fair share (to the sample, within the burst's phase), p95 / max", 100*ReclaimShare),
		func(s Summary) string { return stats(s.Teams.ReclaimShares, s.Interval, "bursts") }, "", "")
	row("jobs stopped whole (Running → Queued, not ended)", func(s Summary) string { return strconv.Itoa(s.Teams.StoppedWhole) }, "", "")
	row("Running trainers removed (their job not ended) per trainer the reclaiming teams gained", func(s Summary) string {
		t := s.Teams
		if t.TrainersReclaimed == 0 {
			return fmt.Sprintf("— (%d removed)", t.TrainersRemoved)
		}
		return fmt.Sprintf("%.2f (%d for %d)", float64(t.TrainersRemoved)/float64(t.TrainersReclaimed), t.TrainersRemoved, t.TrainersReclaimed)
	}, "", "")
	row("mean job pending time (submission → phase Running)", func(s Summary) string { return fmt.Sprintf("%.1f s", s.MeanPending.Seconds()) }, "", "")
	row("jobs never Running before they ended", func(s Summary) string { return fmt.Sprintf("%d of %d", s.NeverRunning, s.Jobs) }, "", "")
}
