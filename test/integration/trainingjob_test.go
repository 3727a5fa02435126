package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// TestJobRunsOnKwokNodes submits the original-format example job and follows
// it to Running: owned ReplicaSets and Services, pods Running on kwok nodes,
// status counts, kubectl's columns; then deleting the job removes everything.
func TestJobRunsOnKwokNodes(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	tj := jobClient(t)

	created, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	job := waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	assert.Equal(t, v1.ReplicaStatus{Desired: 2, Current: 2, Ready: 2, Summary: "2/2"}, job.Status.Trainers)
	assert.Equal(t, v1.ReplicaStatus{Desired: 2, Current: 2, Ready: 2, Summary: "2/2"}, job.Status.Pservers)
	assert.Equal(t, v1.ReplicaStatus{Desired: 1, Current: 1, Ready: 1, Summary: "1/1"}, job.Status.Master)
	assert.Equal(t, job.Generation, job.Status.ObservedGeneration)

	for _, name := range []string{"example-master", "example-pserver", "example-trainer"} {
		rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(testContext(t), name, metav1.GetOptions{})
		require.NoError(t, err)
		ref := metav1.GetControllerOf(rs)
		require.NotNil(t, ref, "ReplicaSet %s has no controller", name)
		assert.Equal(t, created.UID, ref.UID)
		assert.Equal(t, "TrainingJob", ref.Kind)
	}
	for _, name := range []string{"example-master", "example-pserver"} {
		svc, err := cp.Client.CoreV1().Services(ns).Get(testContext(t), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, created.UID, metav1.GetControllerOf(svc).UID)
	}
	trainers := podsOf(t, ns, v1.LabelTrainer, "example")
	require.Len(t, trainers, 2)
	for _, pod := range trainers {
		assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
		assert.True(t, strings.HasPrefix(pod.Spec.NodeName, "node-"), "trainer %s runs on kwok node %q", pod.Name, pod.Spec.NodeName)
		assert.Equal(t, []string{"paddle_k8s", "start_new_trainer"}, pod.Spec.Containers[0].Command)
		// examplejob.yaml names the etcd inside the master pod as
		// 127.0.0.1:2379; a trainer reaches it through the master Service.
		assert.Contains(t, pod.Spec.Containers[0].Env,
			corev1.EnvVar{Name: "ETCD_ENDPOINTS", Value: "http://example-master." + ns + ".svc:2379"}, "trainer %s", pod.Name)
	}
	masters := podsOf(t, ns, v1.LabelMaster, "example")
	require.Len(t, masters, 1)
	assert.Contains(t, masters[0].Spec.Containers[0].Env, corev1.EnvVar{Name: "ETCD_ENDPOINTS", Value: "127.0.0.1:2379"})

	out, err := cp.Kubectl(testContext(t), "get", "tj", "-n", ns)
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^NAME\s+PHASE\s+TRAINERS\s+MIN\s+MAX\s+PROGRESS\s+THROUGHPUT\s+ETA\s+AGE$`, out)
	assert.Regexp(t, `(?m)^example\s+Running\s+2/2\s+2\s+6\s+\S+$`, out)

	reasons := eventReasons(t, ns, "example")
	assert.Equal(t, 6, count(reasons, v1.EventCreated), "one Created event per object (the progress contract one): %v", reasons)
	assert.Equal(t, 1, count(reasons, v1.EventRunning), "%v", reasons)

	// Deleting the job garbage-collects its ReplicaSets, Services and pods.
	require.NoError(t, tj.PaddlepaddleV1().TrainingJobs(ns).Delete(testContext(t), "example", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}))
	err = wait.PollUntilContextTimeout(testContext(t), 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		rs, err := cp.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		svc, err := cp.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		return len(rs.Items) == 0 && len(svc.Items) == 0 && len(pods.Items) == 0, nil
	})
	require.NoError(t, err, "the job's objects were not garbage-collected")
}

// TestForeignReplicaSetIsLeftAlone puts a ReplicaSet the job does not own in
// the way of its trainers: the controller must neither adopt, patch nor
// delete it, and must say so on the job.
func TestForeignReplicaSetIsLeftAlone(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	replicas := int32(0)
	foreign, err := cp.Client.AppsV1().ReplicaSets(ns).Create(testContext(t), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "example-trainer"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "someone-else"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "someone-else"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "paddlepaddle/edl-fake:latest", Resources: requests("100m", "64Mi")}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns, plain), metav1.CreateOptions{})
	require.NoError(t, err)
	job := waitForJob(t, ns, "example", "Blocked", func(j *v1.TrainingJob) bool { return j.Status.Reason == v1.ReasonBlocked })
	assert.Equal(t, v1.PhasePending, job.Status.Phase)
	assert.Contains(t, job.Status.Message, "ReplicaSet example-trainer")

	// Let a few syncs pass (pod events of nothing, a status write), then check.
	time.Sleep(2 * time.Second)
	after, err := cp.Client.AppsV1().ReplicaSets(ns).Get(testContext(t), "example-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	// The ReplicaSet controller writes the status; nobody may touch the rest.
	assert.Equal(t, foreign.Generation, after.Generation, "the foreign ReplicaSet's spec was written to")
	assert.Equal(t, foreign.Labels, after.Labels)
	assert.Equal(t, foreign.Annotations, after.Annotations)
	assert.Empty(t, after.OwnerReferences, "the foreign ReplicaSet was adopted")
	assert.Equal(t, 1, count(eventReasons(t, ns, "example"), v1.EventBlocked), "one Blocked event, on the edge")
	_, err = cp.Client.AppsV1().ReplicaSets(ns).Get(testContext(t), "example-pserver", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing is created while the job is blocked: %v", err)

	// Once the foreign object is gone, the job proceeds.
	require.NoError(t, cp.Client.AppsV1().ReplicaSets(ns).Delete(testContext(t), "example-trainer", metav1.DeleteOptions{}))
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))
}

// annotateExit makes kwok terminate the pod's container with code (the
// test/kwok pod-exit stage).
func annotateExit(t *testing.T, ns, pod string, code int) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"edl.paddlepaddle.org/fake-exit-code":"%d"}}}`, code)
	_, err := cp.Client.CoreV1().Pods(ns).Patch(testContext(t), pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// TestTrainerExitZeroSucceedsTheJob: a trainer that exits 0 finishes the
// job, which scales every ReplicaSet to 0.
func TestTrainerExitZeroSucceedsTheJob(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	trainers := podsOf(t, ns, v1.LabelTrainer, "example")
	require.NotEmpty(t, trainers)
	annotateExit(t, ns, trainers[0].Name, 0)
	job := waitForJob(t, ns, "example", "Succeeded", phaseIs(v1.PhaseSucceeded))
	assert.Equal(t, v1.ReasonSucceeded, job.Status.Reason)
	assert.Contains(t, job.Status.Message, trainers[0].Name)

	for _, name := range []string{"example-master", "example-pserver", "example-trainer"} {
		err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && *rs.Spec.Replicas == 0 && rs.Status.Replicas == 0, nil
		})
		require.NoError(t, err, "ReplicaSet %s was not scaled to 0", name)
	}
	assert.Equal(t, 1, count(eventReasons(t, ns, "example"), v1.EventSucceeded))
}

// TestPserverFailureFailsAPlainJob: in a job that is not fault tolerant, a
// pserver exiting non-zero fails the job, naming the pod and the code.
func TestPserverFailureFailsAPlainJob(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns, plain), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	pservers := podsOf(t, ns, v1.LabelPserver, "example")
	require.NotEmpty(t, pservers)
	assert.Equal(t, []string{"paddle_k8s", "start_pserver"}, pservers[0].Spec.Containers[0].Command)
	annotateExit(t, ns, pservers[0].Name, 3)
	job := waitForJob(t, ns, "example", "Failed", phaseIs(v1.PhaseFailed))
	assert.Equal(t, v1.ReasonPserverFailed, job.Status.Reason)
	assert.Contains(t, job.Status.Message, pservers[0].Name)
	assert.Contains(t, job.Status.Message, "exited with code 3")
	assert.Equal(t, 1, count(eventReasons(t, ns, "example"), v1.EventFailed))
}
