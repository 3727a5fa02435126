package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// apply patches the trainer ReplicaSet from act.From to act.To — the patch
// tests the old count, so a concurrent writer wins and the next plan starts
// from what it wrote — then records the decision as an event and in the job's
// status.
func (a *Autoscaler) apply(ctx context.Context, job *v1.TrainingJob, act ScaleAction, now time.Time) error {
	name := v1.ReplicaSetName(job.Name, v1.RoleTrainer)
	rs, err := a.replicaSets.ReplicaSets(job.Namespace).Get(name)
	if err != nil {
		return fmt.Errorf("get ReplicaSet %s: %w", name, err)
	}
	// The patch tests the object as well as the count: a ReplicaSet deleted
	// and created again under the same name (another owner's, or the
	// controller's after a deletion) is not the one planned for.
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": rs.UID},
		{"op": "test", "path": "/spec/replicas", "value": act.From},
		{"op": "replace", "path": "/spec/replicas", "value": act.To},
	})
	if err != nil {
		return err
	}
	if _, err := a.kubeClient.AppsV1().ReplicaSets(job.Namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			return fmt.Errorf("ReplicaSet %s no longer has %d replicas: %w", name, act.From, err)
		}
		return fmt.Errorf("patch ReplicaSet %s: %w", name, err)
	}
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Scaled(act)
	}
	a.log.Info("scaled trainers", "job", act.Job, "from", act.From, "to", act.To, "reason", act.Reason)
	a.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventScaled, "Scaled trainers from %d to %d: %s", act.From, act.To, act.Reason)

	record := v1.ScaleRecord{Time: metav1.NewTime(now), From: act.From, To: act.To, Reason: act.Reason}
	status, err := json.Marshal(map[string]any{"status": map[string]any{"lastScale": record}})
	if err != nil {
		return err
	}
	_, err = a.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, status, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("record the scaling in the status of %s: %w", act.Job, err)
	}
	return nil
}
