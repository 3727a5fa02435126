package planner

import (
	"math"
	"slices"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// yieldToPods makes room for the unschedulable pods that fit nowhere and
// that trainers may give way to ([plan.reserve]'s claims), in the order
// kube-scheduler's queue takes them:
//
//   - the pods a TrainingJob needs to run at its minimum — its master, its
//     pservers and its trainers up to min-instance — take trainers above
//     their minimum from running jobs of their own priority, the most
//     fulfilled first, and of a lower priority. An elastic job's trainers
//     beyond Min are opportunistic, and a job that cannot start is worse off
//     than one that runs fewer extra trainers. kube-scheduler does not
//     preempt pods of the same priority, so EDL must.
//   - any other pod that may preempt takes trainers above their minimum from
//     jobs of a lower priority: all such pods in one plan, so that one
//     replicas change per job frees what kube-scheduler would otherwise
//     preempt one pod at a time, and no victim is re-created only to be
//     trimmed.
//
// Each pod first takes room that earlier yields of the plan left over on a
// node it may use, and only then makes room, on one node, removing no more
// than it needs there: all the pods together cost at most what they request
// plus one trainer per node freed. A pod that may run on no node even empty,
// or that no node could hold even with every trainer it may take gone, takes
// nothing.
func (p *plan) yieldToPods(claims []*snapshot.PendingPod) {
	if len(p.movable) == 0 {
		return
	}
	for _, pod := range claims {
		c := claim{priority: pod.Priority, share: pod.Job != "", own: pod.Job, never: pod.PreemptNever,
			elig: p.classes.set(pod.Placement)}
		req := vecOf(pod.Request)
		shape := pendingShape{claim: c, req: req}
		if p.hopeless[shape] || !p.couldHold(req, c.elig) {
			// Nothing was freed for an identical pod; removals since then
			// were made for other pods and used by them.
			continue
		}
		if n := p.fit.firstFit(req, c.elig); n >= 0 {
			// Room an earlier pod's yield left over: growth's load
			// still counts the trainers removed, as for makeRoomAt.
			p.fit.take(n, req)
			p.bindsSoon(n, req)
			p.waiting = append(p.waiting, pod)
			continue
		}
		if n, ok := p.makeRoomAt(c, req); ok {
			p.bindsSoon(n, req)
			p.waiting = append(p.waiting, pod)
			continue
		}
		if p.hopeless == nil {
			p.hopeless = map[pendingShape]bool{}
		}
		p.hopeless[shape] = true
	}
}

// couldHold reports whether some node e allows could hold req if it were
// empty: a pod bigger than any such node waits for good, and searching for
// evictions for it would only cost time.
func (p *plan) couldHold(req vec, e *eligible) bool {
	if e.perNode {
		for _, n := range e.nodes {
			if req.fitsIn(vecOf(p.nodes[n].Allocatable)) {
				return true
			}
		}
		return false
	}
	for _, id := range e.classes {
		for _, n := range p.classes.members[id] {
			if req.fitsIn(vecOf(p.nodes[n].Allocatable)) {
				return true
			}
		}
	}
	return false
}

// slot is a trainer that could be removed to free its node: victims[pos] of
// job, costing cost running trainers: itself, the job's trainers the
// ReplicaSet deletes before it (newer ones that do not run yet) and, for a
// running trainer, the job's running ones picked before it on the node.
type slot struct {
	job  *jobState
	pos  int32
	cost int32
	drop int32 // trainers the job loses in all
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
	never    bool      // preemptionPolicy Never: it takes from its own priority only
	elig     *eligible // the nodes it may run on
	admit    string    // the queued job whose minimum it is, for admit; "" for a pending pod
}

// eviction is a way to make room on one node: every trainer of jobs[i] up to
// victims index cuts[i] goes, except that of its running trainers only those
// on node go (picked: [plan.pickRunning]).
type eviction struct {
	node    int
	jobs    []*jobState
	cuts    []int
	maxPrio int32   // the highest priority that loses a trainer
	running int64   // bound trainers removed: the real disruption
	removed int64   // all trainers removed
	reach   int64   // how far into the jobs' deletion order the cuts go
	fulfil  float64 // fulfillment of the first job cut
}

// clone copies e out of the planner's scratch eviction.
func (e *eviction) clone() *eviction {
	c := *e
	c.jobs, c.cuts = slices.Clone(e.jobs), slices.Clone(e.cuts)
	return &c
}

// better orders evictions the way kube-scheduler's preemption orders nodes:
// the lowest highest-victim priority, then the fewest victims.
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
	// Among equal disruption the most fulfilled job gives back, by placed
	// trainers: a job whose trainers are mostly pending is not a rich one,
	// as the original EDL's desired count made it. Removing not-yet-scheduled
	// trainers costs nothing.
	if e.fulfil != o.fulfil {
		return e.fulfil > o.fulfil
	}
	if e.removed != o.removed {
		return e.removed < o.removed
	}
	// The newest trainers, which the ReplicaSet deletes first anyway:
	// fewer picks to mark, and the least training lost.
	if e.reach != o.reach {
		return e.reach < o.reach
	}
	return e.node < o.node
}

