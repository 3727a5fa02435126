package planner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// arriving is a job admitted at admitted that is not Running yet: 1..20
// trainers of 1 CPU.
func arriving(key string, admitted time.Time, muts ...func(*ArrivingJob)) ArrivingJob {
	a := ArrivingJob{Key: key, Min: 1, Max: 20, Admitted: admitted, Request: res(1, 1, 0)}
	for _, m := range muts {
		m(&a)
	}
	return a
}

// TestArrivingJobsKeepTheirShare: growth plans for an admitted job that is
// not Running yet as if it ran, and keeps its share idle, for up to a
// cool-down after its admission; the jobs of its priority and lower get
// the rest. Two nodes of 8 CPU: a runs 1 trainer, b arrives (its minimum's
// pods not in the snapshot): of the 15 CPU idle, a grows by 8 and b's 7 are
// kept.
func TestArrivingJobsKeepTheirShare(t *testing.T) {
	cpu := poolNodes("cpu", 2, res(8, 64, 0))
	gpu := poolNodes("gpu", 2, res(8, 64, 4), gpuTaint)
	running := newJob("ns/a", withRange(1, 20), runningOn("cpu-0"))
	opts := Options{MaxLoadDesired: 1, CoolDown: 15 * time.Second, Now: t0}
	for _, tc := range []struct {
		name     string
		arriving ArrivingJob
		opts     Options
		want     int32 // ns/a's replicas after the plan
	}{
		{name: "one admitted a second ago keeps its share", arriving: arriving("ns/b", t0.Add(-time.Second)),
			opts: opts, want: 9},
		{name: "no longer than a cool-down after its admission", arriving: arriving("ns/b", t0.Add(-15*time.Second)),
			opts: opts, want: 16},
		{name: "not without a cool-down", arriving: arriving("ns/b", t0.Add(-time.Second)),
			opts: Options{MaxLoadDesired: 1, Now: t0}, want: 16},
		{name: "not from a job of a higher priority", arriving: arriving("ns/b", t0.Add(-time.Second), func(a *ArrivingJob) { a.Priority = -1 }),
			opts: opts, want: 16},
		{name: "not on nodes it may not use", arriving: arriving("ns/b", t0.Add(-time.Second), func(a *ArrivingJob) { a.Placement = onGPUPool() }),
			opts: opts, want: 16},
		{name: "not for a job that is not elastic", arriving: arriving("ns/b", t0.Add(-time.Second), func(a *ArrivingJob) { a.Min = 20 }),
			opts: opts, want: 16},
		{name: "no more than its maximum", arriving: arriving("ns/b", t0.Add(-time.Second), func(a *ArrivingJob) { a.Max = 3 }),
			opts: opts, want: 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{running}
			snap := clusterOf(join(cpu, gpu), jobs)
			d := Decide(snap, jobs, Queue{Arriving: []ArrivingJob{tc.arriving}}, tc.opts)
			assert.Equal(t, tc.want, toOf(d.Actions, running))
			assertExplained(t, jobs, tc.opts, d)
			require.Len(t, d.Actions, 1, "no action for the arriving job")
		})
	}
}

// TestArrivalLastsWhilePodsAreCreated: past a cool-down since its
// admission, an arriving job keeps its share while pods of its minimum are
// still to be created, and for a cool-down after its newest pod appeared;
// a job this plan admits keeps it from the start.
func TestArrivalLastsWhilePodsAreCreated(t *testing.T) {
	ns := nodes("n", 2, res(8, 64, 0))
	running := newJob("ns/a", withRange(1, 20), runningOn("n-0"))
	opts := Options{MaxLoadDesired: 1, CoolDown: 15 * time.Second, Now: t0}
	long := arriving("ns/b", t0.Add(-time.Minute))
	trainerSet := PodSet{Role: "trainer", Count: 1, Request: res(1, 1, 0)}

	jobs := []Job{running}
	snap := clusterOf(ns, jobs)
	assert.Equal(t, int32(16), toOf(Decide(snap, jobs, Queue{Arriving: []ArrivingJob{long}}, opts).Actions, running),
		"admitted a minute ago, every pod there long since: its share is not kept")

	starting := Queue{Arriving: []ArrivingJob{long}, Starting: []QueuedJob{{Key: "ns/b", Pods: []PodSet{trainerSet}}}}
	assert.Equal(t, int32(8), toOf(Decide(snap, jobs, starting, opts).Actions, running),
		"a pod of its minimum is still to be created (its room reserved): 7 of the 14 CPU left")

	fresh := clusterOf(ns, []Job{running, newJob("ns/b", withRange(1, 20))})
	fresh.Trainers["ns/b"] = []TrainerPod{{Name: "b-0", Created: t0.Add(-time.Second), Request: res(1, 1, 0)}}
	assert.Equal(t, int32(9), toOf(Decide(fresh, jobs, Queue{Arriving: []ArrivingJob{long}}, opts).Actions, running),
		"its newest pod is a second old")

	queued := Queue{Jobs: []QueuedJob{{Key: "ns/c", Created: t0, MaxTrainers: 20, Pods: []PodSet{trainerSet}}}}
	d := Decide(snap, jobs, queued, opts)
	require.Len(t, d.Admitted, 1)
	assert.Equal(t, int32(8), toOf(d.Actions, running), "c, admitted by this plan, keeps its share: 7 of the 14 CPU left")
}

