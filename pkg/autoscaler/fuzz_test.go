package autoscaler

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster"
)

// fuzzBytes hands out fuzz input as small numbers, and zeros once it runs out,
// so that every input decodes to some scenario.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() int {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return int(f.b[f.i-1])
}

func (f *fuzzBytes) intn(n int) int { return f.next() % n }

// scenarioFrom decodes a cluster, jobs and options from fuzz input. It keeps
// numbers small so that interesting collisions (full nodes, ties, priorities
// on both sides) are common.
func scenarioFrom(data []byte) ([]nodeSpec, []Job, []otherPod, Options) {
	f := &fuzzBytes{b: data}
	ns := make([]nodeSpec, 1+f.intn(8))
	for i := range ns {
		ns[i] = nodeSpec{name: fmt.Sprintf("n-%d", i), alloc: Resources{
			CPUMilli: int64(500 * (1 + f.intn(16))), MemoryMega: int64(1024 * (1 + f.intn(16))), GPU: int64(f.intn(5)),
		}}
	}
	nodeName := func() string {
		if k := f.intn(len(ns) + 1); k < len(ns) {
			return ns[k].name
		}
		return "gone" // a node the snapshot does not list (NotReady, deleted)
	}
	priorities := []int32{-1, 0, 0, 10, 1000}
	jobs := make([]Job, f.intn(6))
	for i := range jobs {
		j := Job{
			Key: fmt.Sprintf("ns/j%d", i), Min: int32(f.intn(4)), Priority: priorities[f.intn(len(priorities))],
			Request: Resources{CPUMilli: int64(250 * f.intn(9)), MemoryMega: int64(512 * f.intn(9)), GPU: int64(f.intn(3) / 2)},
		}
		j.Max = j.Min + int32(f.intn(12))
		j.Current = j.Min + int32(f.intn(int(j.Max-j.Min)+3)) - 1 // sometimes out of range
		j.Current = max(j.Current, 0)
		if f.intn(4) == 0 {
			j.LastScaleDown = t0.Add(-time.Duration(f.intn(10)) * time.Minute)
		}
		pods := f.intn(int(j.Current) + 3)
		for k := range pods {
			t := TrainerPod{Name: fmt.Sprintf("j%d-%d", i, k), Created: t0.Add(time.Duration(f.intn(20)) * time.Second), Request: j.Request}
			switch f.intn(4) {
			case 0:
				t.Phase, t.Unschedulable = corev1.PodPending, f.intn(2) == 0
			case 1:
				t.Node, t.Phase = nodeName(), corev1.PodPending
			default:
				t.Node, t.Phase = nodeName(), corev1.PodRunning
			}
			if f.intn(8) == 0 { // an older template
				t.Request.CPUMilli += 250
			}
			j.Trainers = append(j.Trainers, t)
		}
		jobs[i] = j
	}
	others := make([]otherPod, f.intn(8))
	for i := range others {
		o := otherPod{name: fmt.Sprintf("o%d", i), priority: priorities[f.intn(len(priorities))],
			req: Resources{CPUMilli: int64(250 * f.intn(17)), MemoryMega: int64(256 * f.intn(17)), GPU: int64(f.intn(4) / 3)}}
		switch f.intn(4) {
		case 0, 1:
			o.node = nodeName()
		case 2:
			o.nominated = nodeName()
		}
		switch f.intn(4) {
		case 0: // a pod of a job that is not planned: starting, or not elastic
			o.job, o.notTrainer = fmt.Sprintf("ns/new%d", f.intn(2)), f.intn(2) == 0
		case 1: // a pserver or master of a planned job
			if len(jobs) > 0 {
				o.job, o.notTrainer = jobs[f.intn(len(jobs))].Key, true
			}
		}
		others[i] = o
	}
	opts := Options{Now: t0, CoolDown: time.Duration(f.intn(3)) * 3 * time.Minute, MaxGrowPerCycle: int32(f.intn(4)),
		RebalanceGap: []float64{0, 0.05, 0.3, 1}[f.intn(4)]}
	if k := f.intn(4); k > 0 {
		opts.MaxLoadDesired = 0.4 + 0.2*float64(k)
	}
	return ns, jobs, others, opts
}