// yieldable reports whether j may lose trainers to c.
func (p *plan) yieldable(j *jobState, c claim) bool {
	return j.movable && !j.stopping && j.slack() > 0 && j.key != c.own &&
		((j.priority < c.priority && !c.never) || (c.share && j.priority == c.priority))
}

// makeRoomAt removes trainers of the jobs c may take from so that req fits
// on one node, places the pod there and returns that node. It reports false,
// changing nothing, when no node can be freed enough.
func (p *plan) makeRoomAt(c claim, req vec) (int, bool) {
	best := p.cheapestEviction(c, req)
	if best == nil {
		return -1, false
	}
	for i, j := range best.jobs {
		nodes := &j.yieldNodes
		switch {
		case c.admit != "":
			nodes = &j.admitNodes
		case j.priority == c.priority:
			nodes = &j.shareNodes
		}
		if *nodes == nil {
			*nodes = map[int32]bool{}
		}
		(*nodes)[int32(best.node)] = true // #nosec G115 -- a node index: far fewer than 2^31 nodes
		picked := len(j.picked)
		p.cut(j, best.cuts[i], best.node)
		if c.admit == "" && best.running == 1 && len(best.jobs) == 1 && p.anyTrainerDoes(j, c, req) {
			// Any running trainer of the job frees room the pod may
			// use: the ReplicaSet's own choice will do, and marking it
			// would cost a write.
			j.picked = j.picked[:picked]
		}
	}
	p.fit.take(best.node, req)
	return best.node, true
}

// anyTrainerDoes reports whether removing any one running trainer of j
// would make room for a pod of c's asking req: the pod asks no more than a
// trainer in every resource, and may run on every node j's trainers run on.
// A bulk yield to a burst of small pods then needs no pod-deletion-cost
// marks, one write per trainer, only the replicas patch. The answer is
// cached: the job's trainers only go during a plan.
func (p *plan) anyTrainerDoes(j *jobState, c claim, req vec) bool {
	key := anyTrainerKey{job: j, elig: c.elig, req: req}
	if ok, cached := p.anyTrainer[key]; cached {
		return ok
	}
	ok := true
	for k := j.next; k < len(j.victims) && ok; k++ {
		if v := &j.victims[k]; v.bound {
			n := p.nodeOf(j, v)
			ok = n >= 0 && c.elig.has(n, p.classes.classOf[n]) && req.fitsIn(v.req)
		}
	}
	if p.anyTrainer == nil {
		p.anyTrainer = map[anyTrainerKey]bool{}
	}
	p.anyTrainer[key] = ok
	return ok
}

// anyTrainerKey is what anyTrainerDoes depends on besides the request.
type anyTrainerKey struct {
	job  *jobState
	elig *eligible
	req  vec
}

// cheapestEviction searches with growing cost: victims of the lowest
// priority first, and within a priority level cuts that take at most C
// running trainers from any one job, C = 1, 2, 4, … (the first C that works
// for one pod is where the search starts for an identical one). A ReplicaSet
// deletes a job's pods that do not run before any running one, so freeing a
// node may mean removing those too; the search counts them. Running trainers
// are picked by node ([plan.pickRunning]): only those on the node freed go. A search
// passes over the running trainers of the jobs that may give; the worst case
// is a few such passes.
func (p *plan) cheapestEviction(c claim, req vec) *eviction {
	var levels []int32
	for _, j := range p.movable {
		if p.yieldable(j, c) {
			levels = append(levels, j.priority)
		}
	}
	slices.Sort(levels)
	levels = slices.Compact(levels)
	shape := pendingShape{claim: c, req: req}
	for _, level := range levels {
		// Identical pods (a Deployment's replicas) tend to need the same
		// depth: start where the last one succeeded. A larger c only adds
		// candidates, so this never finds a costlier eviction.
		depth := max(1, p.depth[shape])
		for {
			e, truncated := p.evictionWithin(c, level, depth, req)
			if e != nil {
				if p.depth == nil {
					p.depth = map[pendingShape]int32{}
				}
				p.depth[shape] = depth
				return e
			}
			if !truncated || depth >= math.MaxInt32/2 {
				break
			}
			depth *= 2
		}
	}
	return nil
}

