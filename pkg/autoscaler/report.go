package autoscaler

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/progress"
)

// Report is one plan on the live cluster and what it says about every
// TrainingJob, for `edl explain`. Making it writes nothing.
type Report struct {
	Time    time.Time       `json:"time"`
	Options planner.Options `json:"options"`
	Cluster ClusterLine     `json:"cluster"`
	Jobs    []JobReport     `json:"jobs"`
	// Queue lists the queued jobs the next cycle would leave waiting, in
	// queue order, with what each waits for; Admitted those it would admit,
	// and Preempted the running jobs it would stop whole for them.
	Queue []planner.Waiting `json:"queue,omitempty"`
	// Teams are the teams' shares, with TrainingQueues.
	Teams     []TeamReport         `json:"teams,omitempty"`
	Admitted  []planner.Admission  `json:"admitted,omitempty"`
	Preempted []planner.Preemption `json:"preempted,omitempty"`
}

// TeamReport is one team's share after the plan, summed over the pools:
// what it deserves, what its jobs' pods use, and the difference either
// way, what it borrows from idle teams or lends them.
type TeamReport struct {
	Team string `json:"team"`
	// Namespaces are its TrainingQueue's namespaces that no other queue
	// names; none for the default team, which holds every other namespace.
	Namespaces []string          `json:"namespaces,omitempty"`
	Deserved   planner.Resources `json:"deserved"`
	Used       planner.Resources `json:"used"`
	Borrowed   planner.Resources `json:"borrowed"`
	Lent       planner.Resources `json:"lent"`
}

// teamReports are shares as the report shows them, with each team's
// namespaces from teams.
func teamReports(shares []planner.TeamShare, teams []planner.Team) []TeamReport {
	namespaces := make(map[string][]string, len(teams))
	for _, t := range teams {
		namespaces[t.Name] = t.Namespaces
	}
	out := make([]TeamReport, 0, len(shares))
	for _, s := range shares {
		out = append(out, TeamReport{Team: s.Team, Namespaces: namespaces[s.Team], Deserved: s.Deserved, Used: s.Used,
			Borrowed: above(s.Used, s.Deserved), Lent: above(s.Deserved, s.Used)})
	}
	return out
}

// above is what a holds above b in each resource, 0 where it holds less.
func above(a, b planner.Resources) planner.Resources {
	return planner.Resources{CPUMilli: max(0, a.CPUMilli-b.CPUMilli), MemoryMega: max(0, a.MemoryMega-b.MemoryMega), GPU: max(0, a.GPU-b.GPU)}
}

// ClusterLine sums up the snapshot the plan read.
type ClusterLine struct {
	// Nodes counts the Ready, schedulable nodes.
	Nodes       int               `json:"nodes"`
	Allocatable planner.Resources `json:"allocatable"`
	Requested   planner.Resources `json:"requested"`
	// Load is requested / allocatable per resource (CPU, memory, GPU),
	// for the resources the nodes have.
	Load map[string]float64 `json:"load"`
	// Pending counts the pods the scheduler found no node for.
	Pending int `json:"pending"`
}

// JobReport is one TrainingJob in a Report: its phase, its trainers, what
// the plan would do to it now and what limits it.
type JobReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	// Running counts its trainer pods in phase Running.
	Running int `json:"running"`
	// Next is what the next cycle would do to the job; nil for nothing.
	Next *planner.ScaleAction `json:"next,omitempty"`
	planner.Explanation
	// Progress is what the job's training reports, measured and predicted.
	Progress progress.Explanation `json:"progress"`
}

// WaitForSync waits until the autoscaler's informers have synced, or ctx is
// done.
func (a *Autoscaler) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), a.synced...)
}

