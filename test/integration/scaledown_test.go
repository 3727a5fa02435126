package integration

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// waitTrainers waits until the job has exactly running trainers Running and
// pending ones unscheduled, and returns the pods oldest first.
func waitTrainers(t *testing.T, ns, job string, running, pending int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods = podsOf(t, ns, v1.LabelTrainer, job)
		r, p := 0, 0
		for _, pod := range pods {
			switch {
			case pod.DeletionTimestamp != nil:
				return false, nil
			case pod.Status.Phase == corev1.PodRunning:
				r++
			case pod.Spec.NodeName == "":
				p++
			}
		}
		return r == running && p == pending && len(pods) == running+pending, nil
	})
	require.NoError(t, err, "want %d running and %d pending trainers", running, pending)
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	return pods
}

// TestScaleDownRemovesPendingThenNewestTrainers builds the case where the
// ReplicaSet controller's own ranking would delete an old trainer: two old
// trainers share node A, the newest runs alone on node B, one more is
// pending. Scaling from 4 to 2 must remove the pending one and the newest,
// keeping the two oldest.
func TestScaleDownRemovesPendingThenNewestTrainers(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	pool := map[string]string{"pool": ns}
	small := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("10Mi")}}
	job := exampleJob(t, ns, plain, builders.Trainers(1, 8), func(j *v1.TrainingJob) {
		j.Spec.NodeSelector = pool
		j.Spec.Pserver.MinInstance, j.Spec.Pserver.MaxInstance = 1, 1
		j.Spec.Pserver.Resources = small
		j.Spec.Trainer.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	})
	// Node A holds two trainers (and the pserver); node B, added later, one.
	require.NoError(t, cp.AddNodes(testContext(t), framework.NodeSpec{Name: ns + "-a", CPU: "4100m", Memory: "16Gi", Labels: pool}))
	// Untainted: the node must go with the test, or later tests' pods land on it.
	t.Cleanup(func() { assert.NoError(t, cp.DeleteNode(context.Background(), ns+"-a")) })
	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), job, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))
	waitTrainers(t, ns, "example", 1, 0)

	// Creation times have a one-second resolution: space the trainers out so
	// that "newest" is well defined.
	time.Sleep(1100 * time.Millisecond)
	scaleTrainers(t, ns, "example", 2)
	waitTrainers(t, ns, "example", 2, 0)
	require.NoError(t, cp.AddNodes(testContext(t), framework.NodeSpec{Name: ns + "-b", CPU: "2100m", Memory: "16Gi", Labels: pool}))
	// Untainted: the node must go with the test, or later tests' pods land on it.
	t.Cleanup(func() { assert.NoError(t, cp.DeleteNode(context.Background(), ns+"-b")) })
	time.Sleep(1100 * time.Millisecond)
	scaleTrainers(t, ns, "example", 3)
	pods := waitTrainers(t, ns, "example", 3, 0)
	require.Equal(t, ns+"-b", pods[2].Spec.NodeName, "the newest trainer runs alone on node B")
	oldest := []string{pods[0].Name, pods[1].Name}

	time.Sleep(1100 * time.Millisecond)
	scaleTrainers(t, ns, "example", 4)
	waitTrainers(t, ns, "example", 3, 1)

	// The controller saw the uneven spread and priced the trainers by age.
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, pod := range podsOf(t, ns, v1.LabelTrainer, "example") {
			if pod.Spec.NodeName != "" && pod.Annotations[v1.AnnotationDeletionCost] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "running trainers never got a deletion cost")

	scaleTrainers(t, ns, "example", 2)
	left := waitTrainers(t, ns, "example", 2, 0)
	assert.ElementsMatch(t, oldest, []string{left[0].Name, left[1].Name}, "the two oldest trainers must survive the scale-down")
}
