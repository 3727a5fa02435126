package planner

import "github.com/paddlepaddle/edl/pkg/cluster/snapshot"

// yieldQuota makes namespace ns's quota hold a queued job's minimum (use)
// by taking trainers above their minimums from the namespace's running
// elastic jobs of q's priority or lower, the most fulfilled first: an
// elastic job that grew to fill its namespace's quota does not keep its
// team's next job waiting until it ends. It returns whether the quota
// holds the minimum now, and undo, which puts back what it took; when it
// cannot make the quota hold, it takes nothing.
func (p *plan) yieldQuota(q *QueuedJob, ns string, use quotaUse) (ok bool, undo func()) {
	saved := p.save()
	left, used := p.quotaFor(ns), p.quotaUsed(ns)
	before, usedBefore := *left, *used
	gave := map[*jobState]int64{} // trainers taken from each job, for q
	undo = func() {
		p.restore(saved)
		*left, *used = before, usedBefore
		for j, n := range gave {
			j.admitted = j.admitted[:len(j.admitted)-1]
			j.quotaGave -= n
		}
	}
	for p.quotaShort(ns, use) != "" {
		var giver *jobState
		for _, j := range p.movable {
			if j.ns != ns || j.priority > q.Priority || j.slack() <= 0 || j.arriving {
				continue
			}
			if giver == nil || giveFirst(j, giver) {
				giver = j
			}
		}
		if giver == nil {
			undo()
			return false, func() {}
		}
		if gave[giver] == 0 {
			giver.admitted = append(giver.admitted, admitFor{key: q.Key, need: use.req, priority: q.Priority})
		}
		gave[giver]++
		giver.quotaGave++
		if giver.victims[giver.next].created {
			// A replica not created yet is in no quota's used figures; and
			// the pods of the namespace never give back more than they use.
			refund(left, giver.req, giver.lim, p.quotaUsed(ns))
		}
		p.removeNext(giver)
	}
	return true, undo
}

// quotaUsed is what namespace ns's pods still use of its quota in this
// plan, as far as refunds go: the hard limits less the room the snapshot
// reports, less what refunds gave back already.
func (p *plan) quotaUsed(ns string) *snapshot.Quota {
	if p.quotaLeftToRefund == nil {
		p.quotaLeftToRefund = map[string]*snapshot.Quota{}
	}
	u := p.quotaLeftToRefund[ns]
	if u == nil {
		hard, left := p.snap.HardQuota(ns), p.snap.Quota(ns)
		sub := func(h, l int64) int64 {
			if h == snapshot.Unlimited || l == snapshot.Unlimited {
				return snapshot.Unlimited
			}
			return max(0, h-l)
		}
		u = &snapshot.Quota{Pods: sub(hard.Pods, left.Pods),
			Requests: snapshot.Resources{CPUMilli: sub(hard.Requests.CPUMilli, left.Requests.CPUMilli),
				MemoryMega: sub(hard.Requests.MemoryMega, left.Requests.MemoryMega), GPU: sub(hard.Requests.GPU, left.Requests.GPU)},
			Limits: snapshot.Resources{CPUMilli: sub(hard.Limits.CPUMilli, left.Limits.CPUMilli),
				MemoryMega: sub(hard.Limits.MemoryMega, left.Limits.MemoryMega), GPU: sub(hard.Limits.GPU, left.Limits.GPU)}}
		p.quotaLeftToRefund[ns] = u
	}
	return u
}

// refund gives one pod of request req and limits lim back to quota q, the
// inverse of spend, as far as used still holds it (used goes down by what
// is given back).
func refund(q *snapshot.Quota, req, lim vec, used *snapshot.Quota) {
	add := func(left *int64, v int64, holds *int64) {
		if *left == snapshot.Unlimited {
			return
		}
		if *holds != snapshot.Unlimited {
			v = min(v, *holds)
			*holds -= v
		}
		*left += v
	}
	add(&q.Pods, 1, &used.Pods)
	add(&q.Requests.CPUMilli, req[resCPU], &used.Requests.CPUMilli)
	add(&q.Requests.MemoryMega, req[resMemory], &used.Requests.MemoryMega)
	add(&q.Requests.GPU, req[resGPU], &used.Requests.GPU)
	add(&q.Limits.CPUMilli, lim[resCPU], &used.Limits.CPUMilli)
	add(&q.Limits.MemoryMega, lim[resMemory], &used.Limits.MemoryMega)
	add(&q.Limits.GPU, lim[resGPU], &used.Limits.GPU)
}

// quotaYields is yieldQuota for admit: it records undo, for a job that then
// finds no room on the nodes.
func (p *plan) quotaYields(q *QueuedJob, ns string, use quotaUse, undo *func()) bool {
	ok, u := p.yieldQuota(q, ns, use)
	if ok {
		*undo = u
	}
	return ok
}
