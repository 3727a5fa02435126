package planner

import (
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// cycle plans on the cluster as it is, checks the plan against that
// cluster, and applies it.
func (s *sim) cycle() []ScaleAction {
	s.opts.Now = s.now()
	if s.gang {
		return s.gangCycle()
	}
	snap, jobs := s.snapshot()
	acts := Plan(snap, jobs, s.opts)
	s.check(snap, jobs, acts)
	s.checkBulkYield(snap, jobs, acts)
	for _, a := range acts {
		s.seen[string(a.Cause)]++
		j := s.job(a.Job)
		s.mark(a)
		j.replicas = a.To
		if a.StartsCoolDown() {
			j.scaleDown = s.now()
		}
	}
	return acts
}

// check asserts the plan's properties: replicas stay in [min, max], and a
// running trainer is stopped only when load exceeds the threshold, for a job
// below its minimum, or to rebalance towards a job of its priority more
// than the gap less fulfilled — never for a pending pod of any priority, or
// one that fits nowhere.
func (s *sim) check(snap snapshot.Snapshot, jobs []Job, acts []ScaleAction) {
	s.t.Helper()
	byKey := map[string]Job{}
	for _, j := range jobs {
		byKey[j.Key] = j
	}
	for _, a := range acts {
		j := byKey[a.Job]
		if a.From != j.Current || a.To < j.Min || a.To > j.Max {
			s.t.Fatalf("tick %d: %s: action %d → %d outside [%d, %d] or not from %d", s.tick, a.Job, a.From, a.To, j.Min, j.Max, j.Current)
		}
		if a.To > a.From && a.Cause == CauseRebalance {
			// A taker's scale-up takes the room a giver of its priority
			// gives back in the same plan.
			given := false
			for _, g := range acts {
				given = given || (g.Cause == CauseRebalance && g.To < g.From && byKey[g.Job].Priority == j.Priority)
			}
			if !given {
				s.t.Fatalf("tick %d: %s took room by rebalancing that no job gave back: %s", s.tick, a.Job, a.Reason)
			}
		}
		if a.To >= a.From {
			continue
		}
		notRunning := int(j.Current) - len(j.Trainers) // replicas not created yet
		for _, t := range j.Trainers {
			if t.Node == "" {
				notRunning++
			}
		}
		if int(a.From-a.To) <= notRunning {
			continue // stops nothing that runs
		}
		switch a.Cause {
		case CauseLoad:
			if !s.overloaded(snap, jobs, j) {
				_, loads := s.loads(snap, jobs)
				s.t.Fatalf("tick %d: %s shrank for load %v below the threshold: %s", s.tick, a.Job, loads, a.Reason)
			}
		case CauseMinimum, CausePriority:
			// Running trainers stop for a pod of higher priority only when
			// it is a TrainingJob's pod below its minimum, a pod of a higher
			// priority that may preempt, or for the minimum of a job the
			// plan admits.
			if !s.belowMinimumWaits(snap, j) && !s.outrankedBy(snap, j) && !s.admitted {
				s.t.Fatalf("tick %d: %s shrank for the minimum of a job but none waits: %s", s.tick, a.Job, a.Reason)
			}
		case CauseRebalance:
			if !s.lessFulfilledEqual(jobs, j) {
				s.t.Fatalf("tick %d: %s rebalanced towards nobody: %s", s.tick, a.Job, a.Reason)
			}
		default:
			s.t.Fatalf("tick %d: %s stopped running trainers for %q: %s", s.tick, a.Job, a.Cause, a.Reason)
		}
	}
}

// loads are, per pool (poolsOf), the requests of the pods bound to counted
// nodes, less those being deleted, and at most what binds within seconds
// (soonBound), over the pool's allocatable; the last is the whole
// cluster's.
func (s *sim) loads(snap snapshot.Snapshot, jobs []Job) (loadPools, [][numRes]float64) {
	lp := poolsOf(snap, jobs)
	used, total := make([]vec, lp.count+1), make([]vec, lp.count+1)
	soon := soonBound(snap, jobs)
	for k := range used {
		used[k] = soon
	}
	for _, n := range s.nodes {
		k, counted := lp.of[n.name]
		if n.cordoned || !counted {
			continue
		}
		for _, p := range s.pods {
			if p.node == n.name && p.deleteAt == 0 {
				used[k] = used[k].plus(p.req)
				used[lp.count] = used[lp.count].plus(p.req)
			}
		}
		total[k] = total[k].plus(n.alloc)
		total[lp.count] = total[lp.count].plus(n.alloc)
	}
	out := make([][numRes]float64, len(used))
	for k := range used {
		for r := range numRes {
			if total[k][r] > 0 {
				out[k][r] = float64(used[k][r]) / float64(total[k][r])
			}
		}
	}
	return lp, out
}

// overloaded reports whether a resource is over the threshold in the pool
// of j or of a node its trainers run on.
func (s *sim) overloaded(snap snapshot.Snapshot, jobs []Job, j Job) bool {
	th := s.opts.MaxLoadDesired
	if th <= 0 {
		th = DefaultMaxLoadDesired
	}
	lp, loads := s.loads(snap, jobs)
	overAt := func(k int) bool {
		for _, l := range loads[k] {
			if l > th {
				return true
			}
		}
		return false
	}
	if overAt(lp.index(j.Key)) {
		return true
	}
	for _, t := range j.Trainers {
		if k, ok := lp.of[t.Node]; ok && overAt(k) {
			return true
		}
	}
	return false
}

// belowMinimumWaits: an unschedulable pod of another job of j's priority or
// higher waits.
func (s *sim) belowMinimumWaits(snap snapshot.Snapshot, j Job) bool {
	for _, p := range snap.Pending {
		if p.Job != "" && p.Job != j.Key && p.Priority >= j.Priority {
			return true
		}
	}
	return false
}

// outrankedBy: an unschedulable pod of a priority higher than j's that may
// preempt waits.
func (s *sim) outrankedBy(snap snapshot.Snapshot, j Job) bool {
	for _, p := range snap.Pending {
		if p.Priority > j.Priority && !p.PreemptNever {
			return true
		}
	}
	return false
}

// checkBulkYield asserts that the plan's yields to pods of a higher priority
// remove no more running trainers than the unschedulable pods that may take
// them need, plus one trainer per node freed: per resource, the requests of
// the bound trainers that go are at most the pods' requests plus, per node
// they leave, the largest trainer's.
func (s *sim) checkBulkYield(snap snapshot.Snapshot, jobs []Job, acts []ScaleAction) {
	s.t.Helper()
	byKey := map[string]Job{}
	for _, j := range jobs {
		byKey[j.Key] = j
	}
	var removed, largest vec
	nodes := map[string]bool{}
	lowest := int32(math.MaxInt32)
	for _, a := range acts {
		if a.To >= a.From || (a.Cause != CausePriority && a.Cause != CauseMinimum) {
			continue
		}
		j := byKey[a.Job]
		lowest = min(lowest, j.Priority)
		for _, t := range j.Trainers {
			if t.Node != "" && slices.Contains(a.Remove, t.Name) {
				removed = removed.plus(vecOf(t.Request))
				nodes[t.Node] = true
			}
			for r := range numRes {
				largest[r] = max(largest[r], vecOf(t.Request)[r])
			}
		}
	}
	if len(nodes) == 0 {
		return
	}
	var need vec
	for _, p := range snap.Pending {
		if p.Priority >= lowest && (!p.PreemptNever || p.Job != "") {
			need = need.plus(vecOf(p.Request))
		}
	}
	for r := range numRes {
		if bound := need[r] + int64(len(nodes))*largest[r]; removed[r] > bound {
			s.t.Fatalf("tick %d: yields removed %v of running trainers on %d nodes for pods that need %v: %+v",
				s.tick, removed, len(nodes), need, acts)
		}
	}
}

// lessFulfilledEqual: a job of j's priority is more than the gap less
// fulfilled, counting bound trainers.
func (s *sim) lessFulfilledEqual(jobs []Job, j Job) bool {
	f := func(j Job) float64 {
		bound := 0
		for _, t := range j.Trainers {
			if t.Node != "" {
				bound++
			}
		}
		return float64(int32(bound)-j.Min) / float64(j.Max-j.Min)
	}
	gap := s.opts.RebalanceGap
	if gap <= 0 {
		gap = DefaultRebalanceGap
	}
	for _, o := range jobs {
		if o.Key != j.Key && o.Priority == j.Priority && o.Min < o.Max && f(j)-f(o) > gap {
			return true
		}
	}
	return false
}

// randomEvent changes the cluster the way a shared cluster changes: pods of
// higher and lower priority come and go (some fit nowhere, some never
// preempt), nodes are cordoned and uncordoned, jobs are submitted.
func (s *sim) randomEvent() {
	if s.gang {
		s.gangEvent()
		return
	}
	r := s.rng
	switch k := r.Intn(10); {
	case k < 4:
		prios := []int32{-10, 0, 100, 1000}
		shapes := []vec{{1000, 1024, 0}, {3000, 2048, 0}, {500, 512, 0}, {100_000, 1024, 0}}
		s.seq++
		web := &simPod{name: fmt.Sprintf("web-%d", s.seq), priority: prios[r.Intn(len(prios))],
			never: r.Intn(5) == 0, req: shapes[r.Intn(len(shapes))], created: s.tick}
		if r.Intn(3) == 0 {
			web.placement = inPool("cpu")
		}
		s.pods = append(s.pods, web)
	case k < 7:
		var others []*simPod
		for _, p := range s.pods {
			if p.job == nil && p.deleteAt == 0 {
				others = append(others, p)
			}
		}
		if len(others) > 0 {
			s.remove(others[r.Intn(len(others))])
		}
	case k < 8:
		n := s.nodes[r.Intn(len(s.nodes))]
		n.cordoned = !n.cordoned
	case k < 9 && len(s.jobs) < 6:
		s.addJob()
	}
}

func (s *sim) addJob() {
	r := s.rng
	lo := int32(r.Intn(3))
	s.submitted++ // not len(s.jobs): with gang admission jobs also finish
	j := &simJob{key: fmt.Sprintf("ns/job%d", s.submitted-1), min: lo, max: lo + 1 + int32(r.Intn(12)),
		priority: []int32{0, 0, 100}[r.Intn(3)], req: []vec{{1000, 1024, 0}, {2000, 2048, 0}}[r.Intn(2)]}
	switch r.Intn(4) {
	case 0:
		j.placement, j.req[resGPU] = onGPUPool(), 1
	case 1:
		j.placement = inPool("cpu")
	}
	j.replicas = j.min
	if s.gang {
		j.queued, j.pservers, j.psReq, j.created = true, 1+int32(r.Intn(2)), vec{500, 512, 0}, s.tick
	}
	s.jobs = append(s.jobs, j)
}

func newSim(t *testing.T, seed int64) *sim {
	r := rand.New(rand.NewSource(seed))
	s := &sim{t: t, rng: r, grace: 1 + r.Intn(3), seen: map[string]int{}}
	s.opts.CoolDown = time.Duration(r.Intn(4)) * time.Second
	for i := range 3 + r.Intn(6) {
		n := &simNode{name: fmt.Sprintf("n-%02d", i), alloc: vec{int64(4+4*r.Intn(3)) * 1000, 32 << 10, 0},
			labels: map[string]string{"pool": "cpu"}}
		if r.Intn(3) == 0 { // a tainted GPU node
			n.alloc[resGPU] = 4
			n.labels = map[string]string{"pool": "gpu"}
			n.taints = []corev1.Taint{gpuTaint}
		}
		s.nodes = append(s.nodes, n)
	}
	for range 1 + r.Intn(3) {
		s.addJob()
	}
	return s
}

// run drives the cluster for active ticks of random events, then freezes the
// inputs and requires a fixed point: no action for quiet cycles in a row
// within settle cycles.
func (s *sim) run(active, settle, quiet int) {
	s.t.Helper()
	for range active {
		s.step()
		s.randomEvent()
		s.cycle()
	}
	s.frozen = true
	still := 0
	var grown []ScaleAction
	since := map[string]int{}
	grewAt := map[string]int{}
	for c := 0; c < settle; c++ {
		s.step()
		s.noneLeftPending(grown, since)
		acts := s.cycle()
		grown = grown[:0]
		for _, a := range acts {
			if a.To > a.From {
				grown = append(grown, a)
				grewAt[a.Job] = s.tick
			}
			// While the pods stay, a job never grows into room it then
			// yields again to them: yield, grow, yield is an oscillation.
			if at, ok := grewAt[a.Job]; ok && a.To < a.From && a.Cause == CausePriority {
				s.t.Fatalf("tick %d: %s grew at tick %d and yields again with the inputs frozen: %s", s.tick, a.Job, at, a.Reason)
			}
		}
		if len(acts) == 0 && s.lastAdmitted == 0 {
			still++
			if still == quiet {
				return
			}
		} else {
			still = 0
		}
	}
	snap, jobs := s.snapshot()
	s.t.Fatalf("no fixed point %d cycles after the inputs stopped changing; last plan: %+v", settle, Plan(snap, jobs, s.opts))
}

// long runs the multi-cycle test over many more seeds: make fuzz sets it.
var long = flag.Bool("long", false, "run the multi-cycle test over 2,000 seeds")

func TestPlanOverManyCycles(t *testing.T) {
	seeds := 40
	if *long {
		seeds = 2000
	}
	seen := map[string]int{}
	for seed := range int64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newSim(t, seed)
			s.run(120, 80, 5)
			for k, v := range s.seen {
				seen[k] += v
			}
		})
	}
	t.Logf("actions and preemptions over %d runs: %v", seeds, seen)
	for _, what := range []string{string(CauseIdle), string(CausePriority), string(CauseLoad), "trainer preempted"} {
		assert.Positive(t, seen[what], "no run exercised %q", what)
	}
}

