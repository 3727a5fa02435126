package autoscaler

import (
	"container/heap"
	"math"
)

// over returns a bit per resource whose load exceeds the threshold. Growth
// uses the same comparison, so the two can never disagree (the original EDL
// checked GPUs against the total to grow and against max_load_desired of it
// to shrink, and added and removed a GPU trainer forever).
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
//
// This is also how the jobs yield to pods of a higher priority: kube-scheduler
// preempts the trainers it needs (the fewest, on the best node), the
// ReplicaSet recreates them, and the new pods find no room — the room the
// preemptor waits for is reserved for it — so they are given back here.
func (p *planner) trimStuck() {
	for _, j := range p.movable {
		for j.slack() > 0 {
			v := &j.victims[j.next]
			if !v.unsched || v.holds() || p.fit.firstFit(v.req, j.elig) >= 0 {
				break
			}
			p.removeNext(j)
			j.stuck++
		}
		if j.stuck > 0 {
			for _, pod := range p.waiting {
				if pod.Priority > j.priority {
					j.stuckOutranked = true
					break
				}
			}
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
