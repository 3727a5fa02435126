package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/test/framework"
)

// TestAJobThatNeverStartsIsRequeuedAndItsRoomGoesToTheNext: a job admitted
// whose pods can never be scheduled (they mount a PersistentVolumeClaim
// that does not exist, which EDL does not model) holds the room of its
// minimum until the start deadline; then it goes back to the queue naming
// the scheduler's reason, its pods go, and the job queued behind it starts.
func TestAJobThatNeverStartsIsRequeuedAndItsRoomGoesToTheNext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const deadline = 8 * time.Second
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, GangAdmission: true,
			StartDeadline: deadline, StartRetries: 3})
	jobs := c.tj.PaddlepaddleV1().TrainingJobs(c.ns)
	get := func(name string, what string, ok func(*v1.TrainingJob) bool) *v1.TrainingJob {
		t.Helper()
		var job *v1.TrainingJob
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			job, err = jobs.Get(ctx, name, metav1.GetOptions{})
			return err == nil && ok(job), nil
		})
		require.NoError(t, err, "%s never %s\n%s", name, what, c.describe(ctx))
		return job
	}

	// stuck needs 7 of the 8 CPUs, and a claim that does not exist.
	stuck := gangJob(c.ns, "stuck")
	stuck.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "missing"}}}}
	// Before any admission can happen: the time the test sees the
	// admission is later than the admission, by up to a poll.
	created := time.Now()
	_, err := jobs.Create(ctx, stuck, metav1.CreateOptions{})
	require.NoError(t, err)
	get("stuck", "was admitted", func(j *v1.TrainingJob) bool {
		return meta.IsStatusConditionFalse(j.Status.Conditions, v1.ConditionQueued)
	})
	_, err = jobs.Create(ctx, gangJob(c.ns, "next"), metav1.CreateOptions{})
	require.NoError(t, err)

	requeued := get("stuck", "was requeued", func(j *v1.TrainingJob) bool { return j.Status.Requeues == 1 })
	took := time.Since(created)
	c.waitForEvent(t, ctx, "stuck", v1.EventRequeued)
	cond := meta.FindStatusCondition(requeued.Status.Conditions, v1.ConditionQueued)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, v1.ReasonNotStarted, cond.Reason)
	assert.Contains(t, cond.Message, "requeued (try 1 of 4): its minimum was not all running 8s after its admission")
	assert.Contains(t, cond.Message, `persistentvolumeclaim "missing" not found`, "the scheduler's reason")
	require.NotNil(t, requeued.Status.RetryAfter)
	assert.GreaterOrEqual(t, took, deadline, "not before the deadline")

	// Its room goes to next, which was waiting behind it.
	get("next", "ran", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if name, _, ok := v1.JobOf(p.Labels); ok && name == "stuck" {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "the requeued job kept pods\n%s", c.describe(ctx))
	stuckNow, err := jobs.Get(ctx, "stuck", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PhaseQueued, stuckNow.Status.Phase, "it waits in the queue")
	t.Logf("requeued %v after its submission (deadline %v)", took.Round(time.Millisecond), deadline)
}
