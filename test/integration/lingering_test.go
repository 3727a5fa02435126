package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/test/framework"
)

// holdFinalizer keeps a deleted pod terminating until the test lets it go,
// as a kubelet that falls behind on its deletions does.
const holdFinalizer = "test.paddlepaddle.org/hold"

// TestLingeringTrainerIsNoLoad: a trainer that stays terminating long after
// its grace period (a slow kubelet's backlog, here a finalizer) keeps its
// room from growth but is no load to shrink for. On 4 nodes of 4 CPUs at
// max_load_desired 0.9 (14.4 CPUs) a job grows to 14 trainers of 1 CPU and a
// 100m pserver (14.1 CPUs). One trainer is deleted and held: the ReplicaSet
// replaces it, and the nodes hold 15.1 CPUs of requests. Counting the held
// trainer as load would take a trainer from the job once it is SettleSlack
// past its grace period; the job must keep its 14.
func TestLingeringTrainerIsNoLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 4},
		map[string]int32{"training": 100},
		autoscaler.Config{Interval: time.Second, MaxLoadDesired: 0.9, CoolDown: 3 * time.Second})
	c.submit(t, ctx, "alpha", "1", "100m")

	running := func() (live []corev1.Pod, held *corev1.Pod) {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: v1.LabelTrainer + "=alpha"})
		require.NoError(t, err)
		for _, p := range pods.Items {
			switch {
			case p.DeletionTimestamp != nil:
				held = &p
			case p.Status.Phase == corev1.PodRunning:
				live = append(live, p)
			}
		}
		return live, held
	}
	var replicas map[string]int32
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			var err error
			replicas, err = c.trainerReplicas(ctx, []string{"alpha"})
			return err == nil && cond(), nil
		})
		require.NoError(t, err, "%s; trainers: %v\n%s", what, replicas, c.describe(ctx))
	}
	waitFor("the job never grew to 14 running trainers", func() bool {
		live, _ := running()
		return replicas["alpha"] == 14 && len(live) == 14
	})

	// Hold one trainer and delete it; the test lets it go at the end.
	live, _ := running()
	victim := live[0].Name
	hold, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": []string{holdFinalizer}}})
	require.NoError(t, err)
	_, err = c.kube.CoreV1().Pods(c.ns).Patch(ctx, victim, types.MergePatchType, hold, metav1.PatchOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		release := []byte(`{"metadata":{"finalizers":null}}`)
		_, err := c.kube.CoreV1().Pods(c.ns).Patch(context.Background(), victim, types.MergePatchType, release, metav1.PatchOptions{})
		assert.NoError(t, err)
	})
	require.NoError(t, c.kube.CoreV1().Pods(c.ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	var held *corev1.Pod
	waitFor("the ReplicaSet never replaced the held trainer", func() bool {
		live, held = running()
		return len(live) == 14 && held != nil && held.Name == victim
	})
	load, pending, err := c.load(ctx)
	require.NoError(t, err)
	require.Zero(t, pending)
	require.Greater(t, load, 0.9, "the held trainer's requests take the nodes past max_load_desired")

	// SettleSlack after its grace period the trainer lingers: from then on it
	// would count as load. Watch a few intervals past that.
	deadline := held.DeletionTimestamp.Add(time.Duration(ptr.Deref(held.DeletionGracePeriodSeconds, 0)) * time.Second)
	time.Sleep(time.Until(deadline.Add(planner.SettleSlack + 2*time.Second)))
	assert.Never(t, func() bool {
		got, err := c.trainerReplicas(ctx, []string{"alpha"})
		return err == nil && got["alpha"] != 14
	}, 6*time.Second, 500*time.Millisecond, "edl shrank the job for a trainer that lingers\n%s", c.describe(ctx))
	_, held = running()
	require.NotNil(t, held, "the trainer was held all along")

	job, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "alpha", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, job.Status.LastScale)
	assert.Contains(t, job.Status.LastScale.Reason, "scale up", "the last scaling is the growth, no scale-down since")
}
