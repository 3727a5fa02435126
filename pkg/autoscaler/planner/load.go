package planner

import "container/heap"

// yieldToLoad takes trainers back while a resource is over the threshold
// in their pool. A trainer's removal relieves the pool of the node it runs
// on, which is its job's unless the node's labels changed under it.
func (p *plan) yieldToLoad() {
	h := &jobHeap{less: shrinkFirst}
	for _, j := range p.movable {
		if j.slack() > 0 && !j.resizeHeld {
			h.items = append(h.items, j)
		}
	}
	heap.Init(h)
	for h.Len() > 0 && p.anyOver() {
		j := h.items[0]
		if j.slack() == 0 {
			heap.Pop(h)
			continue
		}
		v := &j.victims[j.next]
		pl := j.pool
		if n := p.nodeOf(j, v); n >= 0 && v.bound {
			pl = p.poolAt(int(n))
		}
		mask := p.over(pl, pl.requested)
		if mask == 0 || !touches(v.req, mask) {
			heap.Pop(h)
			continue
		}
		if j.loadValue == 0 {
			for r := range numRes {
				if mask&(1<<r) != 0 && v.req[r] > 0 {
					j.loadRes, j.loadValue, j.loadPooled = r, pl.load(r), pl != p.all
					break
				}
			}
		}
		p.removeNext(j)
		heap.Fix(h, 0)
	}
}

// anyOver reports whether some pool has a resource over the threshold.
func (p *plan) anyOver() bool {
	for i := range p.pools {
		if pl := &p.pools[i]; pl != p.all && p.over(pl, pl.requested) != 0 {
			return true
		}
	}
	return len(p.pools) == 1 && p.over(p.all, p.all.requested) != 0
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
func (p *plan) trimStuck() {
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
	if c := giveCmp(a, b); c != 0 {
		return c > 0
	}
	return a.key < b.key
}
