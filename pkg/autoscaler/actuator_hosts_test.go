package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// horovod makes a job a Horovod job.
func horovod(j *v1.TrainingJob) {
	builders.Horovod("python3 train.py")(j)
}

// horovodDown is a scale-down of the Horovod job h from 3 trainers to 1,
// removing h-trainer-c and h-trainer-b.
var horovodDown = planner.ScaleAction{Job: "ns/h", From: 3, To: 1, Reason: "scale down by 2: room for a pod", Cause: planner.CausePriority,
	Nodes: []string{"n1", "n1"}, Remove: []string{"h-trainer-c", "h-trainer-b"}}

// TestApplyLeavesAHorovodScaleDownToTheController: the autoscaler marks
// the trainers it removes, with the mark's time, then writes the decision —
// the count, v1.AnnotationScaleDownTo, and its record — onto the
// ReplicaSet in one test-and-set patch, leaves the replicas to the
// controller, which lowers them once the hosts file is acked, and returns
// at once: no cycle waits for a hosts file.
func TestApplyLeavesAHorovodScaleDownToTheController(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second},
		objects(elasticJob("h", 1, 4, 3, horovod), []runtime.Object{node("n1", "10", "64Gi")})...)
	start := time.Now()
	require.NoError(t, f.scaler.apply(context.Background(), f.job("h"), horovodDown, f.clock.Now()))
	assert.Less(t, time.Since(start), v1.HostsSettle, "returns without waiting")

	var order []string
	for _, w := range f.writes() {
		order = append(order, w.GetVerb()+" "+w.GetResource().Resource)
	}
	assert.Equal(t, []string{"patch pods", "patch pods", "patch replicasets"}, order, "marked first, then the decision")
	for _, name := range []string{"h-trainer-b", "h-trainer-c"} {
		pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.DeletionCostRemove, pod.Annotations[v1.AnnotationDeletionCost], name)
		assert.Equal(t, f.clock.Now().UTC().Format(time.RFC3339), pod.Annotations[v1.AnnotationMarkedForRemoval], name)
	}
	rs, err := f.kube.AppsV1().ReplicaSets("ns").Get(context.Background(), "h-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *rs.Spec.Replicas, "the controller lowers them")
	to, ok := v1.ScaleDownTo(rs.Annotations)
	require.True(t, ok)
	assert.Equal(t, int32(1), to)
	require.NotNil(t, v1.LastScaleOf(rs.Annotations))
	assert.Equal(t, int32(1), v1.LastScaleOf(rs.Annotations).To)
	var patch []map[string]any
	require.NoError(t, json.Unmarshal([]byte(f.writes()[2].(clienttesting.PatchAction).GetPatch()), &patch))
	assert.Equal(t, map[string]any{"op": "test", "path": "/spec/replicas", "value": float64(3)}, patch[1], "test-and-set on the count planned from")
	assert.Equal(t, []string{"Normal Scaled Scaling trainers from 3 to 1 once the host list dropped h-trainer-c,h-trainer-b: scale down by 2: room for a pod"}, drain(f.recorder))
}

// TestAPendingScaleDownIsTheJobsCount: the planner sees a Horovod job whose
// scale-down is pending at the count decided, so the next cycle does not
// decide it again.
func TestAPendingScaleDownIsTheJobsCount(t *testing.T) {
	objs := objects(elasticJob("h", 1, 4, 3, horovod), []runtime.Object{node("n1", "10", "64Gi")})
	for _, o := range objs {
		if rs, ok := o.(*appsv1.ReplicaSet); ok && rs.Name == "h-trainer" {
			if rs.Annotations == nil {
				rs.Annotations = map[string]string{}
			}
			rs.Annotations[v1.AnnotationScaleDownTo] = "1"
		}
	}
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	jobs, _, _ := f.scaler.elasticJobs()
	require.Len(t, jobs, 1)
	assert.Equal(t, int32(1), jobs[0].Current)
	assert.True(t, jobs[0].NamesRemovals, "a Horovod job's scale-down names the trainers it removes")
}

// TestApplyClearsTheMarksOfAHorovodScaleDownNotDecided: when the decision
// cannot be written (the ReplicaSet changed since the plan), the marks go,
// so that they do not keep running trainers out of the hosts file.
func TestApplyClearsTheMarksOfAHorovodScaleDownNotDecided(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second},
		objects(elasticJob("h", 1, 4, 3, horovod), []runtime.Object{node("n1", "10", "64Gi")})...)
	f.kube.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is gone")
	})
	require.Error(t, f.scaler.apply(context.Background(), f.job("h"), horovodDown, f.clock.Now()))
	for _, name := range []string{"h-trainer-b", "h-trainer-c"} {
		pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotContains(t, pod.Annotations, v1.AnnotationDeletionCost, name)
		assert.NotContains(t, pod.Annotations, v1.AnnotationMarkedForRemoval, name)
	}
	assert.Empty(t, drain(f.recorder))
}

// TestApplyStoppedAfterTheMarksClearsThem: a scale-down stopped — a
// shutdown, a lost lease — once it marked the trainers writes no decision,
// records nothing, and clears the marks with a context of its own.
func TestApplyStoppedAfterTheMarksClearsThem(t *testing.T) {
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second},
		objects(elasticJob("h", 1, 4, 3, horovod), []runtime.Object{node("n1", "10", "64Gi")})...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	marks := 0
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if marks++; marks == len(horovodDown.Remove) {
			cancel() // stopped as the last mark is written
		}
		return false, nil, nil
	})
	require.ErrorIs(t, f.scaler.apply(ctx, f.job("h"), horovodDown, f.clock.Now()), context.Canceled)
	assert.Empty(t, replicaSetPatches(f), "no decision written")
	for _, name := range []string{"h-trainer-b", "h-trainer-c"} {
		pod, err := f.kube.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotContains(t, pod.Annotations, v1.AnnotationDeletionCost, name)
	}
	assert.Empty(t, drain(f.recorder))
}
