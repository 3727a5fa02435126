package autoscaler

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

// TestArrivingJobsHoldTheirRoom: growth keeps the room an admitted job that
// is not Running yet could use from the jobs of its priority and lower, for
// up to a cool-down after its admission.
func TestArrivingJobsHoldTheirRoom(t *testing.T) {
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
		{name: "one admitted a second ago holds the room it could use", arriving: arriving("ns/b", t0.Add(-time.Second)),
			opts: opts, want: 1},
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{running}
			snap := clusterOf(join(cpu, gpu), jobs)
			d := Decide(snap, jobs, Queue{Arriving: []ArrivingJob{tc.arriving}}, tc.opts)
			assert.Equal(t, tc.want, toOf(d.Actions, running))
			assertExplained(t, jobs, tc.opts, d)
			if tc.want == running.Current {
				require.Len(t, d.Jobs, 1)
				e := d.Jobs[0]
				assert.Equal(t, LimitFairShare, e.Limit, e.Message)
				assert.Equal(t, "ns/b", e.Other)
				assert.Contains(t, e.Message, "the room it could use is kept for ns/b (fulfillment 0), which was admitted and is starting; it grows first once Running")
			}
		})
	}
}

// TestJobsAdmittedTogetherGrowTogether: two jobs admitted in one plan
// reach Running a cycle apart. The first does not take the room while the
// other starts, so once both run they grow evenly and no trainer is
// stopped to even them out — before, the first grew to its maximum and
// rebalancing then gave half of it back.
func TestJobsAdmittedTogetherGrowTogether(t *testing.T) {
	ns := nodes("n", 2, res(8, 64, 0))
	opts := Options{MaxLoadDesired: 1, CoolDown: 15 * time.Second, Now: t0}
	a := newJob("ns/a", withRange(1, 20), runningOn("n-0"))
	b := newJob("ns/b", withRange(1, 20), runningOn("n-1"))

	// Cycle 1: a runs, b is admitted and starting.
	first := []Job{a}
	acts := Decide(clusterOf(ns, first), first, Queue{Arriving: []ArrivingJob{arriving("ns/b", t0.Add(-2*time.Second))}}, opts).Actions
	assert.Empty(t, acts, "a waits for b")

	// Cycle 2: both run; the room goes to them one trainer at a time.
	opts.Now = t0.Add(2 * time.Second)
	both := []Job{a, b}
	d := Decide(clusterOf(ns, both), both, Queue{}, opts)
	assert.Equal(t, int32(8), toOf(d.Actions, a))
	assert.Equal(t, int32(8), toOf(d.Actions, b))
	for _, act := range d.Actions {
		assert.Equal(t, CauseIdle, act.Cause, act.Reason)
	}

	// Without the hold, a takes everything first and gives trainers back
	// once b runs.
	opts.Now = t0
	greedy := Decide(clusterOf(ns, first), first, Queue{}, opts).Actions
	assert.Equal(t, int32(16), toOf(greedy, a))
	opts.Now = t0.Add(2 * time.Second)
	grown := newJob("ns/a", withRange(1, 20), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0", "n-0",
		"n-1", "n-1", "n-1", "n-1", "n-1", "n-1", "n-1"))
	after := []Job{grown, b}
	back, ok := actionFor(Decide(clusterOf(ns, after), after, Queue{}, opts).Actions, "ns/a")
	require.True(t, ok)
	assert.Equal(t, CauseRebalance, back.Cause, back.Reason)
	assert.Less(t, back.To, back.From)
}
