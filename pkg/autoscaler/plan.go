package autoscaler

import (
	"container/heap"
	"math"
	"slices"
	"sort"

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
//     bound to nodes. Pods that no removal can fit cost nothing.
//  2. Yield to load. While requests exceed MaxLoadDesired of allocatable for
//     CPU, memory or GPU, a trainer is taken from the job whose next removal
//     is cheapest: not-yet-scheduled trainers first, then the lowest
//     priority, then the most fulfilled.
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
func Plan(snap cluster.ClusterResource, jobs []Job, opts Options) []ScaleAction {
	p := newPlanner(snap, jobs, opts)
	p.reserve()
	p.growLoad = p.requested
	p.yieldToPriority(snap.Pending)
	p.yieldToLoad()
	p.grow()
	return p.actions()
}

// victim is one trainer a job can lose, in the order the ReplicaSet controller
// deletes them.
type victim struct {
	req      vec
	node     int32  // index of the node it holds or is reserved on; -1 if none
	nodeName string // the node it is bound to, "" if not bound
	bound    bool   // bound by the scheduler: its node's capacity is in the snapshot
	unsched  bool   // the scheduler reported it unschedulable
	created  bool   // the pod exists; false for replicas not yet created
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
	next    int     // victims[:next] are gone (or being deleted already)
	bounds  []int32 // bounds[i] = bound victims in victims[:i]; built on demand
	placed  int64   // victims[next:] that hold a node, plus trainers grown

	unschedulable bool // a kept trainer is pending unschedulable
	starved       bool // a kept, not-yet-scheduled trainer fits on no node
	coolingDown   bool

	grown, shrunk     int64
	unscheduledShrunk int64
	nodes             []string

	// Material for the reasons.
	yieldNodes     map[int32]bool
	loadRes        int
	loadValue      float64
	growFulfilment float64
	growPlaced     int64
}

func (j *jobState) slack() int64 { return j.desired - j.min }

// fulfillmentCmp compares (a.placed−a.min)/(a.max−a.min) with b's exactly.
func fulfillmentCmp(a, b *jobState) int {
	l := (a.placed - a.min) * (b.max - b.min)
	r := (b.placed - b.min) * (a.max - a.min)
	switch {
	case l < r:
		return -1
	case l > r:
		return 1
	}
	return 0
}

func (j *jobState) fulfillment() float64 {
	if j.max == j.min {
		return 1
	}
	return float64(j.placed-j.min) / float64(j.max-j.min)
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
	minPrio  int32                 // lowest priority of a movable job
	onNode   [][]slot              // movable trainers per node; built on demand
	hopeless map[pendingShape]bool // pending shapes no yield can fit
	// outranking are the unschedulable pods that outrank a movable job, for
	// the reasons.
	outranking []*cluster.PendingPod

	idle      vec // capacity growth could use, for the reasons
	idleNodes int
}

type slot struct {
	job *jobState
	pos int32
}

type pendingShape struct {
	priority int32
	req      vec
}

func newPlanner(snap cluster.ClusterResource, jobs []Job, opts Options) *planner {
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
	for i := range jobs {
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
	// running pods; newest first within each group.
	order := make([]int, len(in.Trainers))
	for i := range order {
		order[i] = i
	}
	rank := func(t *TrainerPod) int {
		switch {
		case t.Node == "":
			return 0
		case !t.Running():
			return 1
		}
		return 2
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := &in.Trainers[order[a]], &in.Trainers[order[b]]
		if ra, rb := rank(ta), rank(tb); ra != rb {
			return ra < rb
		}
		if !ta.Created.Equal(tb.Created) {
			return ta.Created.After(tb.Created)
		}
		return ta.Name > tb.Name
	})
	existing := int64(len(in.Trainers))
	missing := max(0, j.desired-existing)
	j.victims = make([]victim, 0, missing+existing)
	for range missing {
		j.victims = append(j.victims, victim{req: j.req, node: -1})
	}
	for _, i := range order {
		t := &in.Trainers[i]
		v := victim{req: vecOf(t.Request), node: -1, nodeName: t.Node, bound: t.Node != "",
			unsched: t.Unschedulable && t.Node == "", created: true}
		if v.bound {
			if n, ok := p.nodeIdx[t.Node]; ok {
				v.node = n
			}
		}
		j.victims = append(j.victims, v)
	}
	// More pods than desired: the controller is already deleting the first
	// ones. They still hold their nodes in the snapshot, so the plan leaves
	// their capacity occupied.
	j.next = int(max(0, existing-j.desired))
	return j
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
					v.node = int32(n)
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
	if v.node >= 0 {
		p.free[v.node] = p.free[v.node].plus(v.req)
		if v.bound {
			p.freed[v.node] = p.freed[v.node].plus(v.req)
		}
		p.index.set(int(v.node), p.free[v.node])
	}
	p.requested = p.requested.minus(v.req)
	j.nodes = append(j.nodes, v.nodeName)
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

// yieldToPriority fits the unschedulable pending pods that outrank some
// movable job, taking trainers back where needed.
func (p *planner) yieldToPriority(pending []cluster.PendingPod) {
	if len(p.movable) == 0 {
		return
	}
	quota := make(map[string]int64, len(p.jobs))
	for _, j := range p.jobs {
		// An elastic job's trainers beyond Min are opportunistic: nobody
		// yields for them. Up to Min they are the job's right to run.
		quota[j.key] = max(0, j.min-j.placed)
	}
	order := make([]int, 0, len(pending))
	for i := range pending {
		if pending[i].Priority > p.minPrio {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := &pending[order[a]], &pending[order[b]]
		if pa.Priority != pb.Priority {
			return pa.Priority > pb.Priority
		}
		if !pa.Created.Equal(pb.Created) {
			return pa.Created.Before(pb.Created)
		}
		if pa.Namespace != pb.Namespace {
			return pa.Namespace < pb.Namespace
		}
		return pa.Name < pb.Name
	})
	for _, i := range order {
		pod := &pending[i]
		if pod.Job != "" {
			if _, known := p.byKey[pod.Job]; known {
				if quota[pod.Job] <= 0 {
					continue
				}
				quota[pod.Job]--
			}
		}
		req := vecOf(pod.Request)
		if req.negative() {
			continue
		}
		p.outranking = append(p.outranking, pod)
		if n := p.index.firstFit(req); n >= 0 {
			// It fits (the scheduler may not have retried yet): keep the room
			// for it so that growth does not take it.
			p.take(n, req)
			continue
		}
		shape := pendingShape{priority: pod.Priority, req: req}
		if p.hopeless[shape] {
			continue
		}
		if !p.makeRoom(pod, req) {
			if p.hopeless == nil {
				p.hopeless = map[pendingShape]bool{}
			}
			p.hopeless[shape] = true
		}
	}
}

// eviction is a way to make room for one pending pod on one node: cut[i]
// trainers taken from jobs[i].
type eviction struct {
	node     int
	jobs     []*jobState
	cuts     []int // victims index (inclusive) up to which each job is cut
	maxPrio  int32
	running  int64 // bound trainers removed: the real disruption
	removed  int64
	fulfilPr float64
}

func (e *eviction) better(o *eviction) bool {
	if o == nil {
		return true
	}
	if e.maxPrio != o.maxPrio {
		return e.maxPrio < o.maxPrio
	}
	if e.running != o.running {
		return e.running < o.running
	}
	// Among equal disruption, the most fulfilled job gives back (defect 9:
	// by placed trainers, so a job whose trainers are mostly pending is not
	// mistaken for a rich one); not-yet-scheduled removals cost nothing.
	if e.fulfilPr != o.fulfilPr {
		return e.fulfilPr > o.fulfilPr
	}
	if e.removed != o.removed {
		return e.removed < o.removed
	}
	return e.node < o.node
}

// makeRoom removes trainers of lower-priority jobs so that req fits on one
// node, and places the pod there. It reports false, changing nothing, when no
// node can be freed enough.
func (p *planner) makeRoom(pod *cluster.PendingPod, req vec) bool {
	best := p.singleVictim(pod.Priority, req)
	if best == nil {
		best = p.scanNodes(pod.Priority, req)
	}
	if best == nil {
		return false
	}
	for i, j := range best.jobs {
		if j.yieldNodes == nil {
			j.yieldNodes = map[int32]bool{}
		}
		j.yieldNodes[int32(best.node)] = true
		for j.next <= best.cuts[i] {
			p.removeNext(j)
		}
	}
	p.take(best.node, req)
	return true
}

func (p *planner) yieldable(j *jobState, priority int32) bool {
	return j.movable && j.priority < priority && j.slack() > 0
}

// bounded returns how many bound trainers lie in victims[from:to].
func (j *jobState) bounded(from, to int) int64 {
	if j.bounds == nil {
		j.bounds = make([]int32, len(j.victims)+1)
		for i, v := range j.victims {
			j.bounds[i+1] = j.bounds[i]
			if v.bound {
				j.bounds[i+1]++
			}
		}
	}
	return int64(j.bounds[to] - j.bounds[from])
}

// singleVictim is the common case: removing, from one job, everything up to
// and including its next trainer that holds a node frees enough on that node.
// It costs O(jobs) instead of a scan of every node.
func (p *planner) singleVictim(priority int32, req vec) *eviction {
	var best *eviction
	lowest := int32(math.MaxInt32)
	for _, j := range p.movable {
		if !p.yieldable(j, priority) {
			continue
		}
		lowest = min(lowest, j.priority)
		last := j.next + int(j.slack())
		k := j.next
		for k < last && j.victims[k].node < 0 {
			k++
		}
		if k == last {
			continue
		}
		n := int(j.victims[k].node)
		if !req.fitsIn(p.free[n].plus(j.victims[k].req)) {
			continue
		}
		e := &eviction{node: n, jobs: []*jobState{j}, cuts: []int{k}, maxPrio: j.priority,
			running: j.bounded(j.next, k+1), removed: int64(k - j.next + 1), fulfilPr: j.fulfillment()}
		if e.better(best) {
			best = e
		}
	}
	if best != nil && best.maxPrio != lowest {
		// A node scan may find room by taking only from the lowest
		// priority, which is what preemption would do too.
		return nil
	}
	return best
}

// scanNodes finds, over all nodes, the cheapest set of job cuts that frees
// enough on one node. Per node it takes trainers of the lowest priorities
// first and, within a priority, those needing the fewest removals.
func (p *planner) scanNodes(priority int32, req vec) *eviction {
	p.buildOnNode()
	var best *eviction
	var cands []slot
	for n := range p.names {
		cands = cands[:0]
		upper := p.free[n]
		for _, s := range p.onNode[n] {
			j := s.job
			if int(s.pos) < j.next || !p.yieldable(j, priority) || int64(s.pos) >= int64(j.next)+j.slack() {
				continue
			}
			cands = append(cands, s)
			upper = upper.plus(j.victims[s.pos].req)
		}
		if !req.fitsIn(upper) {
			continue
		}
		slices.SortFunc(cands, func(a, b slot) int {
			if a.job.priority != b.job.priority {
				return int(a.job.priority) - int(b.job.priority)
			}
			ca, cb := a.job.bounded(a.job.next, int(a.pos)+1), b.job.bounded(b.job.next, int(b.pos)+1)
			if ca != cb {
				return int(ca - cb)
			}
			if c := cmpString(a.job.key, b.job.key); c != 0 {
				return c
			}
			return int(a.pos - b.pos)
		})
		e := &eviction{node: n}
		avail := p.free[n]
		for _, s := range cands {
			if req.fitsIn(avail) {
				break
			}
			ji := slices.Index(e.jobs, s.job)
			if ji < 0 {
				e.jobs = append(e.jobs, s.job)
				e.cuts = append(e.cuts, s.job.next-1)
				ji = len(e.jobs) - 1
			}
			if int(s.pos) <= e.cuts[ji] {
				continue
			}
			// Cutting the job at s.pos also frees its other trainers on this
			// node that come before s in deletion order.
			for _, o := range cands {
				if o.job == s.job && int(o.pos) > e.cuts[ji] && o.pos <= s.pos {
					avail = avail.plus(s.job.victims[o.pos].req)
				}
			}
			e.cuts[ji] = int(s.pos)
		}
		if !req.fitsIn(avail) || len(e.jobs) == 0 {
			continue
		}
		e.maxPrio = math.MinInt32
		e.fulfilPr = e.jobs[0].fulfillment()
		for i, j := range e.jobs {
			e.maxPrio = max(e.maxPrio, j.priority)
			e.running += j.bounded(j.next, e.cuts[i]+1)
			e.removed += int64(e.cuts[i] - j.next + 1)
		}
		if e.better(best) {
			best = e
		}
	}
	return best
}

func (p *planner) buildOnNode() {
	if p.onNode != nil {
		return
	}
	p.onNode = make([][]slot, len(p.names))
	for _, j := range p.movable {
		for k := j.next; k < len(j.victims); k++ {
			if n := j.victims[k].node; n >= 0 {
				p.onNode[n] = append(p.onNode[n], slot{job: j, pos: int32(k)})
			}
		}
	}
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
		if j.desired < j.max && j.shrunk == 0 && !j.unschedulable && !j.starved && !j.coolingDown {
			h.items = append(h.items, j)
		}
	}
	heap.Init(h)
	limit := int64(p.opts.MaxGrowPerCycle)
	for h.Len() > 0 {
		j := h.items[0]
		if j.desired >= j.max || (limit > 0 && j.grown >= limit) || !p.loadAdmits(j.req) {
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
func (p *planner) loadAdmits(req vec) bool {
	for r := range numRes {
		if req[r] > 0 && p.exceeds(p.growLoad[r]+req[r], r) {
			return false
		}
	}
	return true
}

type jobHeap struct {
	items []*jobState
	less  func(a, b *jobState) bool
}

func (h *jobHeap) Len() int           { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *jobHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *jobHeap) Push(x any)         { h.items = append(h.items, x.(*jobState)) }
func (h *jobHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
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
