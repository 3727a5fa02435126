package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// Gang admission: a queued job's ReplicaSets exist with 0 replicas, and
// their templates carry the scheduling gate v1.SchedulingGateAdmission, so
// that a queued job holds no node and no quota, and a pod created anyway
// (someone scaled a ReplicaSet) is not scheduled. The autoscaler admits a
// job by setting its condition Queued to False; from then on the controller
// scales the ReplicaSets up with templates without the gate, and removes it
// from pods that still carry it (created before edl held queued jobs at 0,
// or by someone else). The condition is the stored fact: it survives a
// restart of edl, and a crash between the admission and the scale-up is
// repaired by the next sync.
//
// spec.suspend takes a job out of the queue and scales it to 0 wherever it
// was; cleared, it puts the job back in the queue (condition Suspended, True
// while suspended, tells a resumed job from one never suspended). The
// autoscaler preempts a job by setting its condition Queued to True again
// (reason Preempted): the job is then queued like any other, at 0 replicas.

// waitingMessage is the Queued condition's message until the autoscaler
// writes the job's position.
const waitingMessage = "waiting for the autoscaler to admit the job once its minimum fits"

// isQueued reports whether the job waits for admission. With gang
// admission off, no job does, and neither does a suspended or a finished
// one. A resumed job (spec.suspend cleared while its condition Suspended is
// still True) goes back to the queue. A job with the condition Queued
// follows it. A job without it is queued when it is new (none of its
// ReplicaSets exists) or when a ReplicaSet's template carries the gate
// (created just before a restart that lost the status write); any other job
// was stored before gang admission existed, or while it was off, and keeps
// running.
func isQueued(job *v1.TrainingJob, obs observed, gang bool) bool {
	if !gang || job.Spec.Suspend || job.Status.Phase == v1.PhaseSucceeded || job.Status.Phase == v1.PhaseFailed {
		return false
	}
	if isTrue(job.Status.Conditions, v1.ConditionSuspended) {
		return true
	}
	if c := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionQueued); c != nil {
		return c.Status == metav1.ConditionTrue
	}
	if len(obs.replicaSets) == 0 {
		return true
	}
	for _, rs := range obs.replicaSets {
		if gateIndex(&rs.Spec.Template.Spec) >= 0 {
			return true
		}
	}
	return false
}

// setQueued keeps the Queued condition: True (with the autoscaler's message,
// once it wrote one) while the job is queued, set True again when a resumed
// job returns to the queue; turned False when a queued job leaves the queue
// without admission: suspended, or released because gang admission was
// turned off. The autoscaler turns it False when it admits the job.
func setQueued(status *v1.TrainingJobStatus, job *v1.TrainingJob, queued bool) {
	c := meta.FindStatusCondition(status.Conditions, v1.ConditionQueued)
	set := func(ok bool, reason, message string) {
		setCondition(status, job.Generation, v1.ConditionQueued, ok, reason, message)
	}
	switch {
	case queued && (c == nil || c.Status != metav1.ConditionTrue):
		set(true, v1.ReasonWaitingForAdmission, waitingMessage)
	case !queued && c != nil && c.Status == metav1.ConditionTrue && job.Spec.Suspend:
		set(false, v1.ReasonSuspended, "left the queue: spec.suspend is true")
	case !queued && c != nil && c.Status == metav1.ConditionTrue:
		set(false, v1.ReasonAdmissionOff, "released without admission: gang admission is off")
	}
}

// queuedVerdict is the phase of a queued job, with the Queued condition's
// reason (what kind of wait; the autoscaler's) and message: its position
// and what it waits for.
func queuedVerdict(job *v1.TrainingJob) verdict {
	v := verdict{v1.PhaseQueued, v1.ReasonWaitingForAdmission, waitingMessage}
	if c := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue {
		if c.Message != "" {
			v.message = c.Message
		}
		if c.Reason != "" {
			v.reason = c.Reason
		}
	}
	return v
}

// gateIndex returns the index of the admission gate in the pod's scheduling
// gates, -1 when it carries none.
func gateIndex(spec *corev1.PodSpec) int {
	for i, g := range spec.SchedulingGates {
		if g.Name == v1.SchedulingGateAdmission {
			return i
		}
	}
	return -1
}

// podGateIndex is gateIndex of a cached pod: -1 once it is bound.
func podGateIndex(pod *cluster.Pod) int {
	if pod.Scheduling == nil {
		return -1
	}
	return slices.Index(pod.Scheduling.Gates, v1.SchedulingGateAdmission)
}

// gate adds the admission gate to the ReplicaSet's pod template and updates
// its template hash, so that admitting the job replaces the template with
// one without it.
func gate(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	rs.Spec.Template.Spec.SchedulingGates = append(rs.Spec.Template.Spec.SchedulingGates,
		corev1.PodSchedulingGate{Name: v1.SchedulingGateAdmission})
	rs.Annotations[AnnotationTemplateHash] = TemplateHash(&rs.Spec.Template)
	return rs
}

// ensureUngated removes the admission gate from the pods of an admitted job
// that still carry it: those created before the admission. The patch tests
// the gate's position, so a pod whose gates changed meanwhile is left to the
// next sync.
func (c *Controller) ensureUngated(ctx context.Context, job *v1.TrainingJob, obs observed, jobRoles []v1.Role) error {
	removed := 0
	for _, role := range jobRoles {
		for _, pod := range obs.pods[role] {
			i := podGateIndex(pod)
			if i < 0 || pod.DeletionTimestamp != nil {
				continue
			}
			path := "/spec/schedulingGates/" + strconv.Itoa(i)
			data, err := json.Marshal([]jsonPatchOp{
				{"test", path + "/name", v1.SchedulingGateAdmission},
				{"remove", path, nil},
			})
			if err != nil {
				return err
			}
			_, err = c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, data, metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("remove the admission gate of pod %s: %w", pod.Name, err)
			}
			removed++
		}
	}
	if removed > 0 {
		c.log.Info("removed the admission gate", "job", job.Namespace+"/"+job.Name, "pods", removed)
	}
	return nil
}