// evictionWithin finds the best eviction for c taking only from jobs of
// priority at most level, at most depth running trainers per job. truncated
// reports whether depth held any job back, i.e. whether a larger depth could
// find more.
func (p *plan) evictionWithin(c claim, level, depth int32, req vec) (best *eviction, truncated bool) {
	if p.cands == nil {
		p.cands = make([][]slot, len(p.nodes))
	}
	var touched []int32
	for _, j := range p.movable {
		if !p.yieldable(j, c) || j.priority > level {
			continue
		}
		last := j.next + int(j.slack())
		cost := int32(0)
		k := j.next
		for ; k < last && k < j.runFrom; k++ {
			v := &j.victims[k]
			if v.bound {
				if cost == depth {
					truncated = true
					break
				}
				cost++
			}
			if n := p.nodeOf(j, v); n >= 0 && c.elig.has(n, p.classes.classOf[n]) {
				touched = p.addCand(touched, n, slot{job: j, pos: int32(k), cost: cost, drop: int32(k - j.next + 1)}) // #nosec G115 -- an index of the job's victims, one per trainer
			}
		}
		if k < last && k >= j.runFrom {
			var held bool
			touched, held = p.pickRunning(j, c, k, last-k, cost, depth, touched)
			truncated = truncated || held
		}
	}
	// better breaks ties by node index, so the visiting order does not
	// matter for the result.
	for _, n := range touched {
		if e := p.nodeEviction(int(n), p.cands[n], req); e != nil && e.better(best) {
			best = e.clone()
		}
	}
	for _, n := range touched {
		p.cands[n] = p.cands[n][:0]
	}
	return best, truncated
}

// addCand adds s to node n's candidates, and n to touched when it is new.
func (p *plan) addCand(touched []int32, n int32, s slot) []int32 {
	if len(p.cands[n]) == 0 {
		touched = append(touched, n)
	}
	p.cands[n] = append(p.cands[n], s)
	return touched
}

// nodeEviction greedily frees node n for req from its candidate trainers:
// lowest priority first, then cheapest, then from the most fulfilled job. Cutting a job at one trainer also
// frees its other trainers on n that the ReplicaSet deletes before it.
func (p *plan) nodeEviction(n int, cands []slot, req vec) *eviction {
	upper := p.free[n]
	for _, s := range cands {
		upper = upper.plus(s.job.victims[s.pos].req)
	}
	if !req.fitsIn(upper) {
		return nil
	}
	slices.SortFunc(cands, func(a, b slot) int {
		if a.job.priority != b.job.priority {
			return int(a.job.priority) - int(b.job.priority)
		}
		if a.cost != b.cost {
			return int(a.cost - b.cost)
		}
		if c := giveCmp(a.job, b.job); c != 0 {
			return -c // the most fulfilled (or, by goodput, the one losing least) gives back first
		}
		if c := cmpString(a.job.key, b.job.key); c != 0 {
			return c
		}
		return int(a.pos - b.pos)
	})
	// Every node a pod fits on after evictions gets one: the scratch
	// eviction is reused, and only the best so far is copied.
	e := &p.evScratch
	*e = eviction{node: n, maxPrio: math.MinInt32, jobs: e.jobs[:0], cuts: e.cuts[:0]}
	costs, drops := p.costScratch[:0], p.dropScratch[:0]
	defer func() { p.costScratch, p.dropScratch = costs, drops }()
	avail := p.free[n]
	for _, s := range cands {
		if req.fitsIn(avail) {
			break
		}
		ji := slices.Index(e.jobs, s.job)
		if ji < 0 {
			e.jobs = append(e.jobs, s.job)
			e.cuts = append(e.cuts, s.job.next-1)
			costs, drops = append(costs, 0), append(drops, 0)
			ji = len(e.jobs) - 1
		}
		if int(s.pos) <= e.cuts[ji] {
			continue
		}
		for _, o := range cands {
			if o.job == s.job && int(o.pos) > e.cuts[ji] && o.pos <= s.pos {
				avail = avail.plus(s.job.victims[o.pos].req)
			}
		}
		e.cuts[ji], costs[ji], drops[ji] = int(s.pos), s.cost, s.drop
	}
	if !req.fitsIn(avail) || len(e.jobs) == 0 {
		return nil
	}
	e.fulfil = e.jobs[0].fulfillment()
	for i, j := range e.jobs {
		e.maxPrio = max(e.maxPrio, j.priority)
		e.running += int64(costs[i])
		e.removed += int64(drops[i])
		e.reach += int64(e.cuts[i] - j.next)
	}
	return e
}
