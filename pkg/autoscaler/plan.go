package autoscaler

import (
	"container/heap"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster"
)

// Plan decides the trainer replicas of the elastic jobs for one cycle. It
// works on a private copy of snap and jobs and returns the jobs whose replicas
// should change, sorted by key. It runs in three phases on that copy:
//
//  1. Yield to priority. Each unschedulable pending pod, highest priority
//     first, is fitted onto a node; when none has room, trainers of jobs with
//     a lower priority than the pod are removed until one node does, choosing
//     the node whose freeing disrupts the fewest running trainers of the
//     lowest priorities. Removal follows the ReplicaSet controller: a job
//     first loses trainers that are not yet scheduled, then the newest ones
//     bound to nodes. Pods that no removal can fit cost nothing. The pods a
//     TrainingJob needs to run at its minimum (its master, pservers and
//     trainers up to Min) may also take trainers above Min from jobs of
//     their own priority, the most fulfilled first.
//  2. Yield to load. While requests exceed MaxLoadDesired of allocatable for
//     CPU, memory or GPU, a trainer is taken from the job whose next removal
//     is cheapest: not-yet-scheduled trainers first, then the lowest
//     priority, then the most fulfilled. Then, if nothing was taken back
//     yet, rebalance: the most fulfilled job of a priority gives trainers
//     back while it is more than RebalanceGap above the least fulfilled one
//     that can grow.
//  3. Grow. The least fulfilled job (ties: higher priority, smaller request,
//     key) gets one trainer at a time, while its resources stay within
//     MaxLoadDesired and some node has room for the whole trainer. Growth
//     only uses capacity that is idle in the snapshot: what this plan's
//     scale-downs free is still occupied by terminating pods, and giving it
//     away in the same cycle would only churn.
//
// Fulfillment is (placed − Min) / (Max − Min), where placed counts the
// trainers that hold a node: bound to one (Running or starting), or not yet
// scheduled but fitting in the planner's copy of the cluster. Unschedulable
// trainers and those that fit nowhere do not count, so a job whose trainers
// are pending is not mistaken for a fulfilled one (defect 9). Current, the
// ReplicaSet's desired count, is what actions scale from and keep within
// [Min, Max]. A job with no trainer pods yet is not "all pending" (defect 3):
// its trainers are simply not created yet and are reserved like any other
// not-yet-scheduled trainer.
//
// Growth and shrinking use one test, requests > MaxLoadDesired × allocatable,
// so a trainer that growth admits is never one that shrinking removes (defect
// 2); every phase either removes a trainer, adds one, or retires a job or a
// pod, so the work is bounded by the trainers moved plus the input size. A job
// is not both shrunk and grown in one plan. Jobs with Min == Max, Current
// outside [Min, Max], an empty or negative Request, or a duplicate Key are
// never moved but their trainers are still accounted.
//
// Not modelled: node selectors, affinities, taints and tolerations, and
// resources other than CPU, memory and the configured GPUs. A pod that is
// unschedulable for one of those reasons may be fitted onto a node it cannot
// use; that reserves capacity conservatively and never overcommits a node.
//
// While trainers are terminating (see Settling), or a job still has more
// trainer pods than its ReplicaSet asks for (a scale-down not yet carried
// out), phases 1 and 2 wait: those pods still hold their nodes while the
// ReplicaSets already count their replacements, or no longer count them, so
// the same capacity would be counted twice and taken twice. Without this
// wait, one wave of preemptions shrank jobs far below what the pending pods
// needed.
func Plan(snap cluster.Snapshot, jobs []Job, opts Options) []ScaleAction {
	p := newPlanner(snap, jobs, opts)
	p.reserve()
	p.growLoad = p.requested
	if Settling(snap, opts.Now) == 0 && !converging(jobs) {
		p.yieldToPriority(snap.Pending)
		p.yieldToLoad()
		p.trimStuck()
		p.rebalance()
	}
	p.grow()
	return p.actions()
}

// converging reports whether a job has more live trainer pods than its
// ReplicaSet's replicas: the ReplicaSet controller has yet to delete some.
func converging(jobs []Job) bool {
	for i := range jobs {
		if len(jobs[i].Trainers) > int(jobs[i].Current) {
			return true
		}
	}
	return false
}

