package planner

import (
	"slices"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// growFirst orders the jobs to give a trainer to: the highest priority,
// then the one that needs it most by the plan's policy (the least
// fulfilled, or the one it speeds up most), then the smallest request.
// Priority comes first: a job of a higher priority would take the room
// back by preemption anyway.
func growFirst(a, b *jobState) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if c := needCmp(a, a.placed, b, b.placed); c != 0 {
		return c < 0
	}
	if a.req != b.req {
		return a.req.less(b.req)
	}
	return a.key < b.key
}

// startGrowth takes stock once every reservation and removal that needs
// room is done: growth (and rebalancing, which plans for it) may use each
// node's free capacity less what pods that are going still hold, and each
// namespace's quota less what its jobs' unplaced replicas will take and
// what admission took or holds for the queue.
func (p *plan) startGrowth() {
	growFree := make([]vec, len(p.free))
	for n := range p.free {
		growFree[n] = p.free[n].minus(p.hold[n])
		for pl := p.poolAt(n); ; pl = p.all {
			if growFree[n][resCPU] > 0 {
				pl.idleNodes++
			}
			pl.idle = pl.idle.plus(growFree[n].max0())
			if pl == p.all {
				break
			}
		}
	}
	p.grower = newFitter(p.classes, growFree)
	for _, j := range p.arriving {
		p.quotaFor(j.ns) // their pods are in the quota's used figures, or Starting's
	}
	for _, j := range p.jobs {
		// What admission took is gone already (quotaFor).
		q := p.quotaFor(j.ns)
		// Replicas not created yet are not in the quota's used figures.
		for k := j.next; k < len(j.victims); k++ {
			if !j.victims[k].created {
				spend(q, j.req, j.lim)
			}
		}
	}
}

// mayGrow reports whether growth considers j at all.
func (p *plan) mayGrow(j *jobState) bool {
	return j.movable && j.desired < j.max && j.shrunk == 0 && !j.unschedulable && !j.starved && !j.resizeHeld
}

// quotaAllows reports whether j's namespace quota has room for n more of its
// trainers.
func (p *plan) quotaAllows(j *jobState, n int64) bool {
	q := p.quotas[j.ns]
	if q == nil {
		return true
	}
	fits := func(left int64, each int64) bool { return each <= 0 || left == snapshot.Unlimited || left/each >= n }
	return fits(q.Pods, 1) &&
		fits(q.Requests.CPUMilli, j.req[resCPU]) && fits(q.Requests.MemoryMega, j.req[resMemory]) && fits(q.Requests.GPU, j.req[resGPU]) &&
		fits(q.Limits.CPUMilli, j.lim[resCPU]) && fits(q.Limits.MemoryMega, j.lim[resMemory]) && fits(q.Limits.GPU, j.lim[resGPU])
}

// spend takes one pod of request req and limits lim from quota q.
func spend(q *snapshot.Quota, req, lim vec) {
	sub := func(left *int64, v int64) {
		if *left != snapshot.Unlimited {
			*left -= v
		}
	}
	sub(&q.Pods, 1)
	sub(&q.Requests.CPUMilli, req[resCPU])
	sub(&q.Requests.MemoryMega, req[resMemory])
	sub(&q.Requests.GPU, req[resGPU])
	sub(&q.Limits.CPUMilli, lim[resCPU])
	sub(&q.Limits.MemoryMega, lim[resMemory])
	sub(&q.Limits.GPU, lim[resGPU])
}

