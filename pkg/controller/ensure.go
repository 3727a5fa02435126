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
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// ensureReplicaSet creates a role's ReplicaSet, or JSON-patches the replicas
// and the template that drifted from what the job asks for. A job stopped
// for stop (stopReason) gets 0 replicas; the template of a queued job
// carries the admission gate.
//
// A trainer ReplicaSet of a job whose trainers leave its host list first
// (Horovod) is lowered only once the list without the trainers it removes
// is acked — every master pod carries its version — and v1.HostsSettle
// passed since the last write ([hostsHolds]), or v1.HostsDropTimeout after
// the autoscaler decided (v1.AnnotationScaleDownTo), with a Warning event.
// The master of a job whose training restarts with it (PyTorch, Horovod)
// is its last pod to go: stopped, it keeps its replica while trainer pods
// remain.
func (c *Controller) ensureReplicaSet(ctx context.Context, job *v1.TrainingJob, role v1.Role, existing *appsv1.ReplicaSet, in rsInputs) error {
	stop, queued, acked := in.stop, in.queued, in.acked
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
	if existing != nil && existing.DeletionTimestamp != nil {
		// Going (a finished job's, its pods kept: [Controller.keepPods]; or
		// deleted by someone): its deletion's event brings the job back, and
		// a job that still needs it creates it again.
		return nil
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

	have := int32(1)
	if existing.Spec.Replicas != nil {
		have = *existing.Spec.Replicas
	}
	target, pending := scaleDownTarget(existing)
	want := build(desiredReplicas(job, role, &target, stop == stopFinished))
	var ops []jsonPatchOp
	if role == v1.RoleTrainer && frameworks.LeavesFirst(&job.Spec) && stop == "" && *want.Spec.Replicas < have {
		// Not before the master pods have the hosts file without the trainers.
		key := job.Namespace + "/" + job.Name
		now := c.pacer.clock.Now()
		wait := c.holds.wait(key, now)
		if !acked && wait <= 0 {
			wait = time.Second // the nudges' events bring the job back; this bounds the wait
		}
		var decided time.Time
		if r := v1.LastScaleOf(existing.Annotations); pending && r != nil {
			decided = r.Time.Time
		}
		switch {
		case wait <= 0:
		case !decided.IsZero() && !now.Before(decided.Add(v1.HostsDropTimeout)):
			c.log.Warn("scaling down without the master pods acking the hosts file", "job", key, "to", *want.Spec.Replicas)
			c.recorder.Eventf(job, corev1.EventTypeWarning, v1.EventHostsNotUpdated,
				"Scaling down to %d trainers without every master pod having the hosts file that drops the trainers removed within %s", *want.Spec.Replicas, v1.HostsDropTimeout)
		default:
			c.log.Debug("holding the scale-down until the master pods have the hosts file without the trainers", "job", key, "wait", wait, "acked", acked)
			want.Spec.Replicas = &have
			if !decided.IsZero() {
				wait = min(wait, decided.Add(v1.HostsDropTimeout).Sub(now))
			}
			c.queue.AddAfter(key, wait)
		}
	}
	if role == v1.RoleMaster && stop != "" && in.trainersLeft && frameworks.Training(&job.Spec) != nil && *want.Spec.Replicas < have {
		want.Spec.Replicas = &have // the trainers go first; their pods' events bring the job back
	}
	// A JSON patch, so that a new template replaces the old one whole:
	// fields the job no longer sets disappear with it.
	if have != *want.Spec.Replicas {
		ops = append(ops, jsonPatchOp{"replace", "/spec/replicas", *want.Spec.Replicas})
	}
	if _, ok := existing.Annotations[v1.AnnotationScaleDownTo]; ok && *want.Spec.Replicas <= target {
		// Done, or past: the ReplicaSet is at the count decided.
		ops = append(ops, jsonPatchOp{"remove", "/metadata/annotations/" + escapeJSONPointer(v1.AnnotationScaleDownTo), nil})
	}
	if hash := want.Annotations[AnnotationTemplateHash]; existing.Annotations[AnnotationTemplateHash] != hash {
		// The job's spec changed: new pods start from the new template; a
		// ReplicaSet never restarts running ones.
		if role == v1.RoleTrainer && want.Spec.Template.Spec.ServiceAccountName != existing.Spec.Template.Spec.ServiceAccountName {
			if err := c.bindTrainerAccount(ctx, job); err != nil {
				return err
			}
		}
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
		case pending && *want.Spec.Replicas == target:
			why = "the autoscaler's scale-down, once the hosts file left out the trainers it removes"
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

// rsInputs is what a sync knows that [Controller.ensureReplicaSet] needs:
// why the job is stopped ("" when it runs), whether it is queued, whether
// its hosts file is acked ([Controller.ensureHosts]; true without one), and
// whether trainer pods remain.
type rsInputs struct {
	stop          string
	queued, acked bool
	trainersLeft  bool
}

// scaleDownTarget is what a trainer ReplicaSet's replicas are to be: its
// replicas, or the count of a scale-down decided and not applied yet
// (v1.AnnotationScaleDownTo), which pending reports.
func scaleDownTarget(rs *appsv1.ReplicaSet) (target int32, pending bool) {
	target = 1
	if rs.Spec.Replicas != nil {
		target = *rs.Spec.Replicas
	}
	if to, ok := v1.ScaleDownTo(rs.Annotations); ok && to < target {
		return to, true
	}
	return target, false
}

// MarkTTL is how long a trainer's removal mark (v1.DeletionCostRemove,
// timed by v1.AnnotationMarkedForRemoval) stands at the least: the
// autoscaler marks the trainers it removes a moment before it lowers the
// replicas or decides a pending scale-down.
const MarkTTL = time.Minute

// StaleMarks returns the trainers whose removal mark is stale at now — the
// mark is older than MarkTTL and the trainer is no longer going to be
// deleted: no more trainers are active than target, the count the trainer
// ReplicaSet runs or is to run ([scaleDownTarget]) — and how long until the
// next of the others passes MarkTTL (0 for none). A mark without its time
// is left alone. StaleMarks is pure.
func StaleMarks(trainers []*cluster.Pod, target int32, now time.Time) (stale []*cluster.Pod, next time.Duration) {
	if countPods(trainers, isActive) > target {
		return nil, 0 // the ReplicaSet deletes the marked first
	}
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
func (c *Controller) ensureDeletionCosts(ctx context.Context, key string, job *v1.TrainingJob, trainers []*cluster.Pod, target int32, now time.Time) error {
	stale, next := StaleMarks(trainers, target, now)
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