// settleSlack is how long after its grace period a terminating trainer still
// holds back the yield phases; one that takes longer is stuck (on a lost
// node, behind a finalizer) and must not freeze the autoscaler.
const settleSlack = 30 * time.Second

// Settling counts the trainers of snap that are terminating and not stuck at
// now; while there are any, Plan takes no trainer away.
func Settling(snap cluster.Snapshot, now time.Time) int {
	n := 0
	for _, end := range snap.TerminatingTrainers {
		if now.Before(end.Add(settleSlack)) {
			n++
		}
	}
	return n
}

// victim is one trainer a job can lose, in the order the ReplicaSet controller
// deletes them.
type victim struct {
	req     vec
	node    int32 // index of the node it holds or is reserved on; -1 if none
	pod     int32 // index in Job.Trainers; -1 for a replica not created yet
	bound   bool  // bound by the scheduler: its node's capacity is in the snapshot
	unsched bool  // the scheduler reported it unschedulable
	created bool  // the pod exists; false for replicas not yet created
}

// unresolved marks a bound victim whose node index is not looked up yet:
// most trainers are never touched by a plan, so the name lookup is lazy.
const unresolved = -2

// nodeOf returns the index of the node v holds or is reserved on, -1 if none
// or if the node is not in the snapshot.
func (p *planner) nodeOf(j *jobState, v *victim) int32 {
	if v.node == unresolved {
		v.node = -1
		if n, ok := p.nodeIdx[j.in.Trainers[v.pod].Node]; ok {
			v.node = n
		}
	}
	return v.node
}

// holds reports whether the trainer has a node, for real or in the plan.
func (v *victim) holds() bool { return v.bound || v.node >= 0 }

// jobState is the planner's private working copy of one job.
type jobState struct {
	in       *Job
	key      string
	min, max int64
	desired  int64
	priority int32
	req      vec
	movable  bool

	victims []victim
	next    int   // victims[:next] are gone (or being deleted already)
	placed  int64 // victims[next:] that hold a node, plus trainers grown

	unschedulable bool // a kept trainer is pending unschedulable
	stuck         int  // unschedulable trainers given up by trimStuck
	starved       bool // a kept, not-yet-scheduled trainer fits on no node
	coolingDown   bool

	grown, shrunk     int64
	unscheduledShrunk int64
	nodes             []string

	// Material for the reasons.
	yieldNodes     map[int32]bool // nodes freed for pods of a higher priority
	shareNodes     map[int32]bool // nodes freed for pods of jobs below their minimum, of its priority
	loadRes        int
	loadValue      float64
	growFulfilment float64
	growPlaced     int64

	growsFromIdle   bool      // growth can serve it from idle capacity: rebalance gives it nothing
	promised        int64     // trainers rebalance freed room for, for growth to add
	takerAt         int       // index in rebalance's heap of takers, -1 when not in it
	rebalanced      int64     // trainers given back by rebalance
	rebalanceFrom   float64   // its fulfillment before
	rebalancePlaced int64     // its placed trainers before
	rebalanceTo     *jobState // the least fulfilled job when it first gave
	rebalanceToF    float64   // that job's fulfillment then
}

func (j *jobState) slack() int64 { return j.desired - j.min }

// fulfillmentCmp compares (a.placed−a.min)/(a.max−a.min) with b's exactly.
func fulfillmentCmp(a, b *jobState) int { return fulfillmentAt(a, a.placed, b, b.placed) }

// fulfillmentAt compares a's fulfillment with aPlaced trainers placed to b's
// with bPlaced, exactly.
func fulfillmentAt(a *jobState, aPlaced int64, b *jobState, bPlaced int64) int {
	l := (aPlaced - a.min) * (b.max - b.min)
	r := (bPlaced - b.min) * (a.max - a.min)
	switch {
	case l < r:
		return -1
	case l > r:
		return 1
	}
	return 0
}

func (j *jobState) fulfillment() float64 { return j.fulfillmentAt(j.placed) }