// noneLeftPending asserts that once nothing else changes, no trainer stays
// pending for more than one plan: what growth adds is placed, or, when a pod
// that was waiting first took the room, given back by the next plan. And
// growth plans trainers only onto nodes the job may use.
func (s *sim) noneLeftPending(grown []ScaleAction, since map[string]int) {
	s.t.Helper()
	for _, p := range s.pods {
		// A job at its minimum waits for room with the pods it has: those
		// are its right to run, not growth.
		if p.job == nil || p.deleteAt != 0 || p.node != "" || p.job.replicas <= p.job.min {
			delete(since, p.name)
			continue
		}
		if _, ok := since[p.name]; !ok {
			since[p.name] = s.tick
		}
		// The room may be held by a pod in its grace period.
		if s.tick-since[p.name] > 1+s.grace {
			s.t.Fatalf("tick %d: trainer %s of %s (%d replicas, min %d) pending since tick %d", s.tick, p.name,
				p.job.key, p.job.replicas, p.job.min, since[p.name])
		}
	}
	for _, a := range grown {
		j := s.job(a.Job)
		for _, n := range a.Nodes {
			if !mayRun(j.placement, &corev1.Node{ObjectMeta: objectMeta(n, s.node(n).labels), Spec: corev1.NodeSpec{Taints: s.node(n).taints}}) {
				s.t.Fatalf("tick %d: %s planned onto %s, which it may not use", s.tick, a.Job, n)
			}
		}
	}
}
