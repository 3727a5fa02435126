package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// teamJobs are count elastic jobs of namespace ns, each with one trainer
// running on node n-0 and room to grow to max.
func teamJobs(ns string, count int, max int32, req Resources) []Job {
	out := make([]Job, count)
	for i := range out {
		out[i] = newJob(fmt.Sprintf("%s/job-%d", ns, i), withRange(1, max), withRequest(req), runningOn("n-0"))
	}
	return out
}

// trainerCPU is the CPU of the trainers each namespace's jobs end with.
func trainerCPU(jobs []Job, actions []ScaleAction) map[string]int64 {
	out := map[string]int64{}
	for _, j := range jobs {
		out[namespaceOf(j.Key)] += int64(toOf(actions, j)) * j.Request.CPUMilli
	}
	return out
}

// TestGrowthServesTheTeamFurthestBelowItsShare: with teams, growth goes to
// the team furthest below its weighted share first, then to the least
// fulfilled job within it; fairness is per team, not per job.
func TestGrowthServesTheTeamFurthestBelowItsShare(t *testing.T) {
	cpu := res(1, 1, 0)
	cases := []struct {
		name  string
		jobs  []Job
		teams []Team
		// want is each namespace's trainer CPU, in cores, within one trainer
		// per job.
		want map[string]int64
	}{
		{
			name:  "weights 1 and 3, both asking for more than the cluster: 25% and 75% of it",
			jobs:  append(teamJobs("a", 1, 200, cpu), teamJobs("b", 1, 200, cpu)...),
			teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 3}},
			want:  map[string]int64{"a": 24, "b": 72},
		},
		{
			name:  "ten jobs against one, equal weights: half each, not ten to one",
			jobs:  append(teamJobs("a", 10, 50, cpu), teamJobs("b", 1, 200, cpu)...),
			teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 1}},
			want:  map[string]int64{"a": 48, "b": 48},
		},
		{
			name:  "an idle team lends its share: the other grows over the whole cluster",
			jobs:  teamJobs("a", 1, 200, cpu),
			teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 3}},
			want:  map[string]int64{"a": 96},
		},
		{
			name:  "a namespace no team names is the default team's, of weight 1",
			jobs:  append(teamJobs("a", 1, 200, cpu), teamJobs("other", 1, 200, cpu)...),
			teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 3}},
			want:  map[string]int64{"a": 72, "other": 24},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := nodes("n", 4, res(25, 100, 0)) // 100 CPU, 97 under the threshold
			snap := clusterOf(ns, tc.jobs)
			opts := Options{Teams: tc.teams}
			d := Decide(snap, tc.jobs, Queue{}, opts)
			got := trainerCPU(tc.jobs, d.Actions)
			for team, want := range tc.want {
				jobs := 0
				for _, j := range tc.jobs {
					if namespaceOf(j.Key) == team {
						jobs++
					}
				}
				assert.InDelta(t, want*1000, got[team], float64(jobs*1000+1000), "namespace %s: %v", team, got)
			}
			assertWellFormed(t, snap, tc.jobs, opts, d.Actions)
			require.NotEmpty(t, d.Teams, "the teams' shares are reported")
			var deserved int64
			for _, s := range d.Teams {
				deserved += s.Deserved.CPUMilli
				assert.LessOrEqual(t, s.Used.CPUMilli, int64(100_000), s.Team)
			}
			assert.LessOrEqual(t, deserved, int64(97_000), "the shares fit the cluster under the threshold")
		})
	}
}

// TestWithoutTeamsGrowthIsByJob: no Team, no team order — the same plan as
// before teams, and no shares reported; one team naming every namespace
// gives the plan of no teams too.
func TestWithoutTeamsGrowthIsByJob(t *testing.T) {
	jobs := append(teamJobs("a", 10, 50, res(1, 1, 0)), teamJobs("b", 1, 200, res(1, 1, 0))...)
	snap := clusterOf(nodes("n", 4, res(25, 100, 0)), jobs)
	plain := Decide(snap, jobs, Queue{}, Options{})
	assert.Empty(t, plain.Teams)
	got := trainerCPU(jobs, plain.Actions)
	assert.Greater(t, got["a"], 2*got["b"], "by job, the ten jobs take well over half the room: %v", got)
	one := Decide(snap, jobs, Queue{}, Options{Teams: []Team{{Name: "all", Namespaces: []string{"a", "b"}, Weight: 1}}})
	assert.Equal(t, plain.Actions, one.Actions)
}

