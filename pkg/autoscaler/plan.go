package autoscaler

import (
	"time"

	"github.com/paddlepaddle/edl/pkg/cluster"
)

// Plan decides the trainer replicas of the elastic jobs for one cycle and
// returns the jobs whose replicas should change, sorted by key, each with a
// reason. It is pure: it works on a private copy of snap and jobs, never
// modifies them, reads no clock (opts.Now is the time) and calls no API.
//
// It reserves room for the kept trainers that are not scheduled yet (state.go),
// then runs the phases, each in a file of its own: yield to priority
// (yield.go), yield to load and give up stuck trainers (load.go), rebalance
// (rebalance.go) and grow (grow.go). The yield phases wait while trainers are
// terminating (Settling) or a scale-down is not carried out yet (converging).
// docs/autoscaler.md explains each rule, why it is there, and which of the
// original EDL's defects it avoids.
//
// Jobs with Min == Max, Current outside [Min, Max], an empty or negative
// Request, or a duplicate Key are never moved, but their trainers are still
// accounted.
func Plan(snap cluster.Snapshot, jobs []Job, opts Options) []ScaleAction {
	p := newPlanner(snap, jobs, opts)
	p.reserve()
	p.growLoad = p.requested
	if Settling(snap, opts.Now) == 0 && !converging(jobs) {
		p.yieldToPriority(snap.Pending)
		p.yieldToLoad()
		p.trimStuck()
		p.rebalance()
	}
	p.grow()
	return p.actions()
}

// converging reports whether a job has more live trainer pods than its
// ReplicaSet's replicas: the ReplicaSet controller has yet to delete some.
func converging(jobs []Job) bool {
	for i := range jobs {
		if len(jobs[i].Trainers) > int(jobs[i].Current) {
			return true
		}
	}
	return false
}

// settleSlack is how long after its grace period a terminating trainer still
// holds back the yield phases; one that takes longer is stuck (on a lost
// node, behind a finalizer) and must not freeze the autoscaler.
const settleSlack = 30 * time.Second

// Settling counts the trainers of snap that are terminating and not stuck at
// now; while there are any, Plan takes no trainer away.
func Settling(snap cluster.Snapshot, now time.Time) int {
	n := 0
	for _, end := range snap.TerminatingTrainers {
		if now.Before(end.Add(settleSlack)) {
			n++
		}
	}
	return n
}
