package integration

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestMinimumFreesTheNodeOfTheOldestTrainers: the early job's two oldest
// trainers run on worker-0, its four newer ones on worker-1 and worker-2
// beside a 2-CPU pod that stays. A late job's minimum (a 6.5-CPU trainer
// and a 0.5-CPU pserver) fits only on worker-0 emptied of those two: the
// others would free 6 CPUs. The plan picks
// them, the actuator marks them with the lowest pod-deletion-cost, and the
// ReplicaSet controller deletes exactly them: the four newer trainers keep
// running. Deleting the newest first, five trainers would go (the early
// job's slack) without freeing worker-0, and the late job would never start.
func TestMinimumFreesTheNodeOfTheOldestTrainers(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "32Gi", Count: 3},
		// The cluster is nearly full when the late job comes, and its
		// pserver could take the load past the default max_load_desired of
		// 0.97 (seen as 0.979 in some runs): the load phase would then take a
		// trainer of the ReplicaSet controller's choice, which is not what
		// this test is about. At 1 the early job still stops at six trainers.
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, CoolDown: 3 * time.Second, RebalanceGap: 1, MaxLoadDesired: 1})

	cordon := func(node string, on bool) {
		t.Helper()
		patch := []byte(`{"spec":{"unschedulable":` + map[bool]string{true: "true", false: "false"}[on] + `}}`)
		_, err := c.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
	trainers := func() map[string]string { // running trainers of early: name -> node
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: v1.LabelTrainer + "=early"})
		require.NoError(t, err)
		out := map[string]string{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				out[p.Name] = p.Spec.NodeName
			}
		}
		return out
	}
	var running map[string]string
	waitTrainersOn := func(what string, want map[string]int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
			running = trainers()
			got := map[string]int{}
			for _, n := range running {
				got[n]++
			}
			replicas, err := c.trainerReplicas(ctx, []string{"early"})
			return err == nil && replicas["early"] == int32(len(running)) && maps.Equal(got, want), nil
		})
		require.NoError(t, err, "%s; running: %v\n%s", what, running, c.describe(ctx))
	}

	cordon("worker-1", true)
	cordon("worker-2", true)
	c.submit(t, ctx, "early", "3", "1") // its pserver and two trainers: 7 of worker-0's 8 CPUs
	waitTrainersOn("the early job never filled worker-0", map[string]int{"worker-0": 2})
	oldest := running

	for _, node := range []string{"worker-1", "worker-2"} {
		_, err := c.kube.CoreV1().Pods(c.ns).Create(ctx, builders.NewPod("stays-"+node, builders.OnNode(node), builders.Requests("2", "")), metav1.CreateOptions{})
		require.NoError(t, err)
		cordon(node, false)
	}
	waitTrainersOn("the early job never grew onto worker-1 and worker-2", map[string]int{"worker-0": 2, "worker-1": 2, "worker-2": 2})
	var newer []string
	for name, node := range running {
		if node != "worker-0" {
			newer = append(newer, name)
		}
	}

	late := wholeJob(c.ns, "late", "training", "6500m")
	late.Spec.Pserver.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
	c.create(t, ctx, late)
	c.waitJob(t, ctx, "late", "the late job never started", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })

	running = trainers()
	for name := range oldest {
		assert.NotContains(t, running, name, "an oldest trainer on worker-0 survived")
	}
	for _, name := range newer {
		assert.Contains(t, running, name, "a newer trainer was stopped though worker-0 was the node to free")
	}
	replicas, err := c.trainerReplicas(ctx, []string{"early"})
	require.NoError(t, err)
	assert.Equal(t, int32(4), replicas["early"], "two trainers went, no more")
}