// TestReclaimTakesABorrowedShareBackByShrinking: team a grew over the whole
// cluster while team b was idle; b's job starts with its minimum. One plan
// moves a's trainers above its minimum to b until their shares meet — no
// job stopped, none below its minimum — and the next plans, with the moves
// done, move nothing back.
func TestReclaimTakesABorrowedShareBackByShrinking(t *testing.T) {
	ns := nodes("n", 4, res(25, 100, 0))
	a := newJob("a/big", withRange(10, 200), withRequest(res(1, 1, 0)), spread(96, ns))
	b := newJob("b/new", withRange(1, 200), withRequest(res(1, 1, 0)), runningOn("n-0"))
	jobs := []Job{a, b}
	opts := Options{Now: t0, Teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 1}}}
	snap := clusterOf(ns, jobs)
	d := Decide(snap, jobs, Queue{}, opts)
	assertWellFormed(t, snap, jobs, opts, d.Actions)
	got := trainerCPU(jobs, d.Actions)
	assert.InDelta(t, 48_500, got["a"], 1500, "a gives back down to its share: %v", got)
	assert.InDelta(t, 48_500, got["b"], 1500, "b takes its share: %v", got)
	act, ok := actionFor(d.Actions, "b/new")
	require.True(t, ok)
	assert.Equal(t, CauseRebalance, act.Cause)
	assert.Contains(t, act.Reason, "team b uses 1% of the pool's CPU, its share is 50%: team a, which uses more of its own, gives back")
	give, ok := actionFor(d.Actions, "a/big")
	require.True(t, ok)
	assert.Contains(t, give.Reason, "team a uses 99% of the pool's CPU, its share is 50%: its trainers above their minimum go back to team b (b/new)")
	for _, e := range d.Jobs {
		if e.Job == "a/big" {
			assert.Equal(t, LimitFairShare, e.Limit)
			assert.Contains(t, e.Message, "go back to team b", "the explanation names the team's share")
		}
	}

	// The moves done: nothing moves back, plan after plan.
	for cycle := range 20 {
		jobs = applyPlan(jobs, d.Actions)
		for i := range jobs {
			jobs[i].LastScaleDown = time.Time{}
		}
		snap = clusterOf(ns, jobs)
		d = Decide(snap, jobs, Queue{}, opts)
		for _, a := range d.Actions {
			assert.False(t, a.Cause == CauseRebalance, "cycle %d: %s moved again: %s", cycle, a.Job, a.Reason)
		}
	}
}

// TestReclaimMayUseTheWholeCap: rebalancing makes half of a plan's moves at
// most, reclaim all of them — its takers are the jobs of a team below its
// share, which wait for the room. The cluster of
// TestReclaimTakesABorrowedShareBackByShrinking with a cap of 10 moves: b
// takes 10 trainers in one plan, and the explanation of the cap names
// reclaim's limit.
func TestReclaimMayUseTheWholeCap(t *testing.T) {
	ns := nodes("n", 4, res(25, 100, 0))
	a := newJob("a/big", withRange(10, 200), withRequest(res(1, 1, 0)), spread(96, ns))
	b := newJob("b/new", withRange(1, 200), withRequest(res(1, 1, 0)), runningOn("n-0"))
	jobs := []Job{a, b}
	opts := Options{Now: t0, MaxRebalancePerCycle: 10,
		Teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 1}}}
	snap := clusterOf(ns, jobs)
	d := Decide(snap, jobs, Queue{}, opts)
	assertWellFormed(t, snap, jobs, opts, d.Actions)
	act, ok := actionFor(d.Actions, "b/new")
	require.True(t, ok)
	assert.Equal(t, int32(11), act.To, "b takes the whole cap: %s", act.Reason)
	for _, e := range d.Jobs {
		if e.Job == "b/new" {
			assert.Contains(t, e.Message, "this plan moved the 10 trainers rebalancing and reclaim may move in one")
		}
	}
}

// TestReclaimStopsAtTheMinimumAndWithoutTeams: a team above its share whose
// jobs are at their minimum gives nothing; without teams, the same cluster
// is rebalanced by job, as before.
func TestReclaimStopsAtTheMinimum(t *testing.T) {
	ns := nodes("n", 4, res(25, 100, 0))
	a := newJob("a/big", withRange(96, 200), withRequest(res(1, 1, 0)), spread(96, ns))
	b := newJob("b/new", withRange(1, 200), withRequest(res(1, 1, 0)), runningOn("n-0"))
	jobs := []Job{a, b}
	opts := Options{Now: t0, Teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 1}}}
	snap := clusterOf(ns, jobs)
	d := Decide(snap, jobs, Queue{}, opts)
	assert.Empty(t, d.Actions, "a is at its minimum: nothing to take back")
}

// TestReclaimSplitsWhatTrainersCanUseWhenTheSharesCannotAllBeMet: four
// nodes of 18 CPUs hold 12 trainers of 5 CPUs, 60 of the 72 CPUs; two teams
// of weight 1 deserve 36 each, which neither can reach. Team a at 7
// trainers (35 CPUs, 97% of its share) is below its share, yet uses more of
// it than team b at 5 (25 CPUs, 69%): one trainer moves, and the teams end
// at 6 and 6, where nothing moves any more.
func TestReclaimSplitsWhatTrainersCanUseWhenTheSharesCannotAllBeMet(t *testing.T) {
	ns := nodes("n", 4, res(18, 100, 0))
	a := newJob("a/big", withRange(1, 60), withRequest(res(5, 1, 0)), spread(7, ns))
	b := newJob("b/new", withRange(1, 60), withRequest(res(5, 1, 0)), spread(5, []nodeSpec{ns[3], ns[2], ns[1], ns[0]}))
	jobs := []Job{a, b}
	opts := Options{Now: t0, MaxLoadDesired: 1,
		Teams: []Team{{Name: "a", Namespaces: []string{"a"}, Weight: 1}, {Name: "b", Namespaces: []string{"b"}, Weight: 1}}}
	snap := clusterOf(ns, jobs)
	d := Decide(snap, jobs, Queue{}, opts)
	assertWellFormed(t, snap, jobs, opts, d.Actions)
	assert.Equal(t, int32(6), toOf(d.Actions, a), "a gives one back: %+v", d.Actions)
	assert.Equal(t, int32(6), toOf(d.Actions, b), "b takes it")
	act, ok := actionFor(d.Actions, "b/new")
	require.True(t, ok)
	assert.Contains(t, act.Reason, "team b uses 35% of the pool's CPU, its share is 50%: team a, which uses more of its own, gives back 1 trainer for it")

	jobs = applyPlan(jobs, d.Actions)
	for i := range jobs {
		jobs[i].LastScaleDown = time.Time{}
	}
	d = Decide(clusterOf(ns, jobs), jobs, Queue{}, opts)
	assert.Empty(t, d.Actions, "6 and 6: nothing moves back")
}
