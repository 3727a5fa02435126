package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/test/framework"
)

// TestTeamsLendAnIdleShareAndTakeItBack: two teams of weight 1 share four
// nodes of 8 CPUs. While team b is idle, team a's elastic job grows over the
// whole cluster; b submits a job: a's job shrinks — never stopped, never
// below its minimum — and b's starts and grows to its share; b's job
// deleted, a's grows back. The queues' status shows the shares.
func TestTeamsLendAnIdleShareAndTakeItBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	a, b := newTeamsCluster(t, ctx, 1, 1)
	replicas := func(c elasticCluster, job string) int32 {
		r, err := c.trainerReplicas(ctx, []string{job})
		if err != nil {
			return -1
		}
		return r[job]
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) { return cond(), nil })
		require.NoError(t, err, "%s; a: %d, b: %d trainers\n%s", what, replicas(a, "a-job"), replicas(b, "b-job"), a.describe(ctx))
	}

	// Trainers of 2 CPUs, 1 to 20, and a pserver of 1 CPU: 15 trainers and
	// the pserver fill the 31 CPUs under the threshold.
	a.submit(t, ctx, "a-job", "2", "1")
	waitFor("team a's job never grew over the idle cluster", func() bool { return replicas(a, "a-job") >= 14 })

	b.submit(t, ctx, "b-job", "2", "1")
	waitFor("team b never got its share back", func() bool {
		rb, ra := replicas(b, "b-job"), replicas(a, "a-job")
		return rb >= 6 && ra <= 8 && ra >= 1
	})
	job, err := a.tj.PaddlepaddleV1().TrainingJobs(a.ns).Get(ctx, "a-job", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PhaseRunning, job.Status.Phase, "team a's job is never stopped")
	assert.Nil(t, meta.FindStatusCondition(job.Status.Conditions, v1.ConditionPreempted), "nor preempted")
	waitFor("the queues never showed their shares", func() bool {
		q, err := a.tj.PaddlepaddleV1().TrainingQueues().Get(ctx, "team-b", metav1.GetOptions{})
		return err == nil && !q.Status.Deserved.Cpu().IsZero() && q.Status.RunningJobs == 1
	})

	require.NoError(t, b.tj.PaddlepaddleV1().TrainingJobs(b.ns).Delete(ctx, "b-job", metav1.DeleteOptions{}))
	waitFor("team a's job never grew back", func() bool { return replicas(a, "a-job") >= 14 })
}

// TestTeamsOfWeightsOneAndThreeSettleAtAQuarterAndThreeQuarters: two teams
// weighted 1 and 3, each with a job that asks for more than the cluster,
// share it a quarter and three quarters — trainers of 2 CPUs and a pserver
// of 1 each, 31 CPUs under the threshold: 3 and 11 trainers, within one a
// job — and stay there: no trainer moves for 20 intervals.
func TestTeamsOfWeightsOneAndThreeSettleAtAQuarterAndThreeQuarters(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	a, b := newTeamsCluster(t, ctx, 1, 3)
	replicas := func() (int32, int32) {
		ra, err := a.trainerReplicas(ctx, []string{"a-job"})
		if err != nil {
			return -1, -1
		}
		rb, err := b.trainerReplicas(ctx, []string{"b-job"})
		if err != nil {
			return -1, -1
		}
		return ra["a-job"], rb["b-job"]
	}
	a.submit(t, ctx, "a-job", "2", "1")
	b.submit(t, ctx, "b-job", "2", "1")
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		ra, rb := replicas()
		return ra >= 2 && ra <= 4 && rb >= 10 && rb <= 12 && ra+rb >= 13, nil
	})
	ra, rb := replicas()
	require.NoError(t, err, "the teams never settled at a quarter and three quarters: a %d, b %d trainers\n%s", ra, rb, a.describe(ctx))
	for range 20 {
		time.Sleep(time.Second)
		na, nb := replicas()
		require.Equal(t, [2]int32{ra, rb}, [2]int32{na, nb}, "a trainer moved after the teams settled")
	}
}

// newTeamsCluster is a cluster of four nodes of 8 CPUs run by edl with gang
// admission, where team-a owns the namespace "training" and team-b the
// namespace "team-b", of the given weights: the two teams' elastic clusters.
func newTeamsCluster(t *testing.T, ctx context.Context, weightA, weightB int32) (a, b elasticCluster) {
	t.Helper()
	a = newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "32Gi", Count: 4},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, CoolDown: 3 * time.Second, GangAdmission: true})
	b = a
	b.ns = "team-b"
	_, err := a.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, q := range []struct {
		name, ns string
		weight   int32
	}{{"team-a", a.ns, weightA}, {"team-b", b.ns, weightB}} {
		_, err := a.tj.PaddlepaddleV1().TrainingQueues().Create(ctx, &v1.TrainingQueue{ObjectMeta: metav1.ObjectMeta{Name: q.name},
			Spec: v1.TrainingQueueSpec{Namespaces: []string{q.ns}, Weight: &q.weight}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return a, b
}

// TestAQueuedMinimumTakesItsNamespacesQuotaBackFromAGrownJob: a namespace's
// quota of 16 CPUs is full of one elastic job's trainers (1 pserver of 1 CPU
// and 7 trainers of 2, its minimum 1); a second job whose minimum (a pserver
// and 2 trainers, 5 CPUs) fits once 2 of them go is admitted within 2
// intervals of entering the queue, and the first keeps running.
func TestAQueuedMinimumTakesItsNamespacesQuotaBackFromAGrownJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const interval = time.Second
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "32Gi", Count: 4},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: interval, CoolDown: 3 * time.Second, GangAdmission: true})
	_, err := c.kube.CoreV1().ResourceQuotas(c.ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("16")}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	replicas := func(job string) int32 {
		r, err := c.trainerReplicas(ctx, []string{job})
		if err != nil {
			return -1
		}
		return r[job]
	}
	c.submit(t, ctx, "first", "2", "1")
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		return replicas("first") == 7, nil
	})
	require.NoError(t, err, "the first job never filled the quota: %d trainers\n%s", replicas("first"), c.describe(ctx))

	second := gangJob(c.ns, "second")
	second.Spec.Trainer.MinInstance, second.Spec.Trainer.MaxInstance = 2, 2
	_, err = c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Create(ctx, second, metav1.CreateOptions{})
	require.NoError(t, err)
	var job *v1.TrainingJob
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err = c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "second", metav1.GetOptions{})
		return err == nil && job.Status.Phase == v1.PhaseRunning, nil
	})
	require.NoError(t, err, "the second job never ran\n%s", c.describe(ctx))
	queued, admitted := job.CreationTimestamp.Time, meta.FindStatusCondition(job.Status.Conditions, v1.ConditionQueued).LastTransitionTime.Time
	// The conditions' times are whole seconds: 2 intervals, and 1 s for the
	// rounding.
	assert.LessOrEqual(t, admitted.Sub(queued), 2*interval+time.Second, "admitted within 2 intervals of entering the queue")
	assert.Equal(t, int32(5), replicas("first"), "the first job gave back 2 trainers above its minimum (4 CPUs, with the 1 left: 5), no more")
	first, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "first", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PhaseRunning, first.Status.Phase, "the first job keeps running")
	t.Logf("admitted %v after it was created", admitted.Sub(queued))
}
