package planner

import (
	"slices"
	"time"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// arrive adds to growth's line the jobs admitted and not Running yet: those
// of queue.Arriving and those this plan admitted. Plan sees a job only once
// it is Running, and jobs admitted together reach Running cycles apart (the
// ReplicaSet controller creates their pods at its own pace): without this,
// the first to run would grow into all the room the others could use, and
// rebalancing would then stop its new trainers to even them out. So growth
// plans for an arriving job as if it ran — at its minimum, it is among the
// least fulfilled — and keeps what it would grow into idle for it, with no
// action: once it runs, the room is there.
//
// A job keeps its share while pods of its minimum are still to be created,
// and for one cool-down after its admission or its newest pod's creation,
// whichever is later: a job whose pods all exist and that does not start (an
// image that cannot be pulled) does not keep the room for long.
func (p *plan) arrive(queue Queue, admitted []Admission) {
	if p.opts.CoolDown <= 0 {
		return
	}
	creating := map[string]bool{}
	for _, q := range queue.Starting {
		creating[q.Key] = true
	}
	candidates := slices.Clip(queue.Arriving)
	for _, a := range admitted {
		for i := range queue.Jobs {
			if q := &queue.Jobs[i]; q.Key == a.Job {
				if arr, ok := q.Arriving(p.opts.Now); ok {
					candidates = append(candidates, arr)
					creating[q.Key] = true
				}
				break
			}
		}
	}
	seen := map[string]bool{}
	for i := range candidates {
		a := &candidates[i]
		req := vecOf(a.Request)
		if _, running := p.byKey[a.Key]; running || seen[a.Key] || a.Min >= a.Max || a.Min < 0 ||
			req.isZero() || req.negative() || (!creating[a.Key] && p.opts.Now.Sub(p.lastArrival(a)) >= p.opts.CoolDown) {
			continue
		}
		seen[a.Key] = true
		j := &jobState{
			key: a.Key, min: int64(a.Min), max: int64(a.Max), desired: int64(a.Min), placed: int64(a.Min),
			priority: a.Priority, req: req, lim: vecOf(a.Limits), ns: namespaceOf(a.Key),
			elig: p.classes.set(a.Placement), movable: true, arriving: true,
			rebalanceState: rebalanceState{takerAt: -1},
			goodputState:   goodputState{goodput: p.opts.Policy == PolicyGoodput},
		}
		j.pool = p.poolOfSet(j.elig)
		p.arriving = append(p.arriving, j)
	}
}

// lastArrival is when the arriving job was admitted or its newest pod was
// created, whichever is later.
func (p *plan) lastArrival(a *ArrivingJob) time.Time {
	last := a.Admitted
	for _, pods := range [][]TrainerPod{p.snap.Trainers[a.Key], p.snap.Servers[a.Key]} {
		for k := range pods {
			if pods[k].Created.After(last) {
				last = pods[k].Created
			}
		}
	}
	return last
}

// Arriving is queued job q as an arriving job admitted at admitted; false
// when q has no trainers or is not elastic.
func (q *QueuedJob) Arriving(admitted time.Time) (ArrivingJob, bool) {
	for _, s := range q.Pods {
		if s.Role == v1.RoleTrainer.Name() && s.Count < q.MaxTrainers {
			return ArrivingJob{Key: q.Key, Priority: q.Priority, Min: s.Count, Max: q.MaxTrainers, Admitted: admitted,
				Request: s.Request, Limits: s.Limits, Placement: s.Placement}, true
		}
	}
	return ArrivingJob{}, false
}
