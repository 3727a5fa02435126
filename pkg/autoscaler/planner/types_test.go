package planner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// res is shorthand for a request in CPU cores, memory GiB and GPUs.
func res(cpu float64, memGi int64, gpu int64) Resources {
	return Resources{CPUMilli: int64(cpu * 1000), MemoryMega: memGi * 1024, GPU: gpu}
}

type nodeSpec struct {
	name   string
	alloc  Resources
	labels map[string]string
	taints []corev1.Taint
}

// nodes returns count nodes named prefix-0.. with the same allocatable.
func nodes(prefix string, count int, alloc Resources) []nodeSpec {
	out := make([]nodeSpec, count)
	for i := range out {
		out[i] = nodeSpec{name: fmt.Sprintf("%s-%d", prefix, i), alloc: alloc}
	}
	return out
}

// otherPod is a pod that is not a trainer of a planned job.
type otherPod struct {
	name        string
	node        string // "" for pending
	priority    int32
	req         Resources
	job         string // set for pods of jobs not passed to Plan: trainers unless notTrainer
	notTrainer  bool   // a pserver or master of job
	nominated   string
	placement   *snapshot.Placement
	never       bool      // preemptionPolicy Never
	terminating bool      // bound and being deleted
	deadline    time.Time // when its grace period ends
	untried     bool      // pending, not tried by kube-scheduler yet; created at t0
}

func pendingPods(count int, priority int32, req Resources) []otherPod {
	out := make([]otherPod, count)
	for i := range out {
		out[i] = otherPod{name: fmt.Sprintf("pending-%d-%d", priority, i), priority: priority, req: req}
	}
	return out
}

// clusterOf builds the snapshot the cluster package would report for these
// nodes, jobs' trainers and other pods.
func clusterOf(ns []nodeSpec, jobs []Job, others ...otherPod) snapshot.Snapshot {
	r := snapshot.Snapshot{NodeCount: len(ns), Trainers: map[string][]TrainerPod{}}
	idx := map[string]int{}
	for i, n := range ns {
		r.CPUTotalMilli += n.alloc.CPUMilli
		r.MemoryTotalMega += n.alloc.MemoryMega
		r.GPUTotal += n.alloc.GPU
		r.Nodes = append(r.Nodes, snapshot.Node{Name: n.name, Labels: n.labels, Taints: n.taints, Allocatable: n.alloc, Free: n.alloc})
		idx[n.name] = i
	}
	use := func(node string, req Resources) {
		i, ok := idx[node]
		if !ok {
			return // pending, or on a node that does not count: no load
		}
		r.CPURequestMilli += req.CPUMilli
		r.MemoryRequestMega += req.MemoryMega
		r.GPURequest += req.GPU
		f := &r.Nodes[i].Free
		f.CPUMilli -= req.CPUMilli
		f.MemoryMega -= req.MemoryMega
		f.GPU -= req.GPU
	}
	for _, j := range jobs {
		for _, t := range j.Trainers {
			use(t.Node, t.Request)
			if t.Unschedulable {
				r.Pending = append(r.Pending, snapshot.PendingPod{Namespace: "ns", Name: t.Name, Priority: j.Priority,
					Request: t.Request, Job: j.Key, Trainer: true, Created: t.Created, Placement: j.Placement})
			}
		}
		if len(j.Trainers) > 0 {
			r.Trainers[j.Key] = j.Trainers
		}
	}
	for _, o := range others {
		use(o.node, o.req)
		if o.node == "" {
			r.Pending = append(r.Pending, snapshot.PendingPod{Namespace: "ns", Name: o.name, Priority: o.priority,
				Request: o.req, Job: o.job, Trainer: o.job != "" && !o.notTrainer, Created: t0, NominatedNode: o.nominated,
				Placement: o.placement, PreemptNever: o.never, Untried: o.untried})
		} else if o.terminating {
			i := idx[o.node]
			r.Nodes[i].Terminating = append(r.Nodes[i].Terminating, snapshot.TerminatingPod{Request: o.req, Deadline: o.deadline,
				Trainer: o.job != "" && !o.notTrainer})
		}
	}
	sort.SliceStable(r.Pending, func(i, j int) bool { return r.Pending[i].Priority > r.Pending[j].Priority })
	return r
}

type jobMutator func(*Job)

