package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// full is one node of 11 CPU that rich's 10 trainers and poor's one fill.
var full = nodes("n", 1, res(11, 64, 0))

func rebalanceCases() []planCase {
	fill := func(n int) jobMutator { return spread(n, full) }
	// MaxLoadDesired 1 lets the jobs fill the node without the load rule.
	opts := Options{MaxLoadDesired: 1}
	return []planCase{
		{
			name:  "the most fulfilled job gives back to the least fulfilled one of its priority",
			nodes: full,
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", fill(1))},
			opts:  opts,
			// rich 10 → 6, poor 1 → 5 in the same plan, into the room rich
			// frees: 5/9 − 4/9 = 0.11 > 0.1 would move one more, but then
			// poor (5/9) would pass rich (4/9).
			want: map[string]int32{"rich": 6, "poor": 5},
			reasons: map[string][]string{
				"rich": {"scale down by 4: fulfillment 1 (10 of 1..10 trainers placed) is more than 0.1 above the 0 of poor, the least fulfilled job of priority 0"},
				"poor": {"scale up by 4: rich, more fulfilled (0.556), gives back 4 trainers for it; fulfillment 0 (1 of 1..10 trainers placed) was the lowest of priority 0"},
			},
		},
		{
			name:  "a job that can grow into idle capacity takes nothing",
			nodes: append(nodes("n", 1, res(11, 64, 0)), nodeSpec{name: "idle", alloc: res(4, 64, 0)}),
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", fill(1))},
			opts:  opts,
			want:  map[string]int32{"poor": 5}, // growth, not rebalancing
		},
		{
			name:  "within the gap nothing moves",
			nodes: full,
			jobs:  []Job{newJob("a", withRange(1, 21), fill(6)), newJob("b", withRange(1, 21), fill(5))},
			opts:  Options{MaxLoadDesired: 1, RebalanceGap: 0.1},
			want:  map[string]int32{},
		},
		{
			name:  "a gap of 1 turns rebalancing off",
			nodes: full,
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", fill(1))},
			opts:  Options{MaxLoadDesired: 1, RebalanceGap: 1},
			want:  map[string]int32{},
		},
		{
			name:  "no rebalancing across priorities",
			nodes: full,
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", withPriority(100), fill(1))},
			opts:  opts,
			want:  map[string]int32{},
		},
		{
			name:  "a job cooling down is not given to",
			nodes: full,
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", fill(1), scaledDownAt(t0.Add(-time.Second)))},
			opts:  Options{MaxLoadDesired: 1, Now: t0, CoolDown: time.Minute},
			want:  map[string]int32{},
		},
		{
			name:  "a job at max is not given to",
			nodes: full,
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", withRange(1, 1), fill(1))},
			opts:  opts,
			want:  map[string]int32{},
		},
		{
			// n-0's pods ask 70Gi of its 64Gi of memory: one of rich's
			// trainers leaving frees nothing poor's could use. (The pool's
			// memory, with the node of 0.5 CPU beside it, is under the
			// threshold: no load rule.)
			name:   "a node whose pods ask more than it holds: nothing moves",
			nodes:  append(nodes("n", 1, res(11, 64, 0)), nodeSpec{name: "mem", alloc: res(0.5, 64, 0)}),
			jobs:   []Job{newJob("rich", fill(10)), newJob("poor", withRange(0, 10))},
			others: []otherPod{{name: "big", node: "n-0", req: res(0, 60, 0)}},
			opts:   opts,
			want:   map[string]int32{},
		},
		{
			// Rebalancing may make half of a plan's moves: the other half
			// of kube-controller-manager's rate is for jobs starting.
			name:  "the moves of one plan stop at half of MaxRebalancePerCycle",
			nodes: full,
			jobs:  []Job{newJob("rich", fill(10)), newJob("poor", fill(1))},
			opts:  Options{MaxLoadDesired: 1, MaxRebalancePerCycle: 5},
			// Without the cap rich would give 4 (the first case).
			want: map[string]int32{"rich": 8, "poor": 3},
			reasons: map[string][]string{
				"rich": {"scale down by 2: fulfillment 1 (10 of 1..10 trainers placed) is more than 0.1 above the 0 of poor"},
				"poor": {"scale up by 2: rich, more fulfilled (0.778), gives back 2 trainers for it"},
			},
		},
		{
			name:  "the cap counts the moves of every job",
			nodes: nodes("n", 1, res(22, 64, 0)),
			jobs: []Job{
				newJob("rich-1", spread(10, nodes("n", 1, res(22, 64, 0)))), newJob("rich-2", spread(10, nodes("n", 1, res(22, 64, 0)))),
				newJob("poor-1", spread(1, nodes("n", 1, res(22, 64, 0)))), newJob("poor-2", spread(1, nodes("n", 1, res(22, 64, 0)))),
			},
			opts: Options{MaxLoadDesired: 1, MaxRebalancePerCycle: 6},
			want: map[string]int32{"rich-1": 8, "rich-2": 9, "poor-1": 3, "poor-2": 2},
		},
		{
			// stuck's trainer of 20 CPU fits on no node: the plan gives it
			// up, and moves nothing else (one kind of change at a time).
			name:  "a plan that gives up trainers no node took moves nothing",
			nodes: full,
			jobs: []Job{
				newJob("rich", fill(10)), newJob("poor", fill(1)),
				newJob("stuck", withRange(0, 10), withRequest(res(20, 1, 0)), unschedulableTrainers(1)),
			},
			opts: opts,
			want: map[string]int32{"stuck": 0},
		},
		{
			// web (priority 1000, 2 CPU) waits: mid's one running trainer on
			// the node of 2 CPU makes room for it. rich is still more than the
			// gap above poor, and the load (13 CPU of 13 with web bound) under
			// 2, yet nothing moves in that plan.
			name:  "a plan that stops a scheduled trainer moves nothing",
			nodes: append(nodes("n", 1, res(11, 64, 0)), nodeSpec{name: "small", alloc: res(2, 64, 0)}),
			jobs: []Job{
				newJob("rich", fill(10)), newJob("poor", fill(1)),
				newJob("mid", withRange(0, 10), withRequest(res(2, 1, 0)), runningOn("small")),
			},
			others: []otherPod{{name: "web", priority: 1000, req: res(2, 1, 0)}},
			opts:   Options{MaxLoadDesired: 2},
			want:   map[string]int32{"mid": 0},
		},
		{
			name:  "no room where the giver's trainers leave: nothing moves",
			nodes: full,
			jobs: []Job{
				newJob("rich", fill(10)),
				// poor's trainers need 2 CPU; a 1-CPU trainer of rich frees 1.
				newJob("poor", withRequest(res(2, 1, 0)), withRange(1, 10)),
			},
			opts: Options{MaxLoadDesired: 2},
			want: map[string]int32{},
		},
	}
}