// grow gives the capacity idle in the snapshot to the jobs, one trainer at a
// time, in growFirst order, on nodes each job's trainers may use, within
// MaxLoadDesired and the namespace's quota.
func (p *plan) grow() {
	var line []*jobState
	for _, j := range p.movable {
		// A job cooling down is not grown, but it keeps its place in line:
		// see blockers below.
		if p.mayGrow(j) {
			line = append(line, j)
		}
	}
	// The jobs arriving take their place in line too; what they take is
	// kept idle for them ([plan.arrive]).
	line = append(line, p.arriving...)
	for _, j := range line {
		j.fitAtStart = p.grower.firstFit(j.req, j.elig) >= 0
	}
	h := newGrowLine(line, p.teams != nil)
	limit := int64(p.opts.MaxGrowPerCycle)
	var lastGrown *jobState
	// When a job cooling down comes first, giving the next trainer to a job
	// of its priority or lower would leave it behind once the cool-down ends
	// (rebalancing would give it back only a gap later, stopping trainers to
	// do so): the capacity it could use waits for it. Capacity it could
	// never use — nodes it may not run on, or too small for its trainer —
	// does not.
	var blockers []*jobState
	for !h.empty() {
		j := h.top()
		if j.coolingDown {
			blockers = append(blockers, j)
			h.pop()
			continue
		}
		switch {
		case j.desired >= j.max:
			j.stop = stopMax
		case limit > 0 && j.grown >= limit && !j.restarts(): // grown in one step: each step restarts it
			j.stop = stopCap
		case j.addsTooLittle():
			j.stop = stopGain
		case !p.loadAdmits(j):
			j.stop = stopLoad
		case !p.quotaAllows(j, 1):
			j.quotaHeld, j.stop = true, stopQuota
		case j.grown == 0 && j.notWorthRestart():
			j.stop = stopPrice
		}
		if j.stop != stopNone {
			h.pop()
			continue
		}
		n := p.grower.firstFit(j.req, p.unblocked(j, blockers))
		if n < 0 {
			j.stop, j.lostTo = stopNoFit, lastGrown
			h.pop()
			continue
		}
		if j.grown == 0 {
			j.growFulfilment, j.growPlaced = j.fulfillment(), j.placed
		}
		if j.grown == 0 && j.goodput {
			if j.passed = h.runnerUp(); j.passed != nil {
				j.passedAt = j.passed.placed
			}
		}
		p.grower.take(n, j.req)
		spend(p.quotas[j.ns], j.req, j.lim)
		p.expect(n, j.req)
		if j.arriving {
			j.pool.kept = j.pool.kept.plus(j.req)
		}
		j.desired++
		j.placed++
		j.grown++
		j.nodes = append(j.nodes, p.nodes[n].Name)
		lastGrown = j
		h.grew(j.req)
	}
	p.blockers = blockers
}

// growStop is why growth let a job go.
type growStop uint8

const (
	stopNone  growStop = iota
	stopMax            // at its max
	stopCap            // grown by MaxGrowPerCycle
	stopLoad           // one more trainer would pass the threshold
	stopQuota          // its namespace's quota has no room for one more
	stopNoFit          // no node it may use has room for one more
	stopGain           // goodput: one more trainer would add less than MinGain
	stopPrice          // goodput: one more trainer would save less than a restart costs
)

// unblocked is the part of j's nodes that no job cooling down ahead of it,
// of its priority or higher, could use.
func (p *plan) unblocked(j *jobState, blockers []*jobState) *eligible {
	var relevant []*jobState
	for _, b := range blockers {
		if b.priority >= j.priority {
			relevant = append(relevant, b)
		}
	}
	if len(relevant) == 0 {
		return j.elig
	}
	if j.unblockedFor == len(blockers) && j.unblockedSet != nil {
		return j.unblockedSet // blockers only come, so the count says it all
	}
	defer func() { j.unblockedFor = len(blockers) }()
	usable := func(n int32) bool {
		for _, b := range relevant {
			if b.elig.has(n, p.classes.classOf[n]) && b.req.fitsIn(vecOf(p.nodes[n].Allocatable)) {
				return true
			}
		}
		return false
	}
	out := &eligible{perNode: true}
	add := func(n int32) {
		if !usable(n) {
			out.nodes = append(out.nodes, n)
		}
	}
	if j.elig.perNode {
		for _, n := range j.elig.nodes {
			add(n)
		}
	} else {
		for _, id := range j.elig.classes {
			for _, n := range p.classes.members[id] {
				add(n)
			}
		}
		slices.Sort(out.nodes)
	}
	j.unblockedSet = out
	return out
}

// jobHeap is a heap of jobs in the order of less: the line of the jobs to
// grow, to take load from, or to rebalance between.
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
