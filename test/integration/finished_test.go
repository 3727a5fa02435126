package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// TestFailedJobKeepsItsFailedPods: a plain job whose trainer exits 3 fails,
// and by default (spec.runPolicy.cleanPodPolicy Running) keeps that pod:
// out of its ReplicaSet, which is gone, labelled as kept, owned by the job
// and stopped (kwok's pod-deadline stage plays the kubelet's deadline),
// its container's exit kept; every other pod goes and nothing starts
// again. Once ttlSecondsAfterFinished is set and has passed, the job is
// deleted, and the garbage collector takes the kept pod with it.
func TestFailedJobKeepsItsFailedPods(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns, plain), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	trainers := podsOf(t, ns, v1.LabelTrainer, "example")
	require.NotEmpty(t, trainers)
	failed := trainers[0].Name
	annotateExit(t, ns, failed, 3)
	job := waitForJob(t, ns, "example", "Failed", phaseIs(v1.PhaseFailed))
	assert.Equal(t, v1.ReasonTrainerFailed, job.Status.Reason)

	var kept *corev1.Pod
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, failed, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		kept = p
		return p.Labels[v1.LabelKept] == "example" && p.Status.Phase == corev1.PodFailed, nil
	})
	require.NoError(t, err, "the failed trainer kept and stopped: %+v %s", kept.Labels, kept.Status.Phase)
	assert.NotContains(t, kept.Labels, v1.LabelTrainer)
	assert.Equal(t, "trainer", kept.Labels[v1.LabelKeptRole])
	assert.Equal(t, "DeadlineExceeded", kept.Status.Reason)
	require.Len(t, kept.OwnerReferences, 1)
	assert.Equal(t, job.UID, kept.OwnerReferences[0].UID, "owned by the job")
	require.NotEmpty(t, kept.Status.ContainerStatuses)
	require.NotNil(t, kept.Status.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, int32(3), kept.Status.ContainerStatuses[0].State.Terminated.ExitCode, "its exit, as it failed")

	// Deleted with propagation Orphan, the ReplicaSet carries the orphan
	// finalizer until the garbage collector has let its pods go.
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, "example-trainer", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "the trainer ReplicaSet is gone")
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 1, nil
	})
	require.NoError(t, err, "only the kept pod is left")
	assert.Contains(t, eventReasons(t, ns, "example"), v1.EventPodsKept)

	// Nothing runs again: a few seconds on, the same pods.
	time.Sleep(3 * time.Second)
	pods, err := cp.Client.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	assert.Equal(t, failed, pods.Items[0].Name)
	assert.Equal(t, corev1.PodFailed, pods.Items[0].Status.Phase)

	_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Patch(testContext(t), "example", types.MergePatchType,
		[]byte(`{"spec":{"runPolicy":{"ttlSecondsAfterFinished":1}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, jobErr := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Get(ctx, "example", metav1.GetOptions{})
		_, podErr := cp.Client.CoreV1().Pods(ns).Get(ctx, failed, metav1.GetOptions{})
		return apierrors.IsNotFound(jobErr) && apierrors.IsNotFound(podErr), nil
	})
	require.NoError(t, err, "the job deleted after its TTL, the kept pod with it")
}
