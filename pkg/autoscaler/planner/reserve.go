package planner

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// UntriedGrace is how long a pod kube-scheduler has not tried yet waits
// before a plan yields to it: the scheduler tries a new pod within
// milliseconds, and preempts for it, unless a burst keeps it busy — then the
// plan frees the room of the pods it has not reached, in bulk, before it
// preempts for them one at a time.
const UntriedGrace = time.Second

// reserve finds room for what waits for a node, in the order kube-scheduler's
// queue takes it — the highest priority first, pods before trainers of a
// priority, the oldest first — so that growth does not hand that room out:
//
//   - the kept trainers of the jobs that are not scheduled yet (replicas
//     not created, pods not tried) go where they fit, on nodes they may use;
//   - an unschedulable pod that kube-scheduler nominated a node for (it
//     preempted pods there and waits for them to go) gets that node's room;
//   - an unschedulable pod that fits somewhere it may run — counting the
//     room of pods that are going — keeps that room: the scheduler places
//     it at its next try.
//
// reserve returns the unschedulable pods that fit nowhere as claims for
// [plan.yieldToPods], which frees room for them by scaling down:
//
//   - a TrainingJob's own pods below its minimum, which kube-scheduler
//     cannot place among jobs of their priority;
//   - any other pod that outranks some elastic job's trainers and may
//     preempt. kube-scheduler would preempt for it one pod at a time, and
//     the ReplicaSet controller would re-create every victim only for EDL to
//     trim it (trimStuck); all such pods are yielded to in one plan instead,
//     one replicas change per job, with the trainers to go picked on the
//     nodes the pods may use, so the scheduler binds rather than preempts.
//
// A pod kube-scheduler has not tried yet ([snapshot.PendingPod.Untried])
// counts as one it found no node for once it has waited [UntriedGrace]. Any
// other unschedulable pod costs the elastic jobs nothing: one that may not
// preempt, or that is of a lower priority than every trainer, waits.
func (p *plan) reserve(pending []snapshot.PendingPod) []*snapshot.PendingPod {
	type waiter struct {
		priority int32
		pod      *snapshot.PendingPod // nil for a trainer
		job      *jobState
		k        int // victims index of the trainer
	}
	var ws []waiter
	for _, j := range p.jobs {
		for k := j.next; k < len(j.victims); k++ {
			v := &j.victims[k]
			switch {
			case v.bound:
				j.placed++
			case v.unsched:
				j.unschedulable = true
			case v.req.negative():
				j.starved = true
			default:
				ws = append(ws, waiter{priority: j.priority, job: j, k: k})
			}
		}
	}
	// An elastic job's trainers beyond Min are opportunistic: nobody yields
	// for them. Up to Min they are the job's right to run — those it keeps:
	// an unschedulable trainer the ReplicaSet controller is deleting (more
	// pods than replicas) claims nothing.
	belowMin := make(map[string]int64, len(p.jobs))
	for _, j := range p.jobs {
		var kept int64
		for k := j.next; k < len(j.victims); k++ {
			if j.victims[k].unsched {
				kept++
			}
		}
		belowMin[j.key] = min(kept, max(0, j.min-j.placed))
	}
	for i := range pending {
		ws = append(ws, waiter{priority: pending[i].Priority, pod: &pending[i]})
	}
	slices.SortStableFunc(ws, func(a, b waiter) int {
		if a.priority != b.priority {
			return cmp.Compare(b.priority, a.priority)
		}
		if (a.pod == nil) != (b.pod == nil) {
			if a.pod != nil {
				return -1
			}
			return 1
		}
		if a.pod != nil {
			return cmp.Or(a.pod.Created.Compare(b.pod.Created), strings.Compare(a.pod.Namespace, b.pod.Namespace),
				strings.Compare(a.pod.Name, b.pod.Name))
		}
		return cmp.Or(strings.Compare(a.job.key, b.job.key), cmp.Compare(a.k, b.k))
	})

	var claims []*snapshot.PendingPod
	for _, w := range ws {
		if w.pod == nil {
			j, v := w.job, &w.job.victims[w.k]
			if n := p.fit.firstFit(v.req, j.elig); n >= 0 {
				v.node = int32(n) // #nosec G115 -- a node index: far fewer than 2^31
				p.fit.take(n, v.req)
				p.expect(n, v.req)
				j.placed++
			} else {
				j.starved = true
			}
			continue
		}
		pod := w.pod
		req := vecOf(pod.Request)
		if req.negative() {
			continue
		}
		claim := pod.Job != "" && pod.Priority >= p.minPrio || pod.Priority > p.minPrio && !pod.PreemptNever
		if pod.Untried && p.opts.Now.Sub(pod.Created) < UntriedGrace {
			// kube-scheduler tries a new pod within milliseconds unless a
			// burst keeps it busy, and preempts for it at once: a yield
			// now would only add to its victims.
			claim = false
		}
		if j, planned := p.byKey[pod.Job]; planned && pod.Trainer {
			// The job's own unschedulable trainer: it waits as one of the
			// job's victims, and claims room only up to the job's minimum.
			if belowMin[j.key] <= 0 {
				continue
			}
			belowMin[j.key]--
		}
		if n, ok := p.nodeIdx[pod.NominatedNode]; ok {
			p.fit.take(int(n), req)
			p.expect(int(n), req)
			p.bindsSoon(int(n), req)
			p.waiting = append(p.waiting, pod)
			continue
		}
		if n := p.fit.firstFit(req, p.classes.set(pod.Placement)); n >= 0 {
			p.fit.take(n, req)
			p.expect(n, req)
			p.bindsSoon(n, req)
			p.waiting = append(p.waiting, pod)
			continue
		}
		if claim {
			claims = append(claims, pod)
		}
	}
	return claims
}
