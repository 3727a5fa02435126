package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// resizeStatus derives status.resize of a job whose trainers restart on
// every resize: the resizes counted from the autoscaler's lastScale, the
// cost of the last growth — from its time until every trainer pod is Ready
// again, observed at now — the real failures counted against the budget,
// and the progress the training script reports. It is pure.
func resizeStatus(job *v1.TrainingJob, trainers v1.ReplicaStatus, pods []*cluster.Pod, now time.Time) v1.ResizeStatus {
	s := *job.Status.Resize.DeepCopy()
	if last := job.Status.LastScale; last != nil && (s.Last == nil || last.Time.After(s.Last.Time)) {
		t := last.Time
		s.Count++
		s.Last = &t
		// A scale-down starts no pod: its survivors restart inside theirs,
		// which readiness does not see; the growth's figure stands.
		s.Measured = last.To <= last.From
	}
	if !s.Measured && s.Last != nil && trainers.Desired > 0 && trainers.Ready >= trainers.Desired && !now.Before(s.Last.Time) {
		s.LastCost = &metav1.Duration{Duration: now.Sub(s.Last.Time).Truncate(time.Second)}
		s.Measured = true
	}
	s.Failures, s.Counted = countFailures(s, pods)
	s.Progress = job.Annotations[v1.AnnotationProgress]
	return s
}

// countFailures adds the trainer restarts not counted yet to the failures:
// a container restarts after it exited, and torchrun's agent exits only
// when its workers failed for real (a resize restarts them inside the
// agent, within PET_MAX_RESTARTS). The trainers EDL removes are left out —
// being deleted, or marked for removal (v1.DeletionCostRemove) — so a
// trainer that exits on SIGTERM never counts. So is the restart that
// follows an exit 0: the ReplicaSet's restartPolicy Always starts a trainer
// whose training ended, and that exit is the job's success. Counted keeps
// what each live pod has had counted; a pod that is gone keeps its share in
// Failures.
func countFailures(prev v1.ResizeStatus, pods []*cluster.Pod) (int32, []v1.PodRestarts) {
	counted := map[string]int32{}
	for _, c := range prev.Counted {
		counted[c.Pod] = c.Restarts
	}
	failures := prev.Failures
	var out []v1.PodRestarts
	for _, p := range pods {
		var restarts int32
		for _, cs := range p.ContainerStatuses {
			restarts += cs.RestartCount
			if last := cs.LastTerminated; last != nil && last.ExitCode == 0 && cs.RestartCount > 0 {
				restarts--
			}
		}
		removed := p.DeletionTimestamp != nil || p.DeletionCost == v1.DeletionCostRemove
		if !removed && restarts > counted[p.Name] {
			failures += restarts - counted[p.Name]
			counted[p.Name] = restarts
		}
		if n := counted[p.Name]; n > 0 {
			out = append(out, v1.PodRestarts{Pod: p.Name, Restarts: n})
		}
	}
	slices.SortFunc(out, func(a, b v1.PodRestarts) int { return strings.Compare(a.Pod, b.Pod) })
	return failures, out
}

// overBudget fails a job whose trainers failed more often than
// spec.elasticPolicy.maxRestarts.
func overBudget(job *v1.TrainingJob, s v1.ResizeStatus) (verdict, bool) {
	budget := job.Spec.Elastic().MaxRestartsOrDefault()
	if s.Failures <= budget {
		return verdict{}, false
	}
	return verdict{v1.PhaseFailed, v1.ReasonTooManyFailures, fmt.Sprintf(
		"the trainers failed %d times, more than spec.elasticPolicy.maxRestarts %d (trainers EDL removed are not counted)", s.Failures, budget)}, true
}