// TestARunningJobBehindAnArrivingOneIsToldWhy: when the arriving job's
// share is all the room there is, the running job is told the room is kept
// for it.
func TestARunningJobBehindAnArrivingOneIsToldWhy(t *testing.T) {
	ns := nodes("n", 2, res(8, 64, 0))
	a := newJob("ns/a", withRange(1, 20), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-1", "n-1", "n-1", "n-1", "n-1"))
	opts := Options{MaxLoadDesired: 1, CoolDown: 15 * time.Second, Now: t0}
	jobs := []Job{a}
	d := Decide(clusterOf(ns, jobs), jobs, Queue{Arriving: []ArrivingJob{arriving("ns/b", t0.Add(-time.Second))}}, opts)
	assert.Empty(t, d.Actions, "b, less fulfilled, would take all 6 CPU")
	require.Len(t, d.Jobs, 1)
	e := d.Jobs[0]
	assert.Equal(t, LimitLoad, e.Limit, e.Message)
	assert.Contains(t, e.Message, "16 CPU of 16 CPU requested, 6 CPU of it kept for jobs admitted and starting (load 1)")

	// Where the load leaves room, the last job growth gave to is named.
	opts.MaxLoadDesired = 2
	d = Decide(clusterOf(ns, jobs), jobs, Queue{Arriving: []ArrivingJob{arriving("ns/b", t0.Add(-time.Second))}}, opts)
	assert.Empty(t, d.Actions)
	require.Len(t, d.Jobs, 1)
	e = d.Jobs[0]
	assert.Equal(t, LimitFairShare, e.Limit, e.Message)
	assert.Equal(t, "ns/b", e.Other)
	assert.Contains(t, e.Message, "the last to ns/b (priority 0, fulfillment 0.316; admitted and starting, the room is kept for it)")
}

// TestJobsAdmittedTogetherGrowTogether: two jobs admitted in one plan
// reach Running a cycle apart. The first grows only into its share while
// the other starts, so once both run the other grows into the rest and no
// trainer is stopped to even them out — without it, the first grows into
// all the room and rebalancing then gives some of it back.
func TestJobsAdmittedTogetherGrowTogether(t *testing.T) {
	ns := nodes("n", 2, res(8, 64, 0))
	opts := Options{MaxLoadDesired: 1, CoolDown: 15 * time.Second, Now: t0}
	a := newJob("ns/a", withRange(1, 20), runningOn("n-0"))
	b := newJob("ns/b", withRange(1, 20), runningOn("n-1"))

	// Cycle 1: a runs, b is admitted and starting; its pod is in the
	// snapshot.
	first := []Job{a}
	snap := clusterOf(ns, []Job{a, b})
	acts := Decide(snap, first, Queue{Arriving: []ArrivingJob{arriving("ns/b", t0.Add(-2*time.Second))}}, opts).Actions
	require.Len(t, acts, 1)
	assert.Equal(t, int32(8), acts[0].To, "a grows into its share: 7 of the 14 CPU idle")

	// Cycle 2: both run; b grows into the room kept for it, nothing shrinks.
	opts.Now = t0.Add(2 * time.Second)
	grownA := newJob("ns/a", withRange(1, 20), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0"))
	both := []Job{grownA, b}
	d := Decide(clusterOf(ns, both), both, Queue{}, opts)
	require.Len(t, d.Actions, 1, "%v", d.Actions)
	assert.Equal(t, "ns/b", d.Actions[0].Job)
	assert.Equal(t, int32(8), d.Actions[0].To)
	assert.Equal(t, CauseIdle, d.Actions[0].Cause)

	// Without the hold, a takes everything first and gives trainers back
	// once b runs.
	opts.Now = t0
	greedy := Decide(snap, first, Queue{}, opts).Actions
	assert.Equal(t, int32(15), toOf(greedy, a))
	opts.Now = t0.Add(2 * time.Second)
	grown := newJob("ns/a", withRange(1, 20), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0",
		"n-1", "n-1", "n-1", "n-1", "n-1", "n-1", "n-1"))
	after := []Job{grown, b}
	back, ok := actionFor(Decide(clusterOf(ns, after), after, Queue{}, opts).Actions, "ns/a")
	require.True(t, ok)
	assert.Equal(t, CauseRebalance, back.Cause, back.Reason)
	assert.Less(t, back.To, back.From)
}