// fulfillmentAt is j's fulfillment with placed trainers placed.
func (j *jobState) fulfillmentAt(placed int64) float64 {
	if j.max == j.min {
		return 1
	}
	return float64(placed-j.min) / float64(j.max-j.min)
}

type planner struct {
	opts      Options
	threshold float64

	names   []string
	nodeIdx map[string]int32
	free    []vec // working free capacity per node
	freed   []vec // freed by this plan's scale-downs; not for growth
	index   *fitIndex

	total     vec
	requested vec // working requests, lowered by scale-downs
	growLoad  vec // requests growth is checked against: never lowered

	jobs     []*jobState
	byKey    map[string]*jobState
	movable  []*jobState
	minPrio  int32                  // lowest priority of a movable job
	cands    [][]slot               // per-node scratch of the eviction search
	hopeless map[pendingShape]bool  // pending shapes no yield can fit
	depth    map[pendingShape]int32 // search depth that made room for a shape
	// outranking are the unschedulable pods that outrank a movable job, for
	// the reasons.
	outranking []*cluster.PendingPod

	idle      vec // capacity growth could use, for the reasons
	idleNodes int
	idleText  string
}

// slot is a trainer that could be removed to free its node: victims[pos] of
// job, costing cost running trainers (itself and the newer ones before it).
type slot struct {
	job  *jobState
	pos  int32
	cost int32
}

// pendingShape is what the eviction search depends on: pods of one shape
// find the same evictions.
type pendingShape struct {
	claim
	req vec
}

// claim is who asks for room: a pod of priority, which may take trainers
// above their minimum from jobs of a lower priority and, when share is set,
// of its own priority too, but never from its own job.
type claim struct {
	priority int32
	share    bool
	own      string
}

func newPlanner(snap cluster.Snapshot, jobs []Job, opts Options) *planner {
	p := &planner{opts: opts, threshold: opts.MaxLoadDesired}
	if !(p.threshold > 0) || math.IsInf(p.threshold, 0) {
		p.threshold = DefaultMaxLoadDesired
	}
	p.total = vec{snap.CPUTotalMilli, snap.MemoryTotalMega, snap.GPUTotal}
	p.requested = vec{snap.CPURequestMilli, snap.MemoryRequestMega, snap.GPURequest}

	nodes := snap.Nodes
	p.names = make([]string, 0, len(nodes.NodesCPUIdleMilli))
	for n := range nodes.NodesCPUIdleMilli {
		p.names = append(p.names, n)
	}
	for _, m := range []map[string]int64{nodes.NodesMemoryFreeMega, nodes.NodesGPUFree} {
		for n := range m {
			if _, ok := nodes.NodesCPUIdleMilli[n]; !ok {
				p.names = append(p.names, n)
			}
		}
	}
	sort.Strings(p.names)
	p.names = slices.Compact(p.names)
	p.nodeIdx = make(map[string]int32, len(p.names))
	p.free = make([]vec, len(p.names))
	p.freed = make([]vec, len(p.names))
	for i, n := range p.names {
		p.nodeIdx[n] = int32(i)
		p.free[i] = vec{nodes.NodesCPUIdleMilli[n], nodes.NodesMemoryFreeMega[n], nodes.NodesGPUFree[n]}
	}
	p.index = newFitIndex(p.free)

	p.jobs = make([]*jobState, 0, len(jobs))
	p.byKey = make(map[string]*jobState, len(jobs))
	p.minPrio = math.MaxInt32
	for _, i := range canonicalOrder(jobs) {
		j := p.newJobState(&jobs[i])
		if j == nil {
			continue
		}
		p.jobs = append(p.jobs, j)
		p.byKey[j.key] = j
		if j.movable {
			p.movable = append(p.movable, j)
			p.minPrio = min(p.minPrio, j.priority)
		}
	}
	return p
}

