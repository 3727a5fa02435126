package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// The queue on the real control plane: a quota a job's minimum does not fit,
// suspend and resume, and preemption of whole jobs of a lower priority.

// wholeJob is a job that is not elastic: one pserver of 1 CPU and one
// trainer of trainerCPU, of the priority class.
func wholeJob(ns, name, class, trainerCPU string) *v1.TrainingJob {
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q),
			corev1.ResourceMemory: resource.MustParse("128Mi")}}
	}
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			PriorityClassName: class,
			Trainer:           v1.TrainerSpec{MinInstance: 1, MaxInstance: 1, Resources: cpu(trainerCPU)},
			Pserver:           v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: cpu("1")},
		},
	}
}

func (c elasticCluster) create(t *testing.T, ctx context.Context, job *v1.TrainingJob) {
	t.Helper()
	_, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitJob polls the job until cond holds.
func (c elasticCluster) waitJob(t *testing.T, ctx context.Context, name, what string, cond func(*v1.TrainingJob) bool) *v1.TrainingJob {
	t.Helper()
	var job *v1.TrainingJob
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		job, err = c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(job), nil
	})
	require.NoError(t, err, "%s: %s\n%s", name, what, c.describe(ctx))
	return job
}

// livePods counts the job's pods that exist and are not being deleted, and
// those of them bound to a node.
func (c elasticCluster) livePods(t *testing.T, ctx context.Context, name string) (live, bound int) {
	t.Helper()
	pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		if job, _, ok := v1.JobOf(p.Labels); ok && job == name && p.DeletionTimestamp == nil {
			live++
			if p.Spec.NodeName != "" {
				bound++
			}
		}
	}
	return live, bound
}

func (c elasticCluster) noPods(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if job, _, ok := v1.JobOf(p.Labels); ok && job == name {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "%s still has pods\n%s", name, c.describe(ctx))
}

