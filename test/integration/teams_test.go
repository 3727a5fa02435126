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
