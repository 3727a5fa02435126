package autoscaler

import "container/heap"

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

// grow gives the capacity idle in the snapshot to the least fulfilled jobs,
// one trainer at a time.
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

// admits reports whether load keeps every resource req asks for within the
// threshold.
func (p *planner) admits(load, req vec) bool {
	for r := range numRes {
		if req[r] > 0 && p.exceeds(load[r], r) {
			return false
		}
	}
	return true
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