// canonicalOrder is the order Plan reads jobs in: by key, and duplicate keys
// (a caller's mistake, of which only the first is planned) by their fields,
// so that the plan does not depend on the order of the input.
func canonicalOrder(jobs []Job) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &jobs[a], &jobs[b]
		if c := strings.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		for _, d := range [...]int64{int64(x.Min) - int64(y.Min), int64(x.Max) - int64(y.Max),
			int64(x.Current) - int64(y.Current), int64(x.Priority) - int64(y.Priority)} {
			if d != 0 {
				return int(max(-1, min(1, d)))
			}
		}
		return 0
	})
	return order
}

// newJobState builds the working copy of one job, or nil when the job cannot
// even be accounted (a duplicate key or a negative Current).
func (p *planner) newJobState(in *Job) *jobState {
	if _, dup := p.byKey[in.Key]; dup || in.Current < 0 {
		return nil
	}
	j := &jobState{
		in: in, key: in.Key, min: int64(in.Min), max: int64(in.Max), desired: int64(in.Current),
		priority: in.Priority, req: vecOf(in.Request),
	}
	j.movable = in.Min >= 0 && in.Min < in.Max && in.Current >= in.Min && in.Current <= in.Max &&
		!j.req.isZero() && !j.req.negative()
	if p.opts.CoolDown > 0 && !in.LastScaleDown.IsZero() && p.opts.Now.Sub(in.LastScaleDown) < p.opts.CoolDown {
		j.coolingDown = true
	}

	// The ReplicaSet controller deletes, in order: replicas it has not
	// created yet, unscheduled pods, scheduled pods that are not running,
	// running pods; newest first within each group. The snapshot lists pods
	// oldest first, so that order is three backward passes; other input is
	// sorted first.
	ts := in.Trainers
	var byAge []int32 // nil: ts is already oldest first
	if !oldestFirst(ts) {
		byAge = make([]int32, len(ts))
		for i := range byAge {
			byAge[i] = int32(i)
		}
		slices.SortFunc(byAge, func(a, b int32) int {
			switch {
			case olderTrainer(&ts[a], &ts[b]):
				return -1
			case olderTrainer(&ts[b], &ts[a]):
				return 1
			}
			return int(a - b)
		})
	}
	existing := int64(len(ts))
	missing := max(0, j.desired-existing)
	j.victims = make([]victim, missing+existing)
	var start [3]int64 // where each deletion group begins in victims
	for i := range ts {
		if g := deletionGroup(&ts[i]); g < 2 {
			start[g+1]++
		}
	}
	start[0] = missing
	start[1] += start[0]
	start[2] += start[1]
	for k := range missing {
		j.victims[k] = victim{req: j.req, node: -1, pod: -1}
	}
	for i := len(ts) - 1; i >= 0; i-- {
		pod := int32(i) // #nosec G115 -- an index of Job.Trainers: a job has far fewer than 2^31 pods
		if byAge != nil {
			pod = byAge[i]
		}
		t := &ts[pod]
		g := deletionGroup(t)
		v := victim{req: vecOf(t.Request), node: -1, pod: pod, created: true}
		if t.Node != "" {
			v.bound, v.node = true, unresolved
		} else {
			v.unsched = t.Unschedulable
		}
		j.victims[start[g]] = v
		start[g]++
	}
	// More pods than desired: the controller is already deleting the first
	// ones. They still hold their nodes in the snapshot, so the plan leaves
	// their capacity occupied.
	j.next = int(max(0, existing-j.desired))
	return j
}

// olderTrainer orders trainers by creation, then name.
func olderTrainer(a, b *TrainerPod) bool {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c < 0
	}
	return a.Name < b.Name
}

func oldestFirst(ts []TrainerPod) bool {
	for i := 1; i < len(ts); i++ {
		if olderTrainer(&ts[i], &ts[i-1]) {
			return false
		}
	}
	return true
}

// deletionGroup is the ReplicaSet controller's first criterion for which pod
// to delete: unscheduled (0) before scheduled but not running (1) before
// running (2).
func deletionGroup(t *TrainerPod) int {
	switch {
	case t.Node == "":
		return 0
	case !t.Running():
		return 1
	}
	return 2
}