func TestRebalance(t *testing.T) {
	for _, tc := range rebalanceCases() {
		t.Run(tc.name, func(t *testing.T) {
			actions := runPlanCase(t, tc)
			for key := range tc.reasons {
				a, _ := actionFor(actions, key)
				assert.Equal(t, CauseRebalance, a.Cause, key)
			}
		})
	}
}

// TestGivingUpUnscheduledTrainersStartsACoolDown: a job whose trainer no
// node took gives it up, which stops nothing that runs but cools the job
// down like any scale-down: within the cool-down the next plan grows it
// no further, so it does not add again what kube-scheduler has not placed
// (lifted for such scale-downs, the cool-down let it take its part at
// once, and make scale's fill flapped; see StartsCoolDown).
func TestGivingUpUnscheduledTrainersStartsACoolDown(t *testing.T) {
	jobs := []Job{
		newJob("rich", spread(10, full)),
		newJob("poor", withRange(1, 20), spread(1, full), unschedulableTrainers(1)),
	}
	opts := Options{MaxLoadDesired: 1, Now: t0, CoolDown: time.Minute}
	actions := Plan(clusterOf(full, jobs), jobs, opts)
	assertWellFormed(t, clusterOf(full, jobs), jobs, opts, actions)
	require.Len(t, actions, 1, "%v", actions)
	assert.Equal(t, ScaleAction{Job: "poor", From: 2, To: 1, Nodes: []string{""}}, ScaleAction{Job: actions[0].Job, From: actions[0].From, To: actions[0].To, Nodes: actions[0].Nodes},
		"poor gives up its trainer no node took")
	assert.True(t, actions[0].StartsCoolDown())

	jobs = applyPlanAt(jobs, actions, opts.Now)
	opts.Now = t0.Add(time.Second)
	actions = Plan(clusterOf(full, jobs), jobs, opts)
	assertWellFormed(t, clusterOf(full, jobs), jobs, opts, actions)
	assert.Equal(t, int32(1), toOf(actions, jobs[1]), "poor waits out its cool-down: %v", actions)

	opts.Now = t0.Add(61 * time.Second)
	actions = Plan(clusterOf(full, jobs), jobs, opts)
	assert.Equal(t, map[string]int32{"rich": 4, "poor": 7}, map[string]int32{"rich": toOf(actions, jobs[0]), "poor": toOf(actions, jobs[1])},
		"after it, poor takes its part: %v", actions)
}

