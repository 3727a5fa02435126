package planner

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPickedTrainers: a plan that frees a node for the pending pods of a job
// below its minimum (kube-scheduler preempts for pods of a higher priority
// itself, so these are what the planner frees nodes for) removes the
// running trainers on that node, whatever their age, and names those that
// are not the ones the ReplicaSet controller deletes first (Remove); the
// pods a job loses are never more than the node needs.
func TestPickedTrainers(t *testing.T) {
	n3 := nodes("n", 3, res(8, 64, 0))
	fourCPU, threeCPU := withRequest(res(4, 1, 0)), withRequest(res(3, 1, 0))
	for _, tc := range []struct {
		name       string
		job        Job
		pending    []otherPod
		want       int32
		remove     []string
		sameNode   bool // every trainer removed ran on one node
		removedMax int32
	}{
		{
			// n-1 and n-2 also hold a web pod that stays: only n-0 can be
			// freed, and its trainers are the oldest. Newest first, the
			// ReplicaSet would delete all six before it reached them.
			name: "a pod needs the node of the oldest trainers: those two go",
			job:  newJob("a", withRange(1, 10), threeCPU, runningOn("n-0", "n-0", "n-1", "n-2", "n-1", "n-2")),
			pending: []otherPod{{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(8, 1, 0)},
				{name: "web-1", node: "n-1", priority: 1000, req: res(2, 1, 0)},
				{name: "web-2", node: "n-2", priority: 1000, req: res(2, 1, 0)}},
			want: 4, remove: []string{"a-t0", "a-t1"}, sameNode: true,
		},
		{
			// n-2 holds the two newest. Among nodes that cost the same, the
			// one of the newest trainers, which lose the least training.
			// They are named too: the ReplicaSet controller's
			// LogarithmicScaleDown treats trainers started close together as
			// equals.
			name:    "the newest trainers are on a node that frees enough: they go, named",
			job:     newJob("a", withRange(1, 10), fourCPU, runningOn("n-0", "n-1", "n-0", "n-1", "n-2", "n-2")),
			pending: []otherPod{{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(7, 1, 0)}},
			want:    4, remove: []string{"a-t4", "a-t5"}, sameNode: true,
		},
		{
			name: "a pod that fits in one trainer's room takes one trainer",
			job:  newJob("a", withRange(1, 10), fourCPU, runningOn("n-0", "n-0", "n-1", "n-1", "n-2", "n-2")),
			pending: []otherPod{{name: "new-pserver", job: "ns/new", notTrainer: true, req: res(3, 1, 0)},
				{name: "new-trainer-0", job: "ns/new", req: res(3, 1, 0)}},
			want: 4, removedMax: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := []Job{tc.job}
			snap := clusterOf(n3, jobs, tc.pending...)
			opts := Options{MaxLoadDesired: 2}
			actions := Plan(snap, jobs, opts)
			assertWellFormed(t, snap, jobs, opts, actions)
			require.Len(t, actions, 1)
			a := actions[0]
			assert.Equal(t, tc.want, a.To)
			if tc.remove != nil {
				assert.ElementsMatch(t, tc.remove, a.Remove)
			}
			if tc.sameNode {
				for _, n := range a.Nodes {
					assert.Equal(t, a.Nodes[0], n, "trainers removed from more than one node: %v", a.Nodes)
				}
			}
			if tc.removedMax > 0 {
				assert.LessOrEqual(t, a.From-a.To, tc.removedMax)
			}
		})
	}
}

// TestYieldRemovesWhatThePodsNeed: on random full clusters of trainers of
// several sizes, the running trainers a plan removes for the pods of a job
// below its minimum hold no more CPU than those pods request plus one
// trainer per node they ran on. Load and rebalancing are off, so every
// removal is the minimum rule's. Newest-first removal breaks this whenever
// the node to free holds older trainers. FuzzYield searches further.
func TestYieldRemovesWhatThePodsNeed(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	for range 400 {
		checkYieldRemovesWhatThePodsNeed(t, rng)
	}
}

func FuzzYield(f *testing.F) {
	for seed := range int64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		checkYieldRemovesWhatThePodsNeed(t, rand.New(rand.NewSource(seed)))
	})
}

