package trace

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// Policy is how the simulated edl plans the jobs of a run: a small value
// that says what each job's TrainingJob asks for (its min and max
// trainers), what the planner is told of the job beyond what edl's own
// inputs say, and which options it plans with. Everything else — the
// snapshot, the queue, the planner.Job that pkg/autoscaler builds from a
// TrainingJob and the cluster — is the same for every policy.
type Policy struct {
	// Name is the policy's name in flags and results.
	Name string
	// Trainers are the job's trainer min-instance and max-instance.
	Trainers func(j *JobSpec) (lo, hi int32)
	// Job, when set, adds to the planner.Job edl builds for the job what
	// the policy gives the planner. It may read the job's progress
	// reports; an oracle may read spec.App, the truth, which no other
	// policy shows the planner.
	Job func(pj *planner.Job, reports Reports, spec *JobSpec)
	// Options, when set, changes edl's default plan options.
	Options func(o *planner.Options)
	// Learns: the policy reads Reports.Status, which the run then keeps
	// from the jobs' progress reports ([sim.report]); the others skip them,
	// which are a third of a run's time.
	Learns bool
}

// Reports are what a job's progress reports have told edl so far, as
// edl's progress status keeps them: how far the job is, the size of its
// last report, and the work it did at each size it ran at — never the
// trace's step times. A report is taken to reach edl at once.
type Reports struct {
	// Done and Total are the steps done and the steps in all; Batch is
	// the global batch, the samples of a step.
	Done, Total, Batch float64
	// Trainers and Nodes are the size the job runs at, 0 while it does
	// not train.
	Trainers, Nodes int32
	// Measured is, per size the job trained at, in the order first run
	// at, the steps done there and the seconds they took, restarts left
	// out.
	Measured []SizeThroughput
	// RestartCost is the last restart's cost, 0 before one.
	RestartCost float64
	// Status is the job's status.progress as edl advanced it from the
	// reports ([sim.report]); nil before the first.
	Status *v1.ProgressStatus
}

// SizeThroughput is the work a job did at one size: Steps/Seconds is its
// throughput there.
type SizeThroughput struct {
	Trainers, Nodes int32
	Steps, Seconds  float64
}

// Fulfillment is the planner as edl runs it: the job keeps its global
// batch, and its trainers range over the local batches its application
// was measured at ([Application.Trainers]), at most the cluster's GPUs.
func Fulfillment(gpus int) Policy {
	return Policy{Name: "fulfillment", Trainers: func(j *JobSpec) (int32, int32) {
		lo, hi := j.App.Trainers(j.Batch)
		return lo, min(hi, int32of(gpus))
	}}
}

// Static runs each job at the workload file's num_replicas, both its min
// and its max: queued, admitted when it fits, never resized.
func Static() Policy {
	return Policy{Name: "static", Trainers: func(j *JobSpec) (int32, int32) { return j.Replicas, j.Replicas }}
}

// Policies are the policies there are, for a cluster of gpus GPUs, in the
// order the results list them.
func Policies(gpus int) []Policy {
	return []Policy{Fulfillment(gpus), Goodput(gpus), Static(), Oracle(gpus)}
}

// PolicyNames are the names of the policies there are.
func PolicyNames() []string {
	var names []string
	for _, p := range Policies(1) {
		names = append(names, p.Name)
	}
	return names
}

// LookupPolicies returns the named policies, for a cluster of gpus GPUs,
// in the order named; an unknown name, or one named twice, is an error
// that names it.
func LookupPolicies(names []string, gpus int) ([]Policy, error) {
	all := Policies(gpus)
	out := make([]Policy, 0, len(names))
	for k, n := range names {
		i := slices.IndexFunc(all, func(p Policy) bool { return p.Name == n })
		switch {
		case i < 0:
			return nil, fmt.Errorf("unknown policy %q: the policies are %s", n, strings.Join(PolicyNames(), ", "))
		case slices.Contains(names[:k], n):
			return nil, fmt.Errorf("policy %q named twice", n)
		}
		out = append(out, all[i])
	}
	return out, nil
}
