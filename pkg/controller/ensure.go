package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// ensureReplicaSet creates a role's ReplicaSet, or JSON-patches the replicas
// and the template that drifted from what the job asks for. A job stopped
// for stop (stopReason) gets 0 replicas; the template of a queued job
// carries the admission gate.
func (c *Controller) ensureReplicaSet(ctx context.Context, job *v1.TrainingJob, role v1.Role, existing *appsv1.ReplicaSet, stop string, queued bool) error {
	build := func(replicas int32) *appsv1.ReplicaSet {
		if stop != "" {
			replicas = 0
		}
		rs := ReplicaSet(job, role, replicas, c.gpus)
		if queued {
			gate(rs)
		}
		return rs
	}
	if existing == nil {
		if stop == stopFinished {
			return nil
		}
		rs := build(desiredReplicas(job, role, nil, false))
		_, err := c.kubeClient.AppsV1().ReplicaSets(job.Namespace).Create(ctx, rs, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; its event brings the job back
		}
		if err != nil {
			return fmt.Errorf("create ReplicaSet %s: %w", rs.Name, err)
		}
		c.log.Info("created ReplicaSet", "job", job.Namespace+"/"+job.Name, "replicaset", rs.Name, "replicas", *rs.Spec.Replicas)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created ReplicaSet %s with %d replicas", rs.Name, *rs.Spec.Replicas)
		return nil
	}

	want := build(desiredReplicas(job, role, existing.Spec.Replicas, stop == stopFinished))
	have := int32(1)
	if existing.Spec.Replicas != nil {
		have = *existing.Spec.Replicas
	}
	if role == v1.RoleTrainer && leavesFirst(job) && stop == "" && *want.Spec.Replicas < have {
		// Not before the master's hosts file dropped the trainers.
		key := job.Namespace + "/" + job.Name
		if wait := c.holds.wait(key, c.pacer.clock.Now()); wait > 0 {
			c.log.Debug("holding the scale-down until the hosts file dropped the trainers", "job", key, "wait", wait)
			want.Spec.Replicas = &have
			c.queue.AddAfter(key, wait)
		}
	}
	// A JSON patch, so that a new template replaces the old one whole:
	// fields the job no longer sets disappear with it.
	var ops []jsonPatchOp
	if have != *want.Spec.Replicas {
		ops = append(ops, jsonPatchOp{"replace", "/spec/replicas", *want.Spec.Replicas})
	}
	if hash := want.Annotations[AnnotationTemplateHash]; existing.Annotations[AnnotationTemplateHash] != hash {
		// The job's spec changed: new pods start from the new template; a
		// ReplicaSet never restarts running ones.
		ops = append(ops, jsonPatchOp{"replace", "/spec/template", want.Spec.Template})
		if existing.Annotations == nil {
			ops = append(ops, jsonPatchOp{"add", "/metadata/annotations", want.Annotations})
		} else {
			ops = append(ops, jsonPatchOp{"add", "/metadata/annotations/" + escapeJSONPointer(AnnotationTemplateHash), hash})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := c.kubeClient.AppsV1().ReplicaSets(job.Namespace).Patch(ctx, existing.Name, types.JSONPatchType, data, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch ReplicaSet %s: %w", existing.Name, err)
	}
	if have != *want.Spec.Replicas {
		why := fmt.Sprintf("clamped into [%d, %d]", job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance)
		switch {
		case stop != "":
			why = stop
		case have == 0 && (job.Status.Phase == v1.PhaseQueued || job.Status.Phase == v1.PhaseSuspended):
			why = "the job starts"
		case role != v1.RoleTrainer:
			why = "the spec asks for it"
		}
		c.log.Info("scaled ReplicaSet", "job", job.Namespace+"/"+job.Name, "replicaset", existing.Name, "from", have, "to", *want.Spec.Replicas, "reason", why)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventScaled, "Scaled ReplicaSet %s from %d to %d: %s", existing.Name, have, *want.Spec.Replicas, why)
	}
	return nil
}

// MarkTTL is how long a trainer's removal mark (v1.DeletionCostRemove,
// timed by v1.AnnotationMarkedForRemoval) stands: the autoscaler lowers the
// replicas seconds after it marks, so a mark still there a minute later is
// stale, and the controller clears it.
const MarkTTL = time.Minute

// StaleMarks returns the trainers whose removal mark is older than MarkTTL
// at now, and how long until the next of the others goes stale (0 for
// none). A mark without its time is left alone. StaleMarks is pure.
func StaleMarks(trainers []*cluster.Pod, now time.Time) (stale []*cluster.Pod, next time.Duration) {
	for _, p := range trainers {
		if p.DeletionTimestamp != nil || p.DeletionCost != v1.DeletionCostRemove || p.MarkedForRemoval == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, p.MarkedForRemoval)
		if err != nil {
			stale = append(stale, p) // not the autoscaler's: a mark of unknown age
			continue
		}
		if left := at.Add(MarkTTL).Sub(now); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		stale = append(stale, p)
	}
	return stale, next
}

// ensureDeletionCosts annotates the running trainers whose deletion cost
// differs from what DeletionCosts wants, and clears the stale removal
// marks ([StaleMarks]); most syncs write nothing. The job, key, is synced
// again when a mark standing now goes stale.
func (c *Controller) ensureDeletionCosts(ctx context.Context, key string, job *v1.TrainingJob, trainers []*cluster.Pod, now time.Time) error {
	stale, next := StaleMarks(trainers, now)
	if next > 0 {
		c.queue.AddAfter(key, next)
	}
	unmark := v1.RemovalMarkPatch(time.Time{})
	for _, pod := range stale {
		_, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, unmark, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clear the stale removal mark of trainer pod %s: %w", pod.Name, err)
		}
		c.log.Info("cleared a stale removal mark", "job", job.Namespace+"/"+job.Name, "pod", pod.Name, "marked", pod.MarkedForRemoval)
	}
	costs := DeletionCosts(job, trainers)
	for _, pod := range trainers {
		cost, ok := costs[pod.Name]
		if !ok || pod.DeletionCost == cost {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1.AnnotationDeletionCost: cost}}})
		if err != nil {
			return err
		}
		_, err = c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("set the deletion cost of trainer pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// escapeJSONPointer escapes a map key for a JSON pointer (RFC 6901).
func escapeJSONPointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// ensureService creates a role's Service, or updates its selector and ports
// when they drifted.
func (c *Controller) ensureService(ctx context.Context, job *v1.TrainingJob, role v1.Role) error {
	want := Service(job, role)
	existing, err := c.services.Services(job.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err := c.kubeClient.CoreV1().Services(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create Service %s: %w", want.Name, err)
		}
		c.log.Info("created Service", "job", job.Namespace+"/"+job.Name, "service", want.Name)
		c.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventCreated, "Created Service %s", want.Name)
		return nil
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(existing.Spec.Selector, want.Spec.Selector) && samePorts(existing.Spec.Ports, want.Spec.Ports) {
		return nil
	}
	update := existing.DeepCopy()
	update.Spec.Selector, update.Spec.Ports = want.Spec.Selector, want.Spec.Ports
	if _, err := c.kubeClient.CoreV1().Services(job.Namespace).Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Service %s: %w", want.Name, err)
	}
	return nil
}

// samePorts compares the fields the controller sets; the API server fills
// in others (NodePort, AppProtocol) that are not drift.
func samePorts(have, want []corev1.ServicePort) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if have[i].Name != want[i].Name || have[i].Port != want[i].Port || have[i].TargetPort != want[i].TargetPort || have[i].Protocol != want[i].Protocol {
			return false
		}
	}
	return true
}
