package autoscaler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

func withCondition(c metav1.Condition) func(*v1.TrainingJob) {
	return func(j *v1.TrainingJob) { j.Status.Conditions = append(j.Status.Conditions, c) }
}

// TestRunOnceRecordsTheLimitOnce: the first cycle writes the Scaling
// condition, beside the controller's conditions; the next cycles of a
// steady cluster write nothing.
func TestRunOnceRecordsTheLimitOnce(t *testing.T) {
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonRunning, Message: "running"}
	objs := objects(elasticJob("a", 1, 2, 2, withCondition(ready)), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	assert.Empty(t, f.scaler.RunOnce(context.Background()))

	writes := f.writes()
	require.Len(t, writes, 1, "one status patch")
	patch := writes[0].(clienttesting.PatchAction)
	assert.Equal(t, "status", patch.GetSubresource())
	assert.Equal(t, types.JSONPatchType, patch.GetPatchType())
	job := f.waitForJob("a", func(j *v1.TrainingJob) bool { return len(j.Status.Conditions) == 2 })
	assert.Equal(t, v1.ConditionReady, job.Status.Conditions[0].Type, "the controller's condition stays")
	scaling := job.Status.Conditions[1]
	assert.Equal(t, v1.ConditionScaling, scaling.Type)
	assert.Equal(t, metav1.ConditionTrue, scaling.Status)
	assert.Equal(t, v1.ScalingAtMax, scaling.Reason)
	assert.Equal(t, "at its maximum, 2 of 1..2 trainers", scaling.Message)
	assert.True(t, scaling.LastTransitionTime.Time.Equal(f.clock.Now()))

	f.kube.ClearActions()
	f.tj.ClearActions()
	for range 3 {
		f.clock.Step(time.Second)
		f.scaler.RunOnce(context.Background())
	}
	assert.Empty(t, f.writes(), "a steady cluster writes nothing")
}

