package planner

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/scaling"
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
	// Where pods may run, and time: pools and a tainted GPU pool, jobs and
	// pods restricted to them, pods that never preempt, pods terminating
	// (in their grace period or stuck), trainers whose priority is their
	// job's, and a Now an hour on.
	for i := range ns {
		ns[i].labels = map[string]string{"pool": []string{"a", "b", "gpu"}[f.intn(3)]}
		if ns[i].labels["pool"] == "gpu" {
			ns[i].taints = []corev1.Taint{gpuTaint}
		}
	}
	placements := []*snapshot.Placement{nil, inPool("a"), inPool("b"), onGPUPool()}
	for i := range jobs {
		jobs[i].Placement = placements[f.intn(len(placements))]
		for k := range jobs[i].Trainers {
			jobs[i].Trainers[k].Priority = jobs[i].Priority
		}
	}
	for i := range others {
		others[i].placement = placements[f.intn(len(placements))]
		others[i].never = f.intn(4) == 0
		if others[i].node != "" && others[i].node != "gone" && f.intn(3) == 0 {
			others[i].terminating = true
			others[i].deadline = t0.Add(time.Duration(f.intn(3)-1) * time.Hour)
		}
	}
	if f.intn(2) == 0 {
		opts.Now = t0.Add(time.Hour)
	}
	opts.MaxRebalancePerCycle = int32(f.intn(4))
	if f.intn(2) == 0 {
		// Teams: the jobs' namespace in one of weight 1..4, guaranteed and
		// limited at times, beside an idle team.
		team := Team{Name: "a", Namespaces: []string{"ns"}, Weight: int32(1 + f.intn(4))}
		if f.intn(3) == 0 {
			team.Guarantee = Resources{CPUMilli: int64(1000 * f.intn(8))}
		}
		if f.intn(3) == 0 {
			team.Limit = Resources{CPUMilli: int64(1000 * (1 + f.intn(8)))}
		}
		opts.Teams = []Team{team, {Name: "idle", Namespaces: []string{"idle"}, Weight: int32(1 + f.intn(4))}}
	}
	// Pods kube-scheduler has not tried yet, created at t0: within the
	// grace at Now = t0, long past it an hour on.
	for i := range others {
		others[i].untried = others[i].node == "" && others[i].nominated == "" && f.intn(4) == 0
	}
	// Jobs that restart on resize (torchrun, Horovod), resized up to ten
	// minutes before Now at a cost of up to a minute, some naming their
	// removals, and a growth margin.
	for i := range jobs {
		if f.intn(3) == 0 {
			jobs[i].RestartsOnResize = true
			jobs[i].ResizeCost = time.Duration(f.intn(4)) * 20 * time.Second
			if k := f.intn(11); k > 0 {
				jobs[i].LastResize = opts.Now.Add(-time.Duration(k) * time.Minute)
			}
			// A Horovod job with a host-discovery file.
			jobs[i].NamesRemovals = f.intn(2) == 0
		}
	}
	opts.GrowMargin = []float64{0, 0, 0.01, 0.1}[f.intn(4)]
	// The goodput policy, with jobs that report progress: one that scales,
	// one that does not, one that slows down with more trainers, each
	// with up to an hour left or not saying.
	if f.intn(2) == 0 {
		opts.Policy = PolicyGoodput
		models := fuzzModels()
		for i := range jobs {
			if k := f.intn(len(models) + 1); k < len(models) {
				jobs[i].Progress = &Progress{Model: models[k], Batch: goodputBatch, Nodes: int32(1 + f.intn(2)),
					Left: time.Duration(f.intn(4)) * 20 * time.Minute / 4}
			}
		}
	}
	return ns, jobs, others, opts
}

// fuzzModels are the scaling models fuzzed jobs report, fitted once.
var fuzzModels = sync.OnceValue(func() []scaling.Model {
	var out []scaling.Model
	for _, steps := range [][]float64{scalingSteps, flatSteps, {1.0, 1.1, 1.3, 1.6}, partlySteps} {
		var ms []scaling.Measurement
		for i, s := range steps {
			ms = append(ms, scaling.Measurement{Trainers: i + 1, Nodes: 1, LocalBatch: goodputBatch / float64(i+1), StepTime: s})
		}
		m, err := scaling.Fit(ms)
		if err != nil {
			panic(err)
		}
		out = append(out, m)
	}
	return out
})

