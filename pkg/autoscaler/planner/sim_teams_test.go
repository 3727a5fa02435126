package planner

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTeamsOverManyCycles runs random clusters of teams, one of which grew
// over the room while the others were idle, plan after plan, each plan's
// actions taking effect before the next (applyPlan): every plan is
// well-formed, the plans reach a fixed point, and at that point no team
// with a job that could still grow stands below its deserved share while
// another stands above its own by more than a trainer per job — reclaim and
// growth's order converge on the weighted fair shares, and nothing moves
// back and forth. Under the goodput policy, with jobs that report how they
// scale, the same holds of the teams with a job a trainer still speeds up:
// goodput decides within a team's share and what other teams lend.
func TestTeamsOverManyCycles(t *testing.T) {
	for _, policy := range []Policy{PolicyFulfillment, PolicyGoodput} {
		t.Run(string(policy), func(t *testing.T) { teamsOverManyCycles(t, policy) })
	}
}

func teamsOverManyCycles(t *testing.T, policy Policy) {
	reclaimed := 0
	defer func() { assert.Positive(t, reclaimed, "no run took a share back") }()
	for seed := range int64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			ns := nodes("n", 2+rng.Intn(6), res(16, 64, 0))
			var teams []Team
			var jobs []Job
			// One trainer size a run: a trainer larger than the ones a team
			// above its share gives back takes room only where one of
			// theirs frees enough (see docs/teams.md).
			cpu := float64(1 + rng.Intn(2))
			free := make([]int64, len(ns)) // CPU left per node for the minimums
			for i := range ns {
				free[i] = ns[i].alloc.CPUMilli / 2
			}
			for k := range 2 + rng.Intn(3) {
				name := fmt.Sprintf("t%d", k)
				teams = append(teams, Team{Name: name, Namespaces: []string{name}, Weight: int32(1 + rng.Intn(4))})
				for i := range 1 + rng.Intn(3) {
					minimum := int32(1 + rng.Intn(2))
					j := newJob(fmt.Sprintf("%s/j%d", name, i), withRange(minimum, minimum+int32(5+rng.Intn(60))), withRequest(res(cpu, 1, 0)))
					if policy == PolicyGoodput {
						if k := rng.Intn(4); k < 3 {
							j.Progress = &Progress{Model: fuzzModels()[k], Batch: goodputBatch, Nodes: 1}
						}
					}
					placed := int32(0)
					for n := range ns {
						for placed < minimum && free[n] >= j.Request.CPUMilli {
							runningOn(ns[n].name)(&j)
							free[n] -= j.Request.CPUMilli
							placed++
						}
					}
					if placed < minimum {
						continue // no room for its minimum: not submitted
					}
					j.Current = minimum
					jobs = append(jobs, j)
				}
			}
			// One team grew while the others were idle: its jobs hold the
			// rest of the room, above their minimums.
			greedy := teams[rng.Intn(len(teams))].Name
			for n := range ns {
				for i := range jobs {
					j := &jobs[i]
					for namespaceOf(j.Key) == greedy && j.Current < j.Max && free[n]+ns[n].alloc.CPUMilli*2/5 >= j.Request.CPUMilli {
						runningOn(ns[n].name)(j)
						free[n] -= j.Request.CPUMilli
						j.Current++
					}
				}
			}
			opts := Options{Now: t0, Teams: teams, MaxRebalancePerCycle: 8, Policy: policy}
			var last Decision
			quiet := 0
			for cycle := range 60 {
				opts.Now = t0.Add(time.Duration(cycle) * time.Hour) // no cool-down between plans
				snap := clusterOf(ns, jobs)
				d := Decide(snap, jobs, Queue{}, opts)
				assertWellFormed(t, snap, jobs, opts, d.Actions)
				for _, a := range d.Actions {
					if a.Cause == CauseRebalance && a.To > a.From && namespaceOf(a.Job) != greedy {
						reclaimed++
					}
				}
				jobs = applyPlan(jobs, d.Actions)
				if len(d.Actions) == 0 {
					quiet++
				} else {
					quiet = 0
				}
				last = d
				if quiet >= 3 {
					break
				}
			}
			require.GreaterOrEqual(t, quiet, 3, "no fixed point in 60 plans: %+v", last.Actions)
			// At the fixed point: no team below its share with a job that
			// could grow while another is above its own.
			shares := map[string]TeamShare{}
			for _, s := range last.Teams {
				shares[s.Team] = s
			}
			canGrow := map[string]bool{}
			slack := map[string]int64{}
			aboveMin := map[string]bool{} // a team whose jobs are all at their minimums has nothing to give
			for _, j := range jobs {
				team := namespaceOf(j.Key)
				slack[team] += j.Request.CPUMilli
				aboveMin[team] = aboveMin[team] || j.Current > j.Min
				if j.Current < j.Max && j.Progress.Speedup(j.Current+1)-j.Progress.Speedup(j.Current) >= MinGain {
					canGrow[team] = true
				}
			}
			if testing.Verbose() {
				for _, j := range jobs {
					t.Logf("job %s min %d max %d cur %d req %v trainers %d", j.Key, j.Min, j.Max, j.Current, j.Request, len(j.Trainers))
				}
				snap := clusterOf(ns, jobs)
				for _, n := range snap.Nodes {
					t.Logf("node %s free %v", n.Name, n.Free)
				}
				t.Logf("teams %+v shares %+v", teams, last.Teams)
				for _, e := range last.Jobs {
					t.Logf("explain %s: %s %s", e.Job, e.Limit, e.Message)
				}
			}
			for _, below := range teams {
				b := shares[below.Name]
				if !canGrow[below.Name] || b.Used.CPUMilli+slack[below.Name] >= b.Deserved.CPUMilli {
					continue
				}
				for _, above := range teams {
					a := shares[above.Name]
					if !aboveMin[above.Name] {
						continue
					}
					require.LessOrEqual(t, a.Used.CPUMilli, a.Deserved.CPUMilli+slack[above.Name],
						"team %s is below its share (%v of %v) while %s is above its own (%v of %v)",
						below.Name, b.Used, b.Deserved, above.Name, a.Used, a.Deserved)
				}
			}
		})
	}
}
