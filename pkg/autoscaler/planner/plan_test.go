package planner

import (
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

func TestPlan(t *testing.T) {
	for _, tc := range planCases() {
		t.Run(tc.name, func(t *testing.T) { runPlanCase(t, tc) })
	}
}

// runPlanCase plans tc and checks the replicas, the reasons and the plan's
// well-formedness.
func runPlanCase(t *testing.T, tc planCase) []ScaleAction {
	t.Helper()
	snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
	actions := Plan(snap, tc.jobs, tc.opts)
	for _, j := range tc.jobs {
		want, ok := tc.want[j.Key]
		if !ok {
			want = j.Current
		}
		assert.Equal(t, want, toOf(actions, j), "job %s", j.Key)
	}
	for key, subs := range tc.reasons {
		a, ok := actionFor(actions, key)
		require.True(t, ok, "no action for %s", key)
		for _, s := range subs {
			assert.Contains(t, a.Reason, s, "job %s", key)
		}
	}
	assertWellFormed(t, snap, tc.jobs, tc.opts, actions)
	assertExplained(t, tc.jobs, tc.opts, Decide(snap, tc.jobs, Queue{}, tc.opts))
	return actions
}

func TestPlanDoesNotMutateItsInputs(t *testing.T) {
	// The original EDL's dry run added to the snapshot's shared maps.
	for _, tc := range planCases() {
		t.Run(tc.name, func(t *testing.T) {
			snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
			jobs := applyPlan(tc.jobs, nil) // a copy with fresh Trainers slices
			wantSnap, wantJobs := snap.DeepCopy(), applyPlan(jobs, nil)
			Plan(snap, jobs, tc.opts)
			assert.Equal(t, wantSnap, snap)
			assert.Equal(t, wantJobs, jobs)
		})
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, tc := range planCases() {
		t.Run(tc.name, func(t *testing.T) {
			snap := clusterOf(tc.nodes, tc.jobs, tc.others...)
			first := Plan(snap, tc.jobs, tc.opts)
			for range 5 {
				jobs := append([]Job(nil), tc.jobs...)
				rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
				assert.Equal(t, first, Plan(snap, jobs, tc.opts))
			}
		})
	}
}

// TestPlanSettlesWithGPUJobs replays the original's GPU loop: with fewer than 34 GPUs the
// original added a GPU trainer and removed it again every round, forever.
func TestPlanSettlesWithGPUJobs(t *testing.T) {
	ns := nodes("g", 5, res(32, 256, 4)) // 20 GPUs
	jobs := []Job{
		newJob("gpu", withRange(1, 40), withRequest(res(1, 4, 1)), runningOn("g-0")),
		newJob("cpu", withRange(1, 40), withRequest(res(1, 4, 0)), runningOn("g-1")),
	}
	var history [][]ScaleAction
	for range 6 {
		actions := Plan(clusterOf(ns, jobs), jobs, Options{})
		history = append(history, actions)
		jobs = applyPlan(jobs, actions)
	}
	require.Len(t, history[0], 2)
	assert.Equal(t, int32(19), jobs[0].Current, "19 GPUs ≤ 0.97 × 20 < 20")
	for i, h := range history[1:] {
		assert.Empty(t, h, "round %d must not move anything once settled", i+2)
	}
}

// TestPlanFulfillmentCountsPlacedTrainers replays the original's fulfillment: it took
// fulfillment from the desired count, so a job whose trainers were mostly
// pending looked rich and was the one to give up a running trainer.
func TestPlanFulfillmentCountsPlacedTrainers(t *testing.T) {
	ns := nodes("n", 1, res(7, 64, 0))
	jobs := []Job{
		// Desired 8 (f=0.78 by desired) but only 2 running (f=0.11).
		newJob("mostly-pending", withRange(1, 10), runningOn("n-0", "n-0"), unschedulableTrainers(6)),
		// Desired 5, all running (f=0.44).
		newJob("running", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0", "n-0")),
	}
	// A job below its minimum needs room among its equals.
	others := []otherPod{{name: "new-trainer-0", job: "ns/new", req: res(1, 1, 0)}}
	actions := Plan(clusterOf(ns, jobs, others...), jobs, Options{MaxLoadDesired: 2})
	assert.Equal(t, int32(4), toOf(actions, jobs[1]), "the job that really runs the most gives back")
	assert.Equal(t, int32(2), toOf(actions, jobs[0]), "the mostly pending job keeps its 2 running trainers and gives up the 6 no node has room for")
}

func TestScaleDownNamesTheNodesTrainersLeave(t *testing.T) {
	ns := nodes("n", 2, res(8, 64, 0))
	jobs := []Job{newJob("a", withRange(1, 10), withRequest(res(2, 1, 0)), runningOn("n-0", "n-1", "n-0", "n-1"), unschedulableTrainers(1))}
	others := []otherPod{{name: "o", node: "n-0", req: res(8, 1, 0)}} // 16 CPU bound of 16
	actions := Plan(clusterOf(ns, jobs, others...), jobs, Options{})
	require.Len(t, actions, 1)
	// The unschedulable trainer first, then the newest: t3 on n-1.
	assert.Equal(t, ScaleAction{Job: "a", From: 5, To: 3, Nodes: []string{"", "n-1"}, Cause: CauseLoad,
		Reason: "scale down by 2 (1 not yet scheduled): CPU load 1 above max_load_desired 0.97"}, actions[0])
}

func TestJobsFromSnapshot(t *testing.T) {
	ns := nodes("n", 1, res(8, 64, 0))
	withPods := []Job{newJob("ns/a", runningOn("n-0", "n-0"))}
	snap := clusterOf(ns, withPods)
	jobs := []Job{{Key: "ns/a", Min: 1, Max: 4, Current: 2}, {Key: "ns/none", Min: 1, Max: 4, Current: 1}}

	got := JobsFromSnapshot(snap, jobs)
	assert.Equal(t, withPods[0].Trainers, got[0].Trainers)
	assert.Empty(t, got[1].Trainers)
	assert.Nil(t, jobs[0].Trainers, "the input is not modified")
}

func TestFitIndexFindsTheFirstNodeThatFitsInEveryDimension(t *testing.T) {
	free := []vec{{4, 1, 0}, {1, 4, 0}, {2, 2, 1}, {8, 8, 0}, {-1, 100, 0}}
	idx := newFitIndex(free)
	tests := []struct {
		req  vec
		want int
	}{
		{vec{1, 1, 0}, 0},
		{vec{2, 2, 0}, 2},
		{vec{1, 1, 1}, 2},
		{vec{5, 5, 0}, 3},
		{vec{0, 9, 0}, -1},
		{vec{9, 0, 0}, -1},
		{vec{0, 0, 0}, 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, idx.firstFit(tt.req), "%v", tt.req)
	}
	idx.set(0, vec{0, 0, 0})
	idx.set(3, vec{1, 1, 0})
	assert.Equal(t, 1, idx.firstFit(vec{1, 1, 0}))
	assert.Equal(t, 2, idx.firstFit(vec{2, 2, 0}))
	assert.Equal(t, -1, idx.firstFit(vec{5, 5, 0}))
	assert.Equal(t, -1, newFitIndex(nil).firstFit(vec{}))
}

// TestTerminatingPodsAreGoneForLoadButHeldFromGrowth: pods in their grace
// period still hold their node, but they are going: the load the shrinking
// phases test leaves them out, so their going is not taken twice, and growth
// does not hand their room out before they are gone. A pod stuck
// terminating long past its grace period is not going anywhere.
func TestTerminatingPodsAreGoneForLoadButHeldFromGrowth(t *testing.T) {
	jobs := []Job{newJob("a", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0"))}
	now := t0.Add(time.Hour)
	snapWith := func(deadline time.Time) snapshot.Snapshot {
		return clusterOf(nodes("n", 1, res(10, 64, 0)), jobs,
			otherPod{name: "web", node: "n-0", req: res(4, 1, 0), terminating: true, deadline: deadline})
	}
	opts := Options{MaxLoadDesired: 0.9, Now: now}
	assert.Empty(t, Plan(snapWith(now.Add(10*time.Second)), jobs, opts),
		"6 of 10 CPU stay: no shrink; 0 CPU idle until the web pod is gone: no growth")
	acts := Plan(snapWith(now.Add(-time.Hour)), jobs, opts)
	require.Len(t, acts, 1, "stuck for an hour: its 4 CPU are load, 10 of 10 is over 0.9")
	assert.Equal(t, int32(5), acts[0].To)
	assert.Equal(t, CauseLoad, acts[0].Cause)
}

// TestLingeringTrainersAreNoLoad: a trainer still being deleted long after
// its grace period — a kubelet's backlog after a big scale-down — was let go
// by its job's ReplicaSet already: counting it as load would shrink jobs
// again for it, whose trainers would linger too (the loop a 2,000-node
// make scale run fell into, kwok's deletions minutes behind). It still
// holds its room from growth.
func TestLingeringTrainersAreNoLoad(t *testing.T) {
	jobs := []Job{newJob("a", withRange(1, 10), runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0"))}
	now := t0.Add(time.Hour)
	opts := Options{MaxLoadDesired: 0.9, Now: now}
	lingering := clusterOf(nodes("n", 1, res(10, 64, 0)), jobs,
		otherPod{name: "b-trainer-x", job: "ns/b", node: "n-0", req: res(4, 1, 0), terminating: true, deadline: now.Add(-time.Hour)})
	assert.Empty(t, Plan(lingering, jobs, opts), "6 of 10 CPU are load: no shrink; the lingering trainer's 4 are no one's to grow into")

	pserver := clusterOf(nodes("n", 1, res(10, 64, 0)), jobs,
		otherPod{name: "b-pserver-x", job: "ns/b", notTrainer: true, node: "n-0", req: res(4, 1, 0), terminating: true, deadline: now.Add(-time.Hour)})
	require.Len(t, Plan(pserver, jobs, opts), 1, "any other pod stuck past its grace period is load, as before")
}

// TestAScaleDownUnderWayIsNotTakenTwice: a job with more trainer pods than
// its ReplicaSet asks for is being scaled down; the pods it deletes are
// going, so the load they make does not shrink anyone again.
func TestAScaleDownUnderWayIsNotTakenTwice(t *testing.T) {
	pods := runningOn("n-0", "n-0", "n-0", "n-0", "n-0", "n-0")
	snap := func(jobs []Job) snapshot.Snapshot {
		return clusterOf(nodes("n", 1, res(8, 64, 0)), jobs, otherPod{name: "web", node: "n-0", req: res(4, 1, 0)})
	}
	opts := Options{MaxLoadDesired: 1}
	settled := []Job{newJob("a", withRange(1, 10), pods)}
	acts := Plan(snap(settled), settled, opts)
	require.Len(t, acts, 1)
	assert.Equal(t, int32(4), acts[0].To, "10 of 8 CPU: two trainers go")
	shrinking := []Job{newJob("a", withRange(1, 10), pods, withCurrent(4))}
	assert.Empty(t, Plan(snap(shrinking), shrinking, opts), "the two are going already")
}

// TestPlanGivesUpTrainersNoNodeHasRoomFor: idle capacity cut into pieces
// smaller than a trainer leaves a trainer pending for good; below the
// threshold nothing else would remove it, so the job gives it up, down to min.
func TestPlanGivesUpTrainersNoNodeHasRoomFor(t *testing.T) {
	// Ten nodes of 2 CPU, each with 1.6 CPU taken: 0.4 idle on each, 4 in
	// all, and the load (with the two pending trainers) 0.85.
	ns := nodes("n", 10, res(2, 64, 0))
	var filler []otherPod
	for _, n := range ns {
		filler = append(filler, otherPod{name: "filler-" + n.name, node: n.name, req: res(1.6, 1, 0)})
	}
	half := withRequest(Resources{CPUMilli: 500, MemoryMega: 1})
	for _, tc := range []struct {
		name string
		job  Job
		want map[string]int32
	}{
		{"above min: given up", newJob("a", withRange(1, 4), half, unschedulableTrainers(2)), map[string]int32{"a": 1}},
		{"at min: kept", newJob("a", withRange(2, 4), half, unschedulableTrainers(2)), map[string]int32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{tc.job}
			actions := Plan(clusterOf(ns, jobs, filler...), jobs, Options{})
			got := map[string]int32{}
			for _, a := range actions {
				got[a.Job] = a.To
			}
			assert.Equal(t, tc.want, got)
			for _, a := range actions {
				assert.Equal(t, CauseUnschedulable, a.Cause)
				assert.Contains(t, a.Reason, "cannot be scheduled and no node it may use has room for one (0.5 CPU")
			}
		})
	}
}