func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 7, 7, 0, 7, 7, 0, 7, 7, 0, 2, 1, 1, 5, 4, 2, 2, 0, 3, 2, 2, 3, 2, 2, 3, 1, 4})
	f.Add([]byte{1, 15, 15, 4, 1, 0, 4, 4, 3, 2, 12, 9, 2, 0, 8, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 1, 0, 4, 16, 16, 0, 0, 0})
	rng := rand.New(rand.NewSource(7))
	for range 16 {
		b := make([]byte, 40+rng.Intn(200))
		rng.Read(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, jobs, others, opts := scenarioFrom(data)
		snap := clusterOf(ns, jobs, others...)
		wantSnap, wantJobs := snap.DeepCopy(), applyPlan(jobs, nil)

		actions := Plan(snap, jobs, opts) // returning at all is the termination check

		require.Equal(t, wantSnap, snap, "Plan mutated the snapshot")
		require.Equal(t, wantJobs, jobs, "Plan mutated the jobs")
		assertWellFormed(t, snap, jobs, opts, actions)
		assert.Equal(t, actions, Plan(snap, jobs, opts), "Plan is not deterministic")

		seen := map[string]bool{}
		for _, a := range actions {
			require.False(t, seen[a.Job], "two actions for %s: grown and shrunk in one plan", a.Job)
			seen[a.Job] = true
			j := jobByKey(jobs, a.Job)
			switch {
			case a.To < a.From && a.Cause == CauseUnschedulable:
				// Giving up stuck trainers: only trainers the scheduler
				// reported unschedulable go.
				stuck := 0
				for _, p := range j.Trainers {
					if p.Unschedulable {
						stuck++
					}
				}
				assert.LessOrEqual(t, int(a.From-a.To), stuck, "%s gave up more trainers than are unschedulable: %s", a.Job, a.Reason)
			case a.To < a.From && a.Cause == CauseRebalance:
				// Rebalancing: some other job of its priority can grow.
				taker := false
				for _, o := range jobs {
					taker = taker || (o.Key != j.Key && o.Priority == j.Priority && o.Min < o.Max && o.Current < o.Max)
				}
				assert.True(t, taker, "%s rebalanced with no job of its priority to give to: %s", a.Job, a.Reason)
			case a.To < a.From:
				assert.True(t, shrinkJustified(snap, jobs, j, opts), "%s shrank without load or outranking pods: %s", a.Job, a.Reason)
			}
		}
	})
}

func jobByKey(jobs []Job, key string) Job {
	for _, j := range jobs {
		if j.Key == key {
			return j
		}
	}
	return Job{}
}

// shrinkJustified reports whether the plan had a reason to take trainers from
// j: a resource over the threshold (counting replicas not created yet), an
// unschedulable pod of higher priority, or one of its own priority that
// another job needs.
func shrinkJustified(snap cluster.Snapshot, jobs []Job, j Job, opts Options) bool {
	for _, p := range snap.Pending {
		if p.Priority > j.Priority || (p.Priority == j.Priority && p.Job != "" && p.Job != j.Key) {
			return true
		}
	}
	threshold := opts.MaxLoadDesired
	if threshold <= 0 {
		threshold = DefaultMaxLoadDesired
	}
	load := vec{snap.CPURequestMilli, snap.MemoryRequestMega, snap.GPURequest}
	for _, o := range jobs {
		if missing := int64(o.Current) - int64(len(o.Trainers)); missing > 0 {
			load = load.plus(vec{o.Request.CPUMilli * missing, o.Request.MemoryMega * missing, o.Request.GPU * missing})
		}
	}
	total := vec{snap.CPUTotalMilli, snap.MemoryTotalMega, snap.GPUTotal}
	for r := range numRes {
		if float64(load[r]) > threshold*float64(total[r]) {
			return true
		}
	}
	return false
}