// reserve finds room for every kept trainer that is not scheduled yet, so that
// growth does not hand out capacity those trainers will take. Higher
// priorities are reserved first, as the scheduler's queue would.
func (p *planner) reserve() {
	order := slices.Clone(p.jobs)
	slices.SortStableFunc(order, func(a, b *jobState) int {
		if a.priority != b.priority {
			return int(b.priority) - int(a.priority)
		}
		return cmpString(a.key, b.key)
	})
	for _, j := range order {
		for k := j.next; k < len(j.victims); k++ {
			v := &j.victims[k]
			if !v.created {
				// Replicas the controller has not created are not in the
				// snapshot's requests yet.
				p.requested = p.requested.plus(v.req)
			}
			switch {
			case v.bound:
				j.placed++
			case v.unsched:
				j.unschedulable = true
			case v.req.negative():
				j.starved = true
			default:
				if n := p.index.firstFit(v.req); n >= 0 {
					v.node = int32(n) // #nosec G115 -- an index of the snapshot's nodes: far fewer than 2^31
					p.take(n, v.req)
					j.placed++
				} else {
					j.starved = true
				}
			}
		}
	}
}

func (p *planner) take(n int, r vec) {
	p.free[n] = p.free[n].minus(r)
	p.index.set(n, p.free[n])
}

// removeNext takes the job's next trainer in ReplicaSet deletion order.
func (p *planner) removeNext(j *jobState) {
	v := &j.victims[j.next]
	j.next++
	j.desired--
	j.shrunk++
	if v.holds() {
		j.placed--
	}
	if !v.bound {
		j.unscheduledShrunk++
	}
	if n := p.nodeOf(j, v); n >= 0 {
		p.free[n] = p.free[n].plus(v.req)
		if v.bound {
			p.freed[n] = p.freed[n].plus(v.req)
		}
		p.index.set(int(n), p.free[n])
	}
	p.requested = p.requested.minus(v.req)
	node := ""
	if v.pod >= 0 {
		node = j.in.Trainers[v.pod].Node
	}
	j.nodes = append(j.nodes, node)
}

// over returns a bit per resource whose load exceeds the threshold. Growth
// uses the same comparison, so the two can never disagree (defect 2).
func (p *planner) over(load vec) (mask int) {
	for r := range numRes {
		if p.exceeds(load[r], r) {
			mask |= 1 << r
		}
	}
	return mask
}

func (p *planner) exceeds(load int64, r int) bool {
	return float64(load) > p.threshold*float64(p.total[r])
}

func (p *planner) load(r int) float64 {
	if p.total[r] == 0 {
		return math.Inf(1)
	}
	return float64(p.requested[r]) / float64(p.total[r])
}