// assertPriced checks the price of resizes: a job that restarts on resize
// and resized less than its cool-down ago is not resized again but to give
// way — to pods of a higher priority, to jobs below their minimum, or by
// giving up trainers no node took; never grown, shrunk for load or moved.
func assertPriced(t *testing.T, jobs []Job, opts Options, actions []ScaleAction) {
	t.Helper()
	for _, a := range actions {
		j := jobByKey(jobs, a.Job)
		if !j.RestartsOnResize || j.LastResize.IsZero() || !opts.Now.Before(j.LastResize.Add(j.ResizeCoolDown(opts.CoolDown))) {
			continue
		}
		assert.Less(t, a.To, a.From, "%s grew %v after its last resize, within its cool-down of %v: %s",
			a.Job, opts.Now.Sub(j.LastResize), j.ResizeCoolDown(opts.CoolDown), a.Reason)
		assert.NotContains(t, []Cause{CauseLoad, CauseRebalance, CauseIdle, CauseSlower}, a.Cause, "%s resized within its cool-down: %s", a.Job, a.Reason)
	}
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

		d := Decide(snap, jobs, Queue{}, opts) // returning at all is the termination check
		actions := d.Actions
		assertExplained(t, jobs, opts, d)
		dry := opts
		dry.DryRun = true
		dd := Decide(snap, jobs, Queue{}, dry)
		require.Equal(t, actions, dd.Actions, "a dry run changed the plan")
		assertExplained(t, jobs, dry, dd)

		require.Equal(t, wantSnap, snap, "Plan mutated the snapshot")
		require.Equal(t, wantJobs, jobs, "Plan mutated the jobs")
		assertWellFormed(t, snap, jobs, opts, actions)
		assertPriced(t, jobs, opts, actions)
		assert.Equal(t, actions, Plan(snap, jobs, opts), "Plan is not deterministic")

		seen := map[string]bool{}
		for _, a := range actions {
			require.False(t, seen[a.Job], "two actions for %s: grown and shrunk in one plan", a.Job)
			seen[a.Job] = true
			j := jobByKey(jobs, a.Job)
			switch {
			case a.To > a.From:
				for _, n := range a.Nodes {
					assert.True(t, mayRun(j.Placement, nodeObj(ns, n)), "%s grew onto %s, which it may not use", a.Job, n)
				}
			case a.To < a.From && a.Cause == CausePriority && strings.Contains(a.Reason, "make room on"):
				// Yielding, and perhaps giving up stuck trainers besides: one
				// of the waiting pods may use a node the trainers leave.
				assert.True(t, claimMayUse(snap, ns, j, a.Nodes), "%s gave way on %v to no pod that may use those nodes: %s", a.Job, a.Nodes, a.Reason)
			case a.To < a.From && (a.Cause == CauseUnschedulable || strings.Contains(a.Reason, "cannot be scheduled") && a.Cause == CausePriority):
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
			case a.To < a.From && (a.Cause == CauseMinimum || a.Cause == CausePriority):
				// For a job below its minimum: one of its waiting pods may use
				// a node the trainers leave.
				assert.True(t, claimMayUse(snap, ns, j, a.Nodes), "%s gave way on %v to no pod that may use those nodes: %s", a.Job, a.Nodes, a.Reason)
			case a.To < a.From:
				assert.True(t, shrinkJustified(snap, jobs, j, opts), "%s shrank without load: %s", a.Job, a.Reason)
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

// shrinkJustified reports whether a resource was over the threshold in the
// pool of j or of a node its trainers run on, counting only pods bound to
// counted nodes, less those going and the trainers being deleted however
// late.
func shrinkJustified(snap snapshot.Snapshot, jobs []Job, j Job, opts Options) bool {
	threshold := opts.MaxLoadDesired
	if threshold <= 0 {
		threshold = DefaultMaxLoadDesired
	}
	lp := poolsOf(snap, jobs)
	load, total := lp.base(snap)
	soon := soonBound(snap, jobs)
	for k := range load {
		load[k] = load[k].plus(soon)
	}
	for _, n := range snap.Nodes {
		for _, t := range n.Terminating {
			if t.Trainer || !opts.Now.After(t.Deadline.Add(SettleSlack)) {
				for _, k := range []int{lp.of[n.Name], lp.count} {
					load[k] = load[k].minus(vecOf(t.Request))
				}
			}
		}
	}
	if k := lp.index(j.Key); over(load[k], total[k], threshold) {
		return true
	}
	for _, t := range j.Trainers {
		if k, ok := lp.of[t.Node]; ok && over(load[k], total[k], threshold) {
			return true
		}
	}
	return false
}

// claimMayUse reports whether a waiting pod of another job, of j's priority
// or higher, or a pod of a higher priority that may preempt, may run on one
// of the nodes j's removed trainers held.
func claimMayUse(snap snapshot.Snapshot, ns []nodeSpec, j Job, nodes []string) bool {
	if !slices.ContainsFunc(nodes, func(n string) bool { return n != "" }) {
		return true // only trainers not scheduled yet: nothing that runs stops
	}
	for _, p := range snap.Pending {
		claims := p.Job != "" && p.Job != j.Key && p.Priority >= j.Priority ||
			p.Job == "" && p.Priority > j.Priority && !p.PreemptNever
		if !claims {
			continue
		}
		for _, n := range nodes {
			if n != "" && mayRun(p.Placement, nodeObj(ns, n)) {
				return true
			}
		}
	}
	return false
}

func nodeObj(ns []nodeSpec, name string) *corev1.Node {
	for _, n := range ns {
		if n.name == name {
			return &corev1.Node{ObjectMeta: objectMeta(n.name, n.labels), Spec: corev1.NodeSpec{Taints: n.taints}}
		}
	}
	return &corev1.Node{ObjectMeta: objectMeta(name, nil)}
}