// earlyAndLate is six nodes of 7 CPU, each full: three trainers of each of
// two early jobs, and one more of an early job or a late job's only one.
func earlyAndLate() ([]nodeSpec, []Job) {
	ns := nodes("n", 6, res(7, 64, 0))
	jobs := []Job{
		newJob("early-1", withRange(1, 20), spread(18, ns), runningOn("n-0", "n-1")),
		newJob("early-2", withRange(1, 20), spread(18, ns), runningOn("n-2", "n-3")),
		newJob("late-1", withRange(1, 20), runningOn("n-4")),
		newJob("late-2", withRange(1, 20), runningOn("n-5")),
	}
	return ns, jobs
}

// TestRebalanceConverges replays the experiment's shape in small: jobs that
// arrived early hold the cluster, late ones run their minimum. Plan after
// plan, with the cool-down, the trainers spread until every job is within
// the gap of the others, and then nothing moves.
func TestRebalanceConverges(t *testing.T) {
	ns, jobs := earlyAndLate()
	opts := Options{MaxLoadDesired: 1, CoolDown: 3 * time.Minute}
	moved := 0
	quiet := 0
	for round := range 60 {
		opts.Now = t0.Add(time.Duration(round) * time.Minute)
		actions := Plan(clusterOf(ns, jobs), jobs, opts)
		assertWellFormed(t, clusterOf(ns, jobs), jobs, opts, actions)
		jobs = applyPlanAt(jobs, actions, opts.Now)
		moved += len(actions)
		if len(actions) == 0 {
			quiet++
			if quiet == 4 {
				break
			}
		} else {
			quiet = 0
		}
	}
	require.Equal(t, 4, quiet, "the plans never settled")
	t.Logf("settled after %d actions: %v", moved, currents(jobs))
	lo, hi := 2.0, -1.0
	total := int32(0)
	for _, j := range jobs {
		f := float64(j.Current-j.Min) / float64(j.Max-j.Min)
		lo, hi = min(lo, f), max(hi, f)
		total += j.Current
	}
	assert.LessOrEqual(t, hi-lo, DefaultRebalanceGap+1e-9, "spread of the fulfillments: %v", currents(jobs))
	assert.Equal(t, int32(42), total, "the 42 CPU stay used: %v", currents(jobs))
	assert.Greater(t, moved, 0)
}

