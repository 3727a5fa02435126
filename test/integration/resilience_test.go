package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// trainerReplicas reads the trainer ReplicaSet's replicas and generation,
// which counts the writes to its spec (the ReplicaSet controller's status
// writes do not move it).
func trainerReplicas(ctx context.Context, ns, job string) (int32, int64, error) {
	rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, v1.ReplicaSetName(job, v1.RoleTrainer), metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	return *rs.Spec.Replicas, rs.Generation, nil
}

// TestCompetingWriterIsClampedOnce: someone sets the trainer count outside
// [min, max]; the controller clamps it back with one write and one event,
// and then leaves the ReplicaSet alone — no hot loop, no flood of writes.
func TestCompetingWriterIsClampedOnce(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns, plain, builders.Trainers(2, 4)), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	for i, c := range []struct{ write, want int32 }{{99, 4}, {0, 2}, {7, 4}} {
		scaleTrainers(t, ns, "example", c.write)
		var generation int64
		err := wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			replicas, g, err := trainerReplicas(ctx, ns, "example")
			generation = g
			return err == nil && replicas == c.want, nil
		})
		require.NoError(t, err, "replicas %d were not clamped to %d", c.write, c.want)

		// Quiet afterwards: give the controller time for any further writes
		// it would make, then check it made none.
		time.Sleep(3 * time.Second)
		replicas, after, err := trainerReplicas(testContext(t), ns, "example")
		require.NoError(t, err)
		assert.Equal(t, c.want, replicas)
		assert.Equal(t, generation, after, "the controller wrote the ReplicaSet again after clamping it")
		assert.Equal(t, i+1, count(eventReasons(t, ns, "example"), v1.EventScaled), "one Scaled event per clamp")
	}
}

// TestAPIServerOutage stops the API server for 30 s under a running
// controller and starts it again on the same data: the controller must not
// crash, and must pick up work submitted after the restart within 10 s of
// the API server answering again (its informers wait in the transport,
// package reconnect, instead of backing off for up to a minute).
func TestAPIServerOutage(t *testing.T) {
	const resumeBound, recoverTimeout = 10 * time.Second, 4 * time.Minute
	ns := cp.NewNamespace(t)
	startController(t, ns)
	tj := jobClient(t)
	_, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns, plain), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	require.NoError(t, cp.StopAPIServer())
	time.Sleep(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, cp.StartAPIServer(ctx))
	restarted := time.Now()

	second := exampleJob(t, ns, plain)
	second.Name = "after-restart"
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, second, metav1.CreateOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "the API server did not take a job after its restart")
	submitted := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, resumeBound, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, v1.ReplicaSetName(second.Name, v1.RoleTrainer), metav1.GetOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "the controller did not resume within %s of the API server's return", resumeBound)
	t.Logf("work resumed %s after the API server restarted (the job was accepted after %s)",
		time.Since(restarted).Round(100*time.Millisecond), submitted.Sub(restarted).Round(100*time.Millisecond))

	// Running needs pods: kube-controller-manager, kube-scheduler and kwok
	// come back through client-go's own backoff, which a 30 s outage grows
	// to a minute or more (once 95 s in CI), so they get longer than edl.
	waitForJobWithin(t, recoverTimeout, ns, second.Name, "Running", phaseIs(v1.PhaseRunning))
	// The job from before the outage is still Running and owns its objects.
	job := waitForJobWithin(t, recoverTimeout, ns, "example", "Running", phaseIs(v1.PhaseRunning))
	assert.Equal(t, int32(2), job.Status.Trainers.Ready, fmt.Sprint(job.Status))
}