// TestRunOnceUpdatesTheLimitInPlace: a new cause replaces the job's Scaling
// condition where it is, after testing that it is still there; the
// transition time moves only with the status.
func TestRunOnceUpdatesTheLimitInPlace(t *testing.T) {
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonRunning, Message: "running"}
	stale := metav1.Condition{Type: v1.ConditionScaling, Status: metav1.ConditionFalse, Reason: v1.ScalingLoad, Message: "old",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	// 1 CPU of 1 used by another pod: held at its minimum by load.
	objs := objects(elasticJob("a", 1, 4, 1, withCondition(stale), withCondition(ready)), []runtime.Object{node("n1", "1", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	assert.Empty(t, f.scaler.RunOnce(context.Background()))

	writes := f.writes()
	require.Len(t, writes, 1)
	var ops []map[string]any
	require.NoError(t, json.Unmarshal(writes[0].(clienttesting.PatchAction).GetPatch(), &ops))
	require.Len(t, ops, 2)
	assert.Equal(t, map[string]any{"op": "test", "path": "/status/conditions/0/type", "value": "Scaling"}, ops[0])
	assert.Equal(t, "replace", ops[1]["op"])
	job := f.waitForJob("a", func(j *v1.TrainingJob) bool { return j.Status.Conditions[0].Reason != v1.ScalingLoad })
	require.Len(t, job.Status.Conditions, 2)
	assert.Equal(t, v1.ScalingAtMin, job.Status.Conditions[0].Reason)
	assert.Contains(t, job.Status.Conditions[0].Message, "held at its minimum of 1 trainers: CPU load 1 is above max_load_desired 0.97")
	assert.True(t, job.Status.Conditions[0].LastTransitionTime.Time.Equal(stale.LastTransitionTime.Time), "still False: no transition")
	assert.Equal(t, ready, job.Status.Conditions[1])
}

// TestRecordStatusLosesToAConcurrentWriter: a job whose conditions changed
// since they were read is not written; the next plan retries.
func TestRecordStatusLosesToAConcurrentWriter(t *testing.T) {
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonRunning, Message: "running"}
	objs := objects(elasticJob("a", 1, 2, 2, withCondition(ready)), []runtime.Object{node("n1", "10", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	job, err := f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(context.Background(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	stale := job.DeepCopy()
	stale.ResourceVersion = "stale"
	err = f.scaler.recordStatus(context.Background(), stale, &planner.Explanation{Job: "ns/a", Limit: planner.LimitAtMax, Message: "at its maximum"}, nil, f.clock.Now())
	require.Error(t, err) // the fake clientset fails the test op with an error of its own; the API server answers 422 (errStale)
	job, err = f.tj.PaddlepaddleV1().TrainingJobs("ns").Get(context.Background(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.Condition{ready}, job.Status.Conditions, "nothing written")
}

// waitForJob waits until the informer's copy of job name satisfies ok.
func (f *actuatorFixture) waitForJob(name string, ok func(*v1.TrainingJob) bool) *v1.TrainingJob {
	var job *v1.TrainingJob
	require.Eventually(f.t, func() bool {
		j, err := f.scaler.jobs.TrainingJobs("ns").Get(name)
		job = j
		return err == nil && ok(j)
	}, 5*time.Second, time.Millisecond)
	return job
}

// TestRunOnceRewritesFiguresAtMostOncePerRefresh: a message whose figures
// moved is rewritten only FigureRefresh after the last write; a new reason
// is written at once.
func TestRunOnceRewritesFiguresAtMostOncePerRefresh(t *testing.T) {
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonRunning, Message: "running"}
	// 1 CPU, all of it the job's one trainer: held at its minimum by load.
	objs := objects(elasticJob("a", 1, 4, 1, withCondition(ready)), []runtime.Object{node("n1", "1", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	ctx := context.Background()
	scaling := func(j *v1.TrainingJob) *metav1.Condition {
		for i := range j.Status.Conditions {
			if j.Status.Conditions[i].Type == v1.ConditionScaling {
				return &j.Status.Conditions[i]
			}
		}
		return nil
	}
	statusWrites := func() int {
		n := 0
		for _, w := range f.writes() {
			if w.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}

	f.scaler.RunOnce(ctx)
	require.Equal(t, 1, statusWrites())
	f.waitForJob("a", func(j *v1.TrainingJob) bool { c := scaling(j); return c != nil && c.Reason == v1.ScalingAtMin })

	// Another pod on the node: the load figure moves, the reason does not.
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	_, err := f.kube.CoreV1().Pods("ns").Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.tracker.InquiryResource().CPURequestMilli == 1500 }, 5*time.Second, time.Millisecond)
	f.kube.ClearActions()
	f.tj.ClearActions()
	f.clock.Step(FigureRefresh / 2)
	f.scaler.RunOnce(ctx)
	assert.Zero(t, statusWrites(), "only the figures moved, and the condition is fresh")

	f.clock.Step(FigureRefresh / 2)
	f.scaler.RunOnce(ctx)
	assert.Equal(t, 1, statusWrites(), "a refresh later the figures are written")
	job := f.waitForJob("a", func(j *v1.TrainingJob) bool { return strings.Contains(scaling(j).Message, "CPU load 1.5") })
	assert.Equal(t, v1.ScalingAtMin, scaling(job).Reason)

	// Room on a new node: the reason changes, and is written at once.
	_, err = f.kube.CoreV1().Nodes().Create(ctx, node("n2", "10", "64Gi"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.tracker.InquiryResource().CPUTotalMilli == 11000 }, 5*time.Second, time.Millisecond)
	f.kube.ClearActions()
	f.tj.ClearActions()
	f.clock.Step(time.Second)
	require.Len(t, f.scaler.RunOnce(ctx), 1, "it grows")
	assert.Equal(t, 1, statusWrites(), "the decision and the new reason, in one patch")
	job = f.waitForJob("a", func(j *v1.TrainingJob) bool { return scaling(j).Reason != v1.ScalingAtMin })
	assert.Equal(t, v1.ScalingAtMax, scaling(job).Reason)
}
