package experiment

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TrainerWait is how long one trainer pod that EDL's growth added waited
// for a node.
type TrainerWait struct {
	Pod, Job string
	// Pool is the pool the pod selects (its node selector's PoolLabel);
	// CPUPool when it selects none.
	Pool    string
	Created time.Duration
	// Bound is when it was first seen bound to a node; Deleted when it was
	// deleted before that. Negative: not (yet).
	Bound, Deleted time.Duration
}

// Wait is the time the pod waited for a node: until it was bound, deleted,
// or end.
func (w TrainerWait) Wait(end time.Duration) time.Duration {
	switch {
	case w.Bound >= 0:
		return w.Bound - w.Created
	case w.Deleted >= 0:
		return w.Deleted - w.Created
	}
	return end - w.Created
}

// growth tells the trainer pods EDL's growth added from the others (a job's
// first trainers, and those a ReplicaSet re-creates for a preempted or
// deleted one) and times how long they wait for a node. A rise of a trainer
// ReplicaSet's replicas from a to b owes the job b − a pods: the next b − a
// trainer pods of the job that appear are growth's. A fall cancels what is
// still owed. The ReplicaSet's first replicas (the job's start) owe nothing.
//
// It is not safe for concurrent use; the Recorder calls it under its lock.
type growth struct {
	replicas map[string]int32 // the trainer ReplicaSet's replicas, by job
	owed     map[string]int32 // growth's pods not yet seen, by job
	seen     map[types.UID]bool
	waits    map[types.UID]*TrainerWait
}

func newGrowth() *growth {
	return &growth{replicas: map[string]int32{}, owed: map[string]int32{}, seen: map[types.UID]bool{}, waits: map[types.UID]*TrainerWait{}}
}

// scaled records the replicas of job's trainer ReplicaSet.
func (g *growth) scaled(job string, replicas int32) {
	prev, known := g.replicas[job]
	g.replicas[job] = replicas
	switch {
	case !known:
	case replicas > prev:
		g.owed[job] += replicas - prev
	case replicas < prev:
		g.owed[job] = max(0, g.owed[job]-(prev-replicas))
	}
}

// pod records an event of a trainer pod of job at time at: bound says it
// has a node, gone that it is deleted or being deleted.
func (g *growth) pod(uid types.UID, name, job, pool string, bound, gone bool, at time.Duration) {
	if !g.seen[uid] {
		g.seen[uid] = true
		if gone || g.owed[job] == 0 {
			return
		}
		g.owed[job]--
		if pool == "" {
			pool = CPUPool
		}
		g.waits[uid] = &TrainerWait{Pod: name, Job: job, Pool: pool, Created: at, Bound: -1, Deleted: -1}
	}
	w := g.waits[uid]
	if w == nil || w.Bound >= 0 || w.Deleted >= 0 {
		return
	}
	switch {
	case bound:
		w.Bound = at
	case gone:
		w.Deleted = at
	}
}

// list returns the growth pods seen, in creation order.
func (g *growth) list() []TrainerWait {
	return inCreationOrder(g.waits, func(w TrainerWait) (time.Duration, string) { return w.Created, w.Pod })
}