// yieldToLoad takes trainers back while any resource is over the threshold.
func (p *planner) yieldToLoad() {
	h := &jobHeap{less: shrinkFirst}
	for _, j := range p.movable {
		if j.slack() > 0 {
			h.items = append(h.items, j)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		mask := p.over(p.requested)
		if mask == 0 {
			return
		}
		j := h.items[0]
		if j.slack() == 0 || !touches(j.victims[j.next].req, mask) {
			heap.Pop(h)
			continue
		}
		if j.loadValue == 0 {
			for r := range numRes {
				if mask&(1<<r) != 0 && j.victims[j.next].req[r] > 0 {
					j.loadRes, j.loadValue = r, p.load(r)
					break
				}
			}
		}
		p.removeNext(j)
		heap.Fix(h, 0)
	}
}

// trimStuck gives up, down to min, the trainers of a job that the scheduler
// found no node for and that fit on no node of the plan's copy either: below
// the threshold nothing else would remove them, and a pending trainer above
// min only holds its job back (it blocks the job's growth and counts as load)
// — for instance when small pods have cut the idle capacity into pieces
// smaller than a trainer. The ReplicaSet deletes unscheduled pods first, so
// these are the ones that go.
func (p *planner) trimStuck() {
	for _, j := range p.movable {
		for j.slack() > 0 {
			v := &j.victims[j.next]
			if !v.unsched || v.holds() || p.index.firstFit(v.req) >= 0 {
				break
			}
			p.removeNext(j)
			j.stuck++
		}
	}
}

func touches(req vec, mask int) bool {
	for r := range numRes {
		if mask&(1<<r) != 0 && req[r] > 0 {
			return true
		}
	}
	return false
}

// shrinkFirst orders the jobs to take a trainer from: those whose next
// trainer is not scheduled (removing it stops nothing that runs), then the
// lowest priority, then the most fulfilled.
func shrinkFirst(a, b *jobState) bool {
	ca, cb := a.slack() > 0 && !a.victims[a.next].bound, b.slack() > 0 && !b.victims[b.next].bound
	if ca != cb {
		return ca
	}
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if c := fulfillmentCmp(a, b); c != 0 {
		return c > 0
	}
	return a.key < b.key
}

// growFirst orders the jobs to give a trainer to: the least fulfilled, then
// the highest priority, then the smallest request.
func growFirst(a, b *jobState) bool {
	if c := fulfillmentCmp(a, b); c != 0 {
		return c < 0
	}
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.req != b.req {
		return a.req.less(b.req)
	}
	return a.key < b.key
}

func (p *planner) grow() {
	free := make([]vec, len(p.free))
	var idle vec
	idleNodes := 0
	for n := range p.free {
		free[n] = p.free[n].minus(p.freed[n])
		if free[n][resCPU] > 0 {
			idleNodes++
		}
		for r := range numRes {
			idle[r] += max(0, free[n][r])
		}
	}
	index := newFitIndex(free)
	h := &jobHeap{less: growFirst}
	for _, j := range p.movable {
		// A job cooling down is not grown, but it keeps its place in line:
		// see blocked below.
		if j.desired < j.max && j.shrunk == 0 && !j.unschedulable && !j.starved {
			h.items = append(h.items, j)
		}
	}
	heap.Init(h)
	limit := int64(p.opts.MaxGrowPerCycle)
	// When a job cooling down is the least fulfilled, giving the next trainer
	// to a job of its priority or lower would leave it behind once the
	// cool-down ends (rebalancing would give it back only a gap later,
	// stopping trainers to do so): that capacity waits for
	// it. Jobs of a higher priority still grow.
	blocked, blocking := int32(0), false
	for h.Len() > 0 {
		j := h.items[0]
		if j.coolingDown {
			if !blocking || j.priority > blocked {
				blocked = j.priority
			}
			blocking = true
			heap.Pop(h)
			continue
		}
		if (blocking && j.priority <= blocked) || j.desired >= j.max || (limit > 0 && j.grown >= limit) || !p.loadAdmits(j.req) {
			heap.Pop(h)
			continue
		}
		n := index.firstFit(j.req)
		if n < 0 {
			heap.Pop(h)
			continue
		}
		if j.grown == 0 {
			j.growFulfilment, j.growPlaced = j.fulfillment(), j.placed
		}
		free[n] = free[n].minus(j.req)
		index.set(n, free[n])
		p.growLoad = p.growLoad.plus(j.req)
		j.desired++
		j.placed++
		j.grown++
		j.nodes = append(j.nodes, p.names[n])
		heap.Fix(h, 0)
	}
	p.idle, p.idleNodes = idle, idleNodes
}

// loadAdmits reports whether one more trainer keeps every resource it asks
// for within the threshold. Resources it does not ask for are not its
// business: a CPU-only trainer is not held back by GPU load.
func (p *planner) loadAdmits(req vec) bool { return p.admits(p.growLoad.plus(req), req) }

type jobHeap struct {
	items []*jobState
	less  func(a, b *jobState) bool
	// at, when set, is where the heap keeps each job's index (-1 once
	// popped), so that a job can be removed from the middle.
	at func(*jobState) *int
}

func (h *jobHeap) Len() int           { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *jobHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	if h.at != nil {
		*h.at(h.items[i]), *h.at(h.items[j]) = i, j
	}
}
func (h *jobHeap) Push(x any) { h.items = append(h.items, x.(*jobState)) }
func (h *jobHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	if h.at != nil {
		*h.at(x) = -1
	}
	return x
}

// index numbers the items for at; call it before heap.Init.
func (h *jobHeap) index() {
	for i, j := range h.items {
		*h.at(j) = i
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
