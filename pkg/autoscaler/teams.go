package autoscaler

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// teams are the cycle's teams, read from the TrainingQueues.
type teams struct {
	// queues are the TrainingQueues by name, sorted; planned the teams they
	// make, for planner.Options.Teams.
	queues  []*v1.TrainingQueue
	planned []planner.Team
	// conflicts are, for each queue, its namespaces that another queue
	// names too: they belong to the default team until one lets go.
	conflicts map[string][]string
}

// readTeams reads the TrainingQueues; none without a queue informer.
func (a *Autoscaler) readTeams() teams {
	var t teams
	if a.queues == nil {
		return t
	}
	all, err := a.queues.List(labels.Everything())
	if err != nil { // a lister's List never fails
		a.log.Error("list TrainingQueues", "err", err)
		return t
	}
	sort.Slice(all, func(i, k int) bool { return all[i].Name < all[k].Name })
	t.queues = all
	named := map[string][]string{} // namespace → the queues that name it
	for _, q := range all {
		for _, ns := range q.Spec.Namespaces {
			named[ns] = append(named[ns], q.Name)
		}
	}
	t.conflicts = map[string][]string{}
	for _, q := range all {
		team := planner.Team{Name: q.Name, Weight: q.Spec.QueueWeight(),
			Guarantee: a.resourcesOf(q.Spec.Guarantee), Limit: a.resourcesOf(q.Spec.Limit)}
		for _, ns := range q.Spec.Namespaces {
			if len(named[ns]) > 1 {
				t.conflicts[q.Name] = append(t.conflicts[q.Name], ns)
				continue
			}
			team.Namespaces = append(team.Namespaces, ns)
		}
		t.planned = append(t.planned, team)
	}
	return t
}

// resourcesOf is a TrainingQueue's resource list in the planner's units: CPU
// in millicores, memory in MiB (rounded up), the configured GPU names summed.
func (a *Autoscaler) resourcesOf(list corev1.ResourceList) planner.Resources {
	var r planner.Resources
	if q, ok := list[corev1.ResourceCPU]; ok {
		r.CPUMilli = q.MilliValue()
	}
	if q, ok := list[corev1.ResourceMemory]; ok {
		r.MemoryMega = (q.Value() + 1<<20 - 1) >> 20
	}
	for _, g := range a.gpuNames() {
		if q, ok := list[g]; ok {
			r.GPU += q.Value()
		}
	}
	return r
}

// gpuNames are the extended resources counted as GPUs.
func (a *Autoscaler) gpuNames() []corev1.ResourceName {
	if len(a.cfg.GPUResourceNames) > 0 {
		return a.cfg.GPUResourceNames
	}
	return []corev1.ResourceName{cluster.DefaultGPUResourceName}
}

// recordTeams writes each TrainingQueue's share after the plan in its
// status — deserved, used, borrowed and lent, its running and queued jobs,
// and the Conflict condition — when it changed. A dry run writes nothing.
func (a *Autoscaler) recordTeams(ctx context.Context, t teams, shares []planner.TeamShare) {
	if a.cfg.DryRun || len(t.queues) == 0 {
		return
	}
	byTeam := map[string]planner.TeamShare{}
	for _, s := range shares {
		byTeam[s.Team] = s
	}
	running, queued := a.jobCounts()
	for _, q := range t.queues {
		share := byTeam[q.Name]
		status := q.Status.DeepCopy()
		status.Deserved = a.resourceList(share.Deserved)
		status.Used = a.resourceList(share.Used)
		status.Borrowed = a.resourceList(minus(share.Used, share.Deserved))
		status.Lent = a.resourceList(minus(share.Deserved, share.Used))
		status.RunningJobs, status.QueuedJobs = 0, 0
		for _, ns := range q.Spec.Namespaces {
			if !slices.Contains(t.conflicts[q.Name], ns) {
				status.RunningJobs += running[ns]
				status.QueuedJobs += queued[ns]
			}
		}
		status.ObservedGeneration = q.Generation
		cond := metav1.Condition{Type: v1.ConditionConflict, Status: metav1.ConditionFalse, Reason: "NoConflict",
			Message: "no other TrainingQueue names its namespaces", ObservedGeneration: q.Generation}
		if c := t.conflicts[q.Name]; len(c) > 0 {
			cond.Status, cond.Reason = metav1.ConditionTrue, "NamespaceInTwoQueues"
			cond.Message = fmt.Sprintf("namespaces %s are named by another TrainingQueue too: they belong to the default team until one queue lets go", strings.Join(c, ", "))
		}
		meta.SetStatusCondition(&status.Conditions, cond)
		if apiequality.Semantic.DeepEqual(*status, q.Status) {
			continue
		}
		if cond.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(q.Status.Conditions, v1.ConditionConflict) {
			a.log.Warn("namespaces named by two TrainingQueues go to the default team", "queue", q.Name, "namespaces", t.conflicts[q.Name])
		}
		update := q.DeepCopy()
		update.Status = *status
		if _, err := a.tjClient.PaddlepaddleV1().TrainingQueues().UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
			a.log.Debug("recording the team's share failed; the next plan retries", "queue", q.Name, "err", err)
		}
	}
}

// jobCounts are the Running and the queued TrainingJobs per namespace.
func (a *Autoscaler) jobCounts() (running, queued map[string]int32) {
	running, queued = map[string]int32{}, map[string]int32{}
	all, _ := a.jobs.List(labels.Everything())
	for _, tj := range all {
		switch {
		case tj.Status.Phase == v1.PhaseRunning:
			running[tj.Namespace]++
		case meta.IsStatusConditionTrue(tj.Status.Conditions, v1.ConditionQueued) && !tj.Spec.Suspend:
			queued[tj.Namespace]++
		}
	}
	return running, queued
}

// resourceList is r as a resource list: cpu, memory, and the first GPU
// name; empty when r is zero.
func (a *Autoscaler) resourceList(r planner.Resources) corev1.ResourceList {
	if r == (planner.Resources{}) {
		return nil
	}
	list := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(r.CPUMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(r.MemoryMega<<20, resource.BinarySI),
	}
	if r.GPU > 0 {
		list[a.gpuNames()[0]] = *resource.NewQuantity(r.GPU, resource.DecimalSI)
	}
	return list
}

// minus is a − b in every resource, 0 where b is larger.
func minus(a, b snapshot.Resources) snapshot.Resources {
	return snapshot.Resources{CPUMilli: max(0, a.CPUMilli-b.CPUMilli), MemoryMega: max(0, a.MemoryMega-b.MemoryMega), GPU: max(0, a.GPU-b.GPU)}
}
