package planner

import (
	"slices"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// Plan decides the trainer replicas of the elastic jobs for one cycle and
// returns the jobs whose replicas should change, sorted by key, each with a
// reason. It is pure: it works on a private copy of snap and jobs, never
// modifies them, reads no clock (opts.Now is the time) and calls no API.
//
// It reserves room for what waits for a node — kept trainers not scheduled
// yet, and unschedulable pods that fit or that kube-scheduler nominated a
// node for ([plan.reserve]) — then runs the phases, each a method of its own:
// make room for the jobs below their minimum and for pods of a higher
// priority ([plan.yieldToPods]), yield to load and
// give up trainers that cannot be placed ([plan.yieldToLoad]), rebalance ([plan.rebalance]),
// under goodput give back the trainers that slow their jobs ([plan.shed]),
// and grow ([plan.grow]). docs/autoscaler.md explains each rule, why it is
// there, and which of the original EDL's defects it avoids.
//
// Jobs with Min == Max, Current outside [Min, Max], an empty or negative
// Request, or a duplicate Key are never moved, but their trainers are still
// accounted.
func Plan(snap snapshot.Snapshot, jobs []Job, opts Options) []ScaleAction {
	return Decide(snap, jobs, Queue{}, opts).Actions
}

// Decide is Plan with gang admission and explanations: after the room for
// what waits for a node is reserved and made, it admits the queued jobs whose
// whole minimum fits their nodes and their namespace's quota, in order, with
// a reservation for the head of the queue and, with Options.Preemption, by
// stopping whole running jobs of a lower priority ([plan.admit], [plan.preempt]),
// before the phases that shed load and grow; and it says why every job has
// the trainers it has after the plan ([plan.explanations]): one Explanation per job,
// sorted by key. With no queued jobs its actions are Plan's.
func Decide(snap snapshot.Snapshot, jobs []Job, queue Queue, opts Options) Decision {
	placements := make([]*snapshot.Placement, 0, len(queue.Jobs)+len(snap.Unplaced))
	for i := range snap.Unplaced {
		placements = append(placements, snap.Unplaced[i].Placement)
	}
	for _, q := range append(slices.Clip(queue.Jobs), queue.Starting...) {
		for _, s := range q.Pods {
			placements = append(placements, s.Placement)
		}
	}
	for i := range queue.Arriving {
		placements = append(placements, queue.Arriving[i].Placement)
	}
	p := newPlan(snap, jobs, opts, placements...)
	p.priceResizes()
	claims := p.reserve(snap.Pending)
	p.yieldToPods(claims)
	p.reserveUnplaced(snap.Unplaced, queue.Jobs)
	p.reserveStarting(queue.Starting)
	var d Decision
	d.Admitted, d.Waiting, d.Preempted = p.admit(queue)
	p.arrive(queue, d.Admitted)
	p.yieldToLoad()
	p.trimStuck()
	p.startGrowth()
	p.shareOut(queue)
	p.rebalance()
	p.shed()
	p.grow()
	actions := p.actions()
	d.Actions, d.Jobs = actions, p.explanations(actions)
	if p.teams != nil {
		d.Teams = p.shares()
	}
	return d
}
