package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
	"github.com/paddlepaddle/edl/test/framework"
)

// noRequestsJob is gangJob with no resources stated: 1 pserver and 3
// trainers whose price is what the namespace's LimitRanges give them.
func noRequestsJob(ns, name string) *v1.TrainingJob {
	j := gangJob(ns, name)
	j.Spec.Trainer.Resources = corev1.ResourceRequirements{}
	j.Spec.Pserver.Resources = corev1.ResourceRequirements{}
	return j
}

// TestJobWithoutRequestsIsPricedWithTheLimitRangeDefaults: a job stating no
// requests in a namespace whose LimitRange requests 1 CPU per container and
// whose quota holds 2 CPU costs 4 CPU, so it stays Queued naming the quota,
// with no pod, and starts whole once the quota is raised.
func TestJobWithoutRequestsIsPricedWithTheLimitRangeDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, GangAdmission: true})
	lr := builders.LimitRange("defaults", c.ns, builders.ContainerDefaults([]string{"cpu", "2", "memory", "512Mi"}, []string{"cpu", "1", "memory", "256Mi"}))
	_, err := c.kube.CoreV1().LimitRanges(c.ns).Create(ctx, lr, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.kube.CoreV1().ResourceQuotas(c.ns).Create(ctx, builders.Quota("compute", c.ns, []string{"requests.cpu", "2"}), metav1.CreateOptions{})
	require.NoError(t, err)

	c.create(t, ctx, noRequestsJob(c.ns, "bare"))
	job := c.waitJob(t, ctx, "bare", "never Queued with its quota named", func(j *v1.TrainingJob) bool {
		return j.Status.Phase == v1.PhaseQueued && conditionOf(j, v1.ConditionQueued).Reason == v1.ReasonExceedsQuota
	})
	assert.Contains(t, job.Status.Message, "needs 4 CPU of namespace "+c.ns+"'s quota requests.cpu, above its hard limit of 2 CPU")
	c.staysWithoutPods(t, ctx, "bare")

	quota, err := c.kube.CoreV1().ResourceQuotas(c.ns).Get(ctx, "compute", metav1.GetOptions{})
	require.NoError(t, err)
	quota.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("10")
	_, err = c.kube.CoreV1().ResourceQuotas(c.ns).Update(ctx, quota, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.runsWhole(t, ctx, "bare", 4)
}

// TestQuotaOnLimitsKeepsAJobWithoutLimitsWhole: a quota tracking limits.cpu
// makes the API server refuse every pod that states no CPU limit, so a job
// stating none waits as WillBeRefused, naming the role, the field and the
// quota, with no pod; once a LimitRange gives containers a default limit,
// it starts whole.
func TestQuotaOnLimitsKeepsAJobWithoutLimitsWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, GangAdmission: true})
	_, err := c.kube.CoreV1().ResourceQuotas(c.ns).Create(ctx, builders.Quota("compute", c.ns, []string{"limits.cpu", "40"}), metav1.CreateOptions{})
	require.NoError(t, err)

	c.create(t, ctx, gangJob(c.ns, "unlimited")) // requests, no limits
	job := c.waitJob(t, ctx, "unlimited", "never Queued as WillBeRefused", func(j *v1.TrainingJob) bool {
		return j.Status.Phase == v1.PhaseQueued && conditionOf(j, v1.ConditionQueued).Reason == v1.ReasonWillBeRefused
	})
	assert.Contains(t, job.Status.Message, "ResourceQuota compute tracks limits.cpu")
	c.staysWithoutPods(t, ctx, "unlimited")

	lr := builders.LimitRange("defaults", c.ns, builders.ContainerDefaults([]string{"cpu", "2"}, nil))
	_, err = c.kube.CoreV1().LimitRanges(c.ns).Create(ctx, lr, metav1.CreateOptions{})
	require.NoError(t, err)
	c.runsWhole(t, ctx, "unlimited", 4)
}

// TestPriorityClassUncountedQuotaKeepsTheJobWhole: a quota scoped to the
// job's PriorityClass that cannot hold its minimum (7 CPU against 4) keeps
// the job whole in the queue, naming the quota, with no pod; once it is
// raised, the job runs whole.
func TestPriorityClassUncountedQuotaKeepsTheJobWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, GangAdmission: true})
	scoped := builders.Quota("training-cpu", c.ns, []string{"requests.cpu", "4"}, func(q *corev1.ResourceQuota) {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"training"}}}}
	})
	_, err := c.kube.CoreV1().ResourceQuotas(c.ns).Create(ctx, scoped, metav1.CreateOptions{})
	require.NoError(t, err)

	c.create(t, ctx, gangJob(c.ns, "big")) // 1 pserver of 1 CPU, 3 trainers of 2 CPU: 7 CPU
	job := c.waitJob(t, ctx, "big", "never Queued with the scoped quota named", func(j *v1.TrainingJob) bool {
		return j.Status.Phase == v1.PhaseQueued && conditionOf(j, v1.ConditionQueued).Reason == v1.ReasonExceedsQuota
	})
	assert.Contains(t, job.Status.Message, "ResourceQuota training-cpu's requests.cpu, above its hard limit of 4")
	c.staysWithoutPods(t, ctx, "big")

	q, err := c.kube.CoreV1().ResourceQuotas(c.ns).Get(ctx, "training-cpu", metav1.GetOptions{})
	require.NoError(t, err)
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("10")
	_, err = c.kube.CoreV1().ResourceQuotas(c.ns).Update(ctx, q, metav1.UpdateOptions{})
	require.NoError(t, err)
	c.runsWhole(t, ctx, "big", 4)
}

// staysWithoutPods waits two intervals of the tests' autoscaler and checks
// that the queued job still has no pod: it is kept whole in the queue.
func (c elasticCluster) staysWithoutPods(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	time.Sleep(2 * time.Second)
	c.noPods(t, ctx, name)
}

// runsWhole waits for the job to run and checks that its pods (pods of
// them) are all bound and that a quota refused none.
func (c elasticCluster) runsWhole(t *testing.T, ctx context.Context, name string, pods int) {
	t.Helper()
	c.waitJob(t, ctx, name, "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	live, bound := c.livePods(t, ctx, name)
	assert.Equal(t, pods, live)
	assert.Equal(t, pods, bound)
	assert.NotContains(t, eventReasons(t, c.ns, name), v1.EventRefused, "the quota refused no pod")
}
