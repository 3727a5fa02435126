package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// podsToKeep are the pods of a finished job's role that its clean-pod
// policy keeps (v1.RunPolicy): none under All, every pod not being deleted
// under None, and under Running, when the job failed, those with a
// container that exited non-zero, now or in the run before (a job that
// succeeded keeps none: an exit it excused, a lost master's, is no
// failure to read).
func podsToKeep(policy v1.CleanPodPolicy, jobFailed bool, pods []*cluster.Pod) []*cluster.Pod {
	var keep []*cluster.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || policy == v1.CleanPodPolicyAll {
			continue
		}
		if policy == v1.CleanPodPolicyNone || jobFailed && failed(p) {
			keep = append(keep, p)
		}
	}
	return keep
}

// failed: a container of the pod exited non-zero, or the pod failed.
func failed(p *cluster.Pod) bool {
	if p.Phase == corev1.PodFailed {
		return true
	}
	for _, s := range p.ContainerStatuses {
		for _, t := range []*cluster.Termination{s.Terminated, s.LastTerminated} {
			if t != nil && t.ExitCode != 0 {
				return true
			}
		}
	}
	return false
}

// keepPods ends a finished job's role whose clean-pod policy keeps some of
// its pods, and reports whether it did (else the role's ReplicaSet scales to
// 0, as for a job that keeps none). Scaling to 0 would delete the pods, and
// taking a pod out of a live ReplicaSet would make it start another, so the
// ReplicaSet is deleted first, leaving its pods (propagation Orphan: once
// the call returns, the ReplicaSet controller creates no pod for it). Then
// each pod kept is relabelled (v1.LabelKept), given to the job and stopped
// (activeDeadlineSeconds 1: its kubelet kills it for good, its logs kept),
// in one patch, and the others are deleted. The ReplicaSet is not made
// again: a finished job creates none. A sync that stops half-way is
// finished by the next, which finds the same pods.
func (c *Controller) keepPods(ctx context.Context, job *v1.TrainingJob, role v1.Role, rs *appsv1.ReplicaSet, pods []*cluster.Pod) (bool, error) {
	keep := podsToKeep(job.Spec.CleanPods(), job.Status.Phase == v1.PhaseFailed, pods)
	gone := rs == nil || rs.DeletionTimestamp != nil
	if len(keep) == 0 && !gone {
		return false, nil // the ReplicaSet scales to 0
	}
	if !gone {
		orphan := metav1.DeletePropagationOrphan
		err := c.kubeClient.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{
			PropagationPolicy: &orphan, Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return true, fmt.Errorf("delete ReplicaSet %s, leaving its pods: %w", rs.Name, err)
		}
	}
	patch, err := keepPatch(job, role)
	if err != nil {
		return true, err
	}
	var names []string
	for _, p := range keep {
		_, err := c.kubeClient.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return true, fmt.Errorf("keep pod %s: %w", p.Name, err)
		}
		names = append(names, p.Name)
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || slices.Contains(keep, p) {
			continue
		}
		err := c.kubeClient.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return true, fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		c.log.Info("kept the pods of a finished job", "job", job.Namespace+"/"+job.Name, "role", role, "pods", names)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventPodsKept,
			"Kept %s pods %s, stopped, for their logs (spec.runPolicy.cleanPodPolicy %s)", strings.ToLower(string(role)), strings.Join(names, ", "), job.Spec.CleanPods())
	}
	return true, nil
}

// keepPatch is the JSON merge patch that takes a pod out of its role's
// ReplicaSet and makes it the job's, stopped.
func keepPatch(job *v1.TrainingJob, role v1.Role) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"labels": map[string]any{
				v1.LabelFor(role): nil,
				v1.LabelKept:      job.Name,
				v1.LabelKeptRole:  strings.ToLower(string(role)),
			},
			"ownerReferences": []metav1.OwnerReference{ownerReference(job)},
		},
		"spec": map[string]any{"activeDeadlineSeconds": 1},
	})
}

// expire deletes a finished job whose spec.runPolicy.ttlSecondsAfterFinished
// has passed since it finished, and reports whether it did; a job whose TTL
// has not passed is synced again when it does.
func (c *Controller) expire(ctx context.Context, key string, job *v1.TrainingJob, now time.Time) (bool, error) {
	rp := job.Spec.RunPolicy
	finished := finishedAt(job)
	if rp == nil || rp.TTLSecondsAfterFinished == nil || finished.IsZero() {
		return false, nil
	}
	if left := finished.Add(time.Duration(*rp.TTLSecondsAfterFinished) * time.Second).Sub(now); left > 0 {
		c.queue.AddAfter(key, left)
		return false, nil
	}
	background := metav1.DeletePropagationBackground
	err := c.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &job.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete %s/%s after its ttlSecondsAfterFinished: %w", job.Namespace, job.Name, err)
	}
	c.log.Info("deleted a finished job after its ttlSecondsAfterFinished", "job", key, "finished", finished)
	return true, nil
}

// finishedAt is when the job's Complete or Failed condition became True;
// zero when neither is.
func finishedAt(job *v1.TrainingJob) time.Time {
	for _, t := range []string{v1.ConditionComplete, v1.ConditionFailed} {
		if cond := meta.FindStatusCondition(job.Status.Conditions, t); cond != nil && cond.Status == metav1.ConditionTrue {
			return cond.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