func (c elasticCluster) setSuspend(t *testing.T, ctx context.Context, name string, on bool) {
	t.Helper()
	patch := []byte(`{"spec":{"suspend":false}}`)
	if on {
		patch = []byte(`{"spec":{"suspend":true}}`)
	}
	_, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// kubectlQueue is `kubectl edl queue -o json` in the namespace: each listed
// job's reason, by name.
func (c elasticCluster) kubectlQueue(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	out, errOut, err := kubectlEDL(ctx, t, c.plane, "queue", "-n", c.ns, "-o", "json")
	require.NoError(t, err, errOut)
	var q struct {
		Jobs []struct {
			Name   string `json:"name"`
			Reason string `json:"reason"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &q), out)
	reasons := map[string]string{}
	for _, j := range q.Jobs {
		reasons[j.Name] = j.Reason
	}
	return reasons
}

func conditionOf(job *v1.TrainingJob, kind string) metav1.Condition {
	if c := meta.FindStatusCondition(job.Status.Conditions, kind); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestQueuedJobWaitsForItsQuotaAndStartsWhenItIsRaised: in a namespace whose
// requests.cpu quota is 6, a job whose minimum needs 7 CPU stays Queued with
// the quota named and holds no pod; once the quota is raised, it is admitted
// within two intervals and runs.
func TestQueuedJobWaitsForItsQuotaAndStartsWhenItIsRaised(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const interval = 2 * time.Second
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "8", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: interval, GangAdmission: true})
	quota := builders.Quota("compute", c.ns, []string{"requests.cpu", "6"})
	_, err := c.kube.CoreV1().ResourceQuotas(c.ns).Create(ctx, quota, metav1.CreateOptions{})
	require.NoError(t, err)

	c.create(t, ctx, gangJob(c.ns, "big")) // 1 pserver of 1 CPU, 3 trainers of 2 CPU: 7 CPU
	job := c.waitJob(t, ctx, "big", "never Queued with its quota named", func(j *v1.TrainingJob) bool {
		return j.Status.Phase == v1.PhaseQueued && conditionOf(j, v1.ConditionQueued).Reason == v1.ReasonExceedsQuota
	})
	assert.Contains(t, job.Status.Message, "needs 7 CPU of namespace training's quota requests.cpu, above its hard limit of 6 CPU")
	assert.Equal(t, v1.ReasonExceedsQuota, job.Status.Reason)
	assert.Equal(t, map[string]string{"big": v1.ReasonExceedsQuota}, c.kubectlQueue(t, ctx), "kubectl edl queue says the same")
	time.Sleep(2 * interval)
	live, _ := c.livePods(t, ctx, "big")
	assert.Zero(t, live, "a queued job holds no pod, so none is refused by the quota and none runs")

	quota, err = c.kube.CoreV1().ResourceQuotas(c.ns).Get(ctx, "compute", metav1.GetOptions{})
	require.NoError(t, err)
	quota.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("20")
	_, err = c.kube.CoreV1().ResourceQuotas(c.ns).Update(ctx, quota, metav1.UpdateOptions{})
	require.NoError(t, err)
	raised := time.Now()
	c.waitJob(t, ctx, "big", "never admitted", func(j *v1.TrainingJob) bool {
		return meta.IsStatusConditionFalse(j.Status.Conditions, v1.ConditionQueued)
	})
	took := time.Since(raised)
	t.Logf("admitted %v after the quota was raised (interval %v)", took.Round(time.Millisecond), interval)
	assert.LessOrEqual(t, took, 2*interval, "admitted within two intervals of the quota being raised")
	c.waitJob(t, ctx, "big", "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	live, bound := c.livePods(t, ctx, "big")
	assert.Equal(t, 4, live)
	assert.Equal(t, 4, bound)
	assert.NotContains(t, eventReasons(t, c.ns, "big"), v1.EventRefused, "the quota refused no pod")
}

// TestSuspendedJobHasNoPodsAndResumesWhole suspends a running job: its pods
// go, the job and its ReplicaSets stay; resumed, it goes through the queue
// and runs whole again.
func TestSuspendedJobHasNoPodsAndResumesWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, GangAdmission: true})
	c.create(t, ctx, gangJob(c.ns, "job"))
	c.waitJob(t, ctx, "job", "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })

	c.setSuspend(t, ctx, "job", true)
	job := c.waitJob(t, ctx, "job", "never Suspended", func(j *v1.TrainingJob) bool {
		return j.Status.Phase == v1.PhaseSuspended && meta.IsStatusConditionTrue(j.Status.Conditions, v1.ConditionSuspended)
	})
	assert.Equal(t, v1.ReasonSuspended, job.Status.Reason)
	c.noPods(t, ctx, "job")
	for _, role := range []v1.Role{v1.RolePserver, v1.RoleTrainer} {
		rs, err := c.kube.AppsV1().ReplicaSets(c.ns).Get(ctx, v1.ReplicaSetName("job", role), metav1.GetOptions{})
		require.NoError(t, err, "the ReplicaSets stay")
		assert.Equal(t, int32(0), *rs.Spec.Replicas, rs.Name)
	}
	c.waitForEvent(t, ctx, "job", v1.EventSuspended)

	c.setSuspend(t, ctx, "job", false)
	job = c.waitJob(t, ctx, "job", "never Running again", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	assert.Equal(t, v1.ReasonResumed, conditionOf(job, v1.ConditionSuspended).Reason)
	assert.Equal(t, v1.ReasonAdmitted, conditionOf(job, v1.ConditionQueued).Reason, "it went through the queue")
	live, bound := c.livePods(t, ctx, "job")
	assert.Equal(t, 4, live, "whole: the pserver and three trainers")
	assert.Equal(t, 4, bound)
	c.waitForEvent(t, ctx, "job", v1.EventResumed)
}

// TestHighPriorityJobPreemptsExactlyTheJobsItNeeds: on one node of 10 CPU,
// a job of the high priority (peer, 2 CPU) and two of the low one (old and
// young, 4 CPU each) run, 0 CPU free. A queued high-priority job needing 4
// CPU preempts exactly young, the newest of the lowest priority: old and
// the peer of its own priority keep running. Deleted, it gives the room
// back and young is admitted again.
func TestHighPriorityJobPreemptsExactlyTheJobsItNeeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "10", Memory: "16Gi", Count: 1},
		map[string]int32{"low": 100, "high": 1000},
		autoscaler.Config{Interval: time.Second, GangAdmission: true, Preemption: true})
	running := func(name string) {
		c.waitJob(t, ctx, name, "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	}
	c.create(t, ctx, wholeJob(c.ns, "peer", "high", "1"))
	running("peer")
	c.create(t, ctx, wholeJob(c.ns, "old", "low", "3"))
	running("old")
	// Creation times have whole seconds: young is the newer only if it is
	// created in a later second than old.
	old, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "old", metav1.GetOptions{})
	require.NoError(t, err)
	time.Sleep(time.Until(old.CreationTimestamp.Add(1100 * time.Millisecond)))
	c.create(t, ctx, wholeJob(c.ns, "young", "low", "3"))
	running("young")

	c.create(t, ctx, wholeJob(c.ns, "urgent", "high", "3"))
	young := c.waitJob(t, ctx, "young", "never preempted", func(j *v1.TrainingJob) bool {
		return meta.IsStatusConditionTrue(j.Status.Conditions, v1.ConditionPreempted)
	})
	assert.Contains(t, conditionOf(young, v1.ConditionPreempted).Message, "urgent")
	c.waitForEvent(t, ctx, "young", v1.EventPreempted)
	running("urgent")
	c.noPods(t, ctx, "young")
	young = c.waitJob(t, ctx, "young", "not Queued", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseQueued })
	assert.Equal(t, v1.ReasonPreempted, young.Status.Reason)
	assert.Equal(t, map[string]string{"young": v1.ReasonPreempted}, c.kubectlQueue(t, ctx), "kubectl edl queue says the same")
	for _, name := range []string{"old", "peer"} {
		job, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.PhaseRunning, job.Status.Phase, "%s was not preempted", name)
		assert.Nil(t, meta.FindStatusCondition(job.Status.Conditions, v1.ConditionPreempted), name)
	}

	require.NoError(t, c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Delete(ctx, "urgent", metav1.DeleteOptions{}))
	young = c.waitJob(t, ctx, "young", "never Running again", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	assert.Equal(t, v1.ReasonReadmitted, conditionOf(young, v1.ConditionPreempted).Reason)
	assert.Equal(t, metav1.ConditionFalse, conditionOf(young, v1.ConditionPreempted).Status)
}

// TestPreemptedJobRequeuesBehindTheJobsQueuedBeforeItsEviction: on a node of
// 10 CPU, first (low, created first, 6 CPU) runs and waiting (low, 6 CPU) waits
// behind it; urgent (high, 6 CPU) stops first whole. When urgent is
// deleted, the room holds one of the two low jobs: waiting, which entered
// the queue before first was evicted, goes first, though first was created
// earlier.
func TestPreemptedJobRequeuesBehindTheJobsQueuedBeforeItsEviction(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "10", Memory: "16Gi", Count: 1},
		map[string]int32{"low": 100, "high": 1000},
		autoscaler.Config{Interval: time.Second, GangAdmission: true, Preemption: true})
	c.create(t, ctx, wholeJob(c.ns, "first", "low", "5"))
	c.waitJob(t, ctx, "first", "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	c.create(t, ctx, wholeJob(c.ns, "waiting", "low", "5"))
	c.waitJob(t, ctx, "waiting", "never queued", func(j *v1.TrainingJob) bool {
		return j.Status.Phase == v1.PhaseQueued && meta.IsStatusConditionTrue(j.Status.Conditions, v1.ConditionQueued)
	})
	// The conditions' times have whole seconds: the eviction must come in a
	// later second than waiting's entry into the queue.
	time.Sleep(1100 * time.Millisecond)
	c.create(t, ctx, wholeJob(c.ns, "urgent", "high", "5"))
	c.waitJob(t, ctx, "first", "never preempted", func(j *v1.TrainingJob) bool {
		return meta.IsStatusConditionTrue(j.Status.Conditions, v1.ConditionPreempted)
	})
	c.waitJob(t, ctx, "urgent", "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })

	require.NoError(t, c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Delete(ctx, "urgent", metav1.DeleteOptions{}))
	c.waitJob(t, ctx, "waiting", "never Running", func(j *v1.TrainingJob) bool { return j.Status.Phase == v1.PhaseRunning })
	first, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "first", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PhaseQueued, first.Status.Phase, "the preempted job waits behind the job queued before its eviction")
	assert.Equal(t, v1.ReasonPreempted, first.Status.Reason)
}
