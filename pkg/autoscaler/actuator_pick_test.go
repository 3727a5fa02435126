package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// applyPicked applies a scale-down of job a from 3 to 2 trainers that picks
// a-trainer-a, and returns the writes and the pod afterwards.
func applyPicked(t *testing.T, failPatch bool) ([]clienttesting.Action, map[string]string, error) {
	objs := objects(elasticJob("a", 1, 4, 3), objects([]runtime.Object{node("n1", "10", "64Gi")}))
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	if failPatch {
		f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "a-trainer", nil)
		})
	}
	ctx := context.Background()
	job, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	act := planner.ScaleAction{Job: "ns/a", From: 3, To: 2, Reason: "scale down by 1: room for a pod", Cause: planner.CausePriority,
		Nodes: []string{"n1"}, Remove: []string{"a-trainer-a"}}
	applyErr := f.scaler.apply(ctx, job, act, f.clock.Now())
	pod, err := f.kube.CoreV1().Pods("ns").Get(ctx, "a-trainer-a", metav1.GetOptions{})
	require.NoError(t, err)
	return f.writes(), pod.Annotations, applyErr
}

// TestApplyMarksPickedTrainersFirst: the trainers a plan picked carry the
// lowest pod-deletion-cost before the replicas are lowered, so the
// ReplicaSet controller deletes them and not its newest trainer.
func TestApplyMarksPickedTrainersFirst(t *testing.T) {
	writes, annotations, err := applyPicked(t, false)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(writes), 2)
	assert.Equal(t, "pods", writes[0].GetResource().Resource, "the mark comes first")
	assert.Equal(t, "a-trainer-a", writes[0].(clienttesting.PatchAction).GetName())
	assert.Equal(t, "replicasets", writes[1].GetResource().Resource)
	assert.Equal(t, v1.DeletionCostRemove, annotations[v1.AnnotationDeletionCost])
}

// TestApplyUnmarksWhenTheScaleDownFails: a mark left behind would make the
// job's next scale-down delete this trainer instead of the ones its plan
// picks.
func TestApplyUnmarksWhenTheScaleDownFails(t *testing.T) {
	writes, annotations, err := applyPicked(t, true)
	require.Error(t, err)
	var pods int
	for _, w := range writes {
		if w.GetResource().Resource == "pods" {
			pods++
		}
	}
	assert.Equal(t, 2, pods, "marked, then unmarked")
	assert.NotContains(t, annotations, v1.AnnotationDeletionCost)
}