// TestRebalanceCapped: with MaxRebalancePerCycle the same jobs as
// TestRebalanceConverges settle as close, over more plans, and no plan moves
// more than half the cap; a taker the cap left waiting says so.
func TestRebalanceCapped(t *testing.T) {
	ns, jobs := earlyAndLate()
	const limit = 4
	opts := Options{MaxLoadDesired: 1, CoolDown: 3 * time.Minute, MaxRebalancePerCycle: limit}
	quiet, capped := 0, 0
	for round := range 120 {
		opts.Now = t0.Add(time.Duration(round) * time.Minute)
		d := Decide(clusterOf(ns, jobs), jobs, Queue{}, opts)
		assertWellFormed(t, clusterOf(ns, jobs), jobs, opts, d.Actions)
		var given int32
		for _, a := range d.Actions {
			if a.Cause == CauseRebalance && a.To < a.From {
				given += a.From - a.To
			}
		}
		assert.LessOrEqual(t, given, int32(limit/2), "round %d: %v", round, d.Actions)
		for _, e := range d.Jobs {
			if strings.Contains(e.Message, "rebalancing may move in one") {
				capped++
				assert.Contains(t, []Limit{LimitGrowing, LimitFairShare}, e.Limit, e.Message)
			}
		}
		jobs = applyPlanAt(jobs, d.Actions, opts.Now)
		if len(d.Actions) == 0 {
			if quiet++; quiet == 4 {
				break
			}
		} else {
			quiet = 0
		}
	}
	require.Equal(t, 4, quiet, "the plans never settled")
	lo, hi := 2.0, -1.0
	for _, j := range jobs {
		f := float64(j.Current-j.Min) / float64(j.Max-j.Min)
		lo, hi = min(lo, f), max(hi, f)
	}
	assert.LessOrEqual(t, hi-lo, DefaultRebalanceGap+1e-9, "spread of the fulfillments: %v", currents(jobs))
	assert.Positive(t, capped, "the cap held a taker back at least once")
}

// TestRebalanceCappedTakerWaits: a taker the cap leaves without a trainer
// is held by fair share, and its explanation names the giver and the cap.
func TestRebalanceCappedTakerWaits(t *testing.T) {
	node := nodes("n", 1, res(12, 64, 0))
	jobs := []Job{newJob("rich", spread(10, node)), newJob("poor-a", spread(1, node)), newJob("poor-b", spread(1, node))}
	opts := Options{MaxLoadDesired: 1, MaxRebalancePerCycle: 1}
	d := Decide(clusterOf(node, jobs), jobs, Queue{}, opts)
	require.Len(t, d.Actions, 2, "rich gives one, to one of the poor: %v", d.Actions)
	var waiting []Explanation
	for _, e := range d.Jobs {
		if e.Job == "poor-a" || e.Job == "poor-b" {
			if _, scaled := actionFor(d.Actions, e.Job); !scaled {
				waiting = append(waiting, e)
			}
		}
	}
	require.Len(t, waiting, 1)
	assert.Equal(t, LimitFairShare, waiting[0].Limit)
	assert.Equal(t, "rich", waiting[0].Other)
	assert.Contains(t, waiting[0].Message, "rich (fulfillment 0.889) is to give trainers back for it, but this plan moved the 1 trainers rebalancing may move in one")
}

func TestRebalanceMoves(t *testing.T) {
	assert.Equal(t, int32(10), rebalanceMoves(20), "half")
	assert.Equal(t, int32(1), rebalanceMoves(3), "half, rounded down")
	assert.Equal(t, int32(1), rebalanceMoves(1), "at least one")
	assert.Equal(t, int32(0), rebalanceMoves(0), "no cap stays no cap")
}

func TestMovesPerCycle(t *testing.T) {
	assert.Equal(t, int32(20), MovesPerCycle(2*time.Second, 0), "the default rate")
	assert.Equal(t, int32(50), MovesPerCycle(5*time.Second, 0))
	assert.Equal(t, int32(50), MovesPerCycle(2*time.Second, 25), "a rate given")
	assert.Equal(t, int32(1), MovesPerCycle(5*time.Second, 0.01), "at least one")
	assert.Equal(t, int32(1), MovesPerCycle(time.Millisecond, 0), "at least one")
	assert.Equal(t, int32(1<<30), MovesPerCycle(1<<62, 0), "no overflow")
}

// applyPlanAt is applyPlan with the scale-downs stamped at now.
func applyPlanAt(jobs []Job, actions []ScaleAction, now time.Time) []Job {
	out := applyPlan(jobs, actions)
	for i := range out {
		if a, ok := actionFor(actions, out[i].Key); ok && a.StartsCoolDown() {
			out[i].LastScaleDown = now
		}
	}
	return out
}

func currents(jobs []Job) map[string]int32 {
	m := map[string]int32{}
	for _, j := range jobs {
		m[j.Key] = j.Current
	}
	return m
}