func checkYieldRemovesWhatThePodsNeed(t *testing.T, rng *rand.Rand) {
	t.Helper()
	opts := Options{MaxLoadDesired: 2, RebalanceGap: 1}
	ns := nodes("n", 2+rng.Intn(6), res(16, 256, 0))
	var jobs []Job
	maxTrainer := int64(0)
	for k := range 1 + rng.Intn(3) {
		cpu := float64(1 + rng.Intn(4))
		j := newJob(fmt.Sprintf("j%d", k), withRange(1, 1000), withRequest(res(cpu, 1, 0)))
		maxTrainer = max(maxTrainer, j.Request.CPUMilli)
		jobs = append(jobs, j)
	}
	// Fill the nodes in random order with trainers of random jobs.
	free := make([]int64, len(ns))
	for i := range ns {
		free[i] = ns[i].alloc.CPUMilli
	}
	for range 200 {
		j, n := &jobs[rng.Intn(len(jobs))], rng.Intn(len(ns))
		if free[n] >= j.Request.CPUMilli {
			free[n] -= j.Request.CPUMilli
			runningOn(ns[n].name)(j)
		}
	}
	// The pods of a job below its minimum, or a burst of pods of a higher
	// priority that may preempt (a web Deployment scaled up): the bulk
	// yield's bound is the same.
	var pending []otherPod
	need := int64(0)
	web := rng.Intn(2) == 0
	count := 1 + rng.Intn(3)
	if web {
		count = 1 + rng.Intn(24)
	}
	for i := range count {
		cpu := float64(1 + rng.Intn(10))
		pod := otherPod{name: fmt.Sprintf("new-%d", i), job: "ns/new", notTrainer: i == 0, req: res(cpu, 1, 0)}
		if web {
			pod = otherPod{name: fmt.Sprintf("web-%d", i), priority: 1000, req: res(cpu, 1, 0)}
		}
		pending = append(pending, pod)
		need += int64(cpu * 1000)
	}
	for i := range jobs {
		jobs[i].Current = int32(len(jobs[i].Trainers))
	}
	snap := clusterOf(ns, jobs, pending...)
	actions := Plan(snap, jobs, opts)
	assertWellFormed(t, snap, jobs, opts, actions)

	after := applyPlan(jobs, actions)
	removed, freed := int64(0), map[string]bool{}
	for i, j := range jobs {
		kept := map[string]bool{}
		for _, p := range after[i].Trainers {
			kept[p.Name] = true
		}
		for _, p := range j.Trainers {
			if !kept[p.Name] {
				removed += p.Request.CPUMilli
				freed[p.Node] = true
			}
		}
	}
	require.LessOrEqual(t, removed, need+int64(len(freed))*maxTrainer,
		"%d mCPU of trainers removed on %d nodes for pods of %d mCPU: %+v", removed, len(freed), need, actions)
}

// TestRestoreUndoesPicks: a trial that picks trainers out of order and is
// rolled back leaves the job's trainers in the order it found them.
func TestRestoreUndoesPicks(t *testing.T) {
	n3 := nodes("n", 3, res(8, 64, 0))
	jobs := []Job{newJob("a", withRange(1, 10), withRequest(res(4, 1, 0)), runningOn("n-0", "n-0", "n-1", "n-2", "n-1", "n-2"))}
	p := newPlan(clusterOf(n3, jobs), jobs, Options{})
	require.Len(t, p.movable, 1)
	j := p.movable[0]
	order := func() []int32 {
		var pods []int32
		for _, v := range j.victims {
			pods = append(pods, v.pod)
		}
		return pods
	}
	before, next := order(), j.next
	s := p.save()
	p.cut(j, len(j.victims)-1, 0) // n-0's two trainers, the oldest
	require.ElementsMatch(t, []string{"a-t0", "a-t1"}, j.picked)
	require.NotEqual(t, before, order(), "the picks reordered the trainers")
	p.restore(s)
	assert.Equal(t, before, order())
	assert.Equal(t, next, j.next)
	assert.Empty(t, j.picked)
}