// Explain plans once on the live snapshot, as the next cycle would, applies
// nothing, and reports every TrainingJob: the elastic Running ones with
// the plan's explanation, the others as not running or not elastic.
func (a *Autoscaler) Explain() Report {
	now := a.clock.Now()
	snap := a.tracker.InquiryResource()
	jobs, _, _ := a.elasticJobs()
	jobs = planner.JobsFromSnapshot(snap, jobs)
	opts := a.options(now)
	opts.Teams = a.readTeams().planned
	queue, _, _ := a.queue(snap, now)
	decision := planner.Decide(snap, jobs, queue, opts)

	r := Report{Time: now, Options: opts, Cluster: clusterLine(snap),
		Queue: decision.Waiting, Admitted: decision.Admitted, Preempted: decision.Preempted, Teams: teamReports(decision.Teams, opts.Teams)}
	explained := make(map[string]*planner.Explanation, len(decision.Jobs))
	for i := range decision.Jobs {
		explained[decision.Jobs[i].Job] = &decision.Jobs[i]
	}
	next := make(map[string]*planner.ScaleAction, len(decision.Actions))
	for i := range decision.Actions {
		next[decision.Actions[i].Job] = &decision.Actions[i]
	}
	all, _ := a.jobs.List(labels.Everything())
	sort.Slice(all, func(i, j int) bool { return key(all[i]) < key(all[j]) })
	for _, tj := range all {
		k := key(tj)
		jr := JobReport{Namespace: tj.Namespace, Name: tj.Name, Phase: string(tj.Status.Phase), Next: next[k],
			Progress: progress.Explain(tj.Status.Progress, tj.Status.Trainers.Desired)}
		for _, t := range snap.TrainerPods(k) {
			if t.Running() {
				jr.Running++
			}
		}
		if e, ok := explained[k]; ok {
			jr.Explanation = *e
		} else {
			jr.Explanation = a.notPlanned(tj)
		}
		r.Jobs = append(r.Jobs, jr)
	}
	return r
}

// notPlanned explains a job the plan does not see.
func (a *Autoscaler) notPlanned(tj *v1.TrainingJob) planner.Explanation {
	spec := &tj.Spec.Trainer
	e := planner.Explanation{Job: key(tj), Min: spec.MinInstance, Max: spec.MaxInstance,
		From: tj.Status.Trainers.Desired, To: tj.Status.Trainers.Desired, Limit: planner.LimitNotRunning}
	switch {
	case tj.Status.Phase != v1.PhaseRunning:
		phase := string(tj.Status.Phase)
		if phase == "" {
			phase = "not started"
		}
		e.Message = fmt.Sprintf("the job is %s, and only Running jobs are scaled (%d of %d..%d trainers)", phase, e.To, e.Min, e.Max)
		if tj.Status.Message != "" {
			e.Message += ": " + tj.Status.Message
		}
	case spec.MinInstance >= spec.MaxInstance:
		e.Limit = planner.LimitNotElastic
		e.Message = fmt.Sprintf("min-instance equals max-instance (%d): the autoscaler does not scale it", spec.MinInstance)
	default:
		e.Limit = planner.LimitNotElastic
		e.Message = fmt.Sprintf("its trainer ReplicaSet %s is missing or not controlled by the job", v1.ReplicaSetName(tj.Name, v1.RoleTrainer))
	}
	return e
}

func clusterLine(snap snapshot.Snapshot) ClusterLine {
	c := ClusterLine{Nodes: snap.NodeCount, Pending: len(snap.Pending),
		Allocatable: planner.Resources{CPUMilli: snap.CPUTotalMilli, MemoryMega: snap.MemoryTotalMega, GPU: snap.GPUTotal},
		Requested:   planner.Resources{CPUMilli: snap.CPURequestMilli, MemoryMega: snap.MemoryRequestMega, GPU: snap.GPURequest},
		Load:        map[string]float64{}}
	for _, r := range []struct {
		name       string
		req, alloc int64
	}{{"CPU", snap.CPURequestMilli, snap.CPUTotalMilli}, {"memory", snap.MemoryRequestMega, snap.MemoryTotalMega}, {"GPU", snap.GPURequest, snap.GPUTotal}} {
		if r.alloc > 0 {
			c.Load[r.name] = float64(r.req) / float64(r.alloc)
		}
	}
	return c
}