// newJob returns an elastic job with Min 1, Max 10, a 1-CPU/1-GiB trainer and
// no trainers; Current defaults to the number of trainers the mutators add.
func newJob(key string, muts ...jobMutator) Job {
	j := Job{Key: key, Min: 1, Max: 10, Current: -1, Request: res(1, 1, 0)}
	for _, m := range muts {
		m(&j)
	}
	if j.Current == -1 {
		j.Current = int32(len(j.Trainers))
	}
	return j
}

func withRange(minimum, maximum int32) jobMutator {
	return func(j *Job) { j.Min, j.Max = minimum, maximum }
}

func withCurrent(c int32) jobMutator { return func(j *Job) { j.Current = c } }

func withPriority(p int32) jobMutator { return func(j *Job) { j.Priority = p } }

func withRequest(r Resources) jobMutator { return func(j *Job) { j.Request = r } }

func scaledDownAt(t time.Time) jobMutator { return func(j *Job) { j.LastScaleDown = t } }

// runningOn adds one Running trainer per node name, each newer than the last.
func runningOn(nodeNames ...string) jobMutator {
	return func(j *Job) {
		for _, n := range nodeNames {
			j.Trainers = append(j.Trainers, TrainerPod{
				Name: fmt.Sprintf("%s-t%d", j.Key, len(j.Trainers)), Node: n, Phase: corev1.PodRunning,
				Created: t0.Add(time.Duration(len(j.Trainers)) * time.Second), Request: j.Request,
			})
		}
	}
}

// spread adds count Running trainers on nodes round-robin.
func spread(count int, ns []nodeSpec) jobMutator {
	return func(j *Job) {
		for i := range count {
			runningOn(ns[i%len(ns)].name)(j)
		}
	}
}

// unschedulableTrainers adds count trainers the scheduler could not place.
func unschedulableTrainers(count int) jobMutator {
	return func(j *Job) {
		for range count {
			j.Trainers = append(j.Trainers, TrainerPod{
				Name: fmt.Sprintf("%s-t%d", j.Key, len(j.Trainers)), Phase: corev1.PodPending, Unschedulable: true,
				Created: t0.Add(time.Duration(len(j.Trainers)) * time.Second), Request: j.Request,
			})
		}
	}
}

// applyPlan returns the jobs as they would look once the actions took effect:
// new trainers running where the plan put them, removed trainers gone in
// ReplicaSet order, the ones the plan picked (ScaleAction.Remove) before the
// other running ones.
func applyPlan(jobs []Job, actions []ScaleAction) []Job {
	byKey := map[string]ScaleAction{}
	for _, a := range actions {
		byKey[a.Job] = a
	}
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		j.Trainers = append([]TrainerPod(nil), j.Trainers...)
		if a, ok := byKey[j.Key]; ok {
			if a.To > a.From {
				runningOn(a.Nodes...)(&j)
			} else {
				for range a.From - a.To {
					j.Trainers = removeOne(j.Trainers, a.Remove)
				}
				if a.StartsCoolDown() {
					j.LastScaleDown = t0
				}
			}
			j.Current = a.To
		}
		out[i] = j
	}
	return out
}

func removeOne(ts []TrainerPod, picked []string) []TrainerPod {
	rank := func(t TrainerPod) int {
		r := 2 * rsRank(t)
		if r == 4 && !slices.Contains(picked, t.Name) {
			r++ // running and not picked: a higher pod-deletion-cost
		}
		return r
	}
	victim := -1
	for i, t := range ts {
		if victim < 0 || rank(t) < rank(ts[victim]) ||
			(rank(t) == rank(ts[victim]) && olderTrainer(&ts[victim], &t)) {
			victim = i
		}
	}
	if victim < 0 {
		return ts
	}
	return append(ts[:victim:victim], ts[victim+1:]...)
}

func rsRank(t TrainerPod) int {
	switch {
	case t.Node == "":
		return 0
	case !t.Running():
		return 1
	}
	return 2
}

func actionFor(actions []ScaleAction, key string) (ScaleAction, bool) {
	for _, a := range actions {
		if a.Job == key {
			return a, true
		}
	}
	return ScaleAction{}, false
}

// toOf returns the replicas a job ends with under the plan.
func toOf(actions []ScaleAction, j Job) int32 {
	if a, ok := actionFor(actions, j.Key); ok {
		return a.To
	}
	return j.Current
}
