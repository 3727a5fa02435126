package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/test/docs"
	"github.com/paddlepaddle/edl/test/framework"
)

// gangJob is a job that is not elastic (min == max), whose minimum is a 1-CPU
// pserver and three 2-CPU trainers: 7 CPU.
func gangJob(ns, name string) *v1.TrainingJob {
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q),
			corev1.ResourceMemory: resource.MustParse("256Mi")}}
	}
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			PriorityClassName: "training",
			Trainer:           v1.TrainerSpec{MinInstance: 3, MaxInstance: 3, Resources: cpu("2")},
			Pserver:           v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: cpu("1")},
		},
	}
}

// boundWatch records the pods of a job that a node was ever bound to, and
// when, from a watch started before the job exists.
type boundWatch struct {
	mu    sync.Mutex
	bound map[string]time.Time
}

func watchBindings(t *testing.T, ctx context.Context, c elasticCluster, job string) *boundWatch {
	t.Helper()
	w, err := c.kube.CoreV1().Pods(c.ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	b := &boundWatch{bound: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			if name, _, ok := v1.JobOf(pod.Labels); ok && name == job && pod.Spec.NodeName != "" {
				b.mu.Lock()
				if _, seen := b.bound[pod.Name]; !seen {
					b.bound[pod.Name] = time.Now()
				}
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// waitForEvent waits for an event of the reason on the named job.
func (c elasticCluster) waitForEvent(t *testing.T, ctx context.Context, name, reason string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "no %s event for %s", reason, name)
}

func (b *boundWatch) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bound)
}

// TestGangAdmissionRunsOneJobAndQueuesTheOther runs EDL with gang admission
// on a cluster of two 4-CPU nodes, which holds one of two 7-CPU minimums:
// the older job runs, the younger one has no pod (its ReplicaSets are at 0,
// their templates gated) and none is ever bound while the first runs; it is Queued,
// with its place and what it waits for. Once the first job is deleted, the
// second is admitted and runs.
func TestGangAdmissionRunsOneJobAndQueuesTheOther(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const interval = time.Second
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 2},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: interval, GangAdmission: true})
	second := watchBindings(t, ctx, c, "second")

	_, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Create(ctx, gangJob(c.ns, "first"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForPhase := func(name string, phase v1.TrainingJobPhase) *v1.TrainingJob {
		t.Helper()
		var job *v1.TrainingJob
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			job, err = c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && job.Status.Phase == phase, nil
		})
		require.NoError(t, err, "%s never became %s\n%s", name, phase, c.describe(ctx))
		return job
	}
	first := waitForPhase("first", v1.PhaseRunning)
	admitted := meta.FindStatusCondition(first.Status.Conditions, v1.ConditionQueued)
	require.NotNil(t, admitted, "a new job passes through the queue")
	assert.Equal(t, v1.ReasonAdmitted, admitted.Reason)
	c.waitForEvent(t, ctx, "first", v1.EventAdmitted)

	_, err = c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Create(ctx, gangJob(c.ns, "second"), metav1.CreateOptions{})
	require.NoError(t, err)
	queued := waitForPhase("second", v1.PhaseQueued)
	// Its place in the queue and what it waits for, written by the
	// autoscaler.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		queued, err = c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "second", metav1.GetOptions{})
		return err == nil && meta.FindStatusCondition(queued.Status.Conditions, v1.ConditionQueued).Message != "" &&
			meta.FindStatusCondition(queued.Status.Conditions, v1.ConditionQueued).Reason == v1.ReasonWaitingForAdmission &&
			queued.Status.Message != "" && queued.Status.Message[0] == 'p', nil
	})
	require.NoError(t, err, "the second job never showed its place in the queue\n%s", c.describe(ctx))
	assert.Contains(t, queued.Status.Message, "position 1 of 1 in the queue: its minimum, 1 pserver, 3 trainers, needs 7 CPU")
	assert.Contains(t, queued.Status.Message, "at most 1 CPU")

	// A few plans later, it still has no pod: its ReplicaSets exist at 0
	// replicas, their templates gated.
	time.Sleep(3 * interval)
	pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		if name, _, ok := v1.JobOf(p.Labels); ok && name == "second" {
			t.Errorf("the queued job has pod %s", p.Name)
		}
	}
	for _, role := range []v1.Role{v1.RolePserver, v1.RoleTrainer} {
		rs, err := c.kube.AppsV1().ReplicaSets(c.ns).Get(ctx, v1.ReplicaSetName("second", role), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(0), *rs.Spec.Replicas, rs.Name)
		assert.Contains(t, rs.Spec.Template.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1.SchedulingGateAdmission}, rs.Name)
	}
	assert.Zero(t, second.count(), "no pod of the queued job was ever bound")
	assert.Equal(t, v1.PhaseRunning, waitForPhase("first", v1.PhaseRunning).Status.Phase)

	// Delete the first job: once the garbage collector deletes its pods, the
	// second is admitted (in the next plan: the room of terminating pods is
	// the waiting pods') and runs.
	require.NoError(t, c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Delete(ctx, "first", metav1.DeleteOptions{}))
	var freed, admittedAt time.Time
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if name, _, ok := v1.JobOf(p.Labels); ok && name == "first" && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		freed = time.Now()
		return true, nil
	})
	require.NoError(t, err, "the first job's pods were never deleted\n%s", c.describe(ctx))
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "second", metav1.GetOptions{})
		if err != nil || !meta.IsStatusConditionFalse(job.Status.Conditions, v1.ConditionQueued) {
			return false, nil
		}
		admittedAt = time.Now()
		return true, nil
	})
	require.NoError(t, err, "the second job was never admitted\n%s", c.describe(ctx))
	running := waitForPhase("second", v1.PhaseRunning)
	cond := meta.FindStatusCondition(running.Status.Conditions, v1.ConditionQueued)
	require.NotNil(t, cond)
	assert.Equal(t, v1.ReasonAdmitted, cond.Reason)
	c.waitForEvent(t, ctx, "second", v1.EventAdmitted)
	t.Logf("the second job was admitted %v after the first job's pods were deleted, and Running %v after (interval %v)",
		admittedAt.Sub(freed).Round(time.Millisecond), time.Since(freed).Round(time.Millisecond), interval)
	assert.Equal(t, 4, second.count(), "every pod of the second job was bound once admitted")
}

// TestDocumentedCommandRemovesTheGates runs the command of
// docs/operations.md that removes the admission gates once EDL is
// uninstalled: on a pod and a ReplicaSet template that carry it, and only
// that gate.
func TestDocumentedCommandRemovesTheGates(t *testing.T) {
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(data), "## Gang admission\n")
	require.True(t, ok, "operations.md has the section")
	section, _, _ = strings.Cut(section, "\n## ")
	var command string
	blocks, _ := docs.ParseMarkdown(section)
	for _, b := range blocks {
		if b.Lang() == "sh" {
			command = b.Text
		}
	}
	require.NotEmpty(t, command, "the section shows the command")

	ctx := testContext(t)
	ns := cp.NewNamespace(t)
	gates := []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: v1.SchedulingGateAdmission}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns},
		Spec: corev1.PodSpec{SchedulingGates: gates, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "gated"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			SchedulingGates: gates[1:], Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	_, err = cp.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)

	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "PATH="+cp.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "pod/gated patched")
	assert.Contains(t, string(out), "replicaset.apps/gated patched")

	got, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, gates[:1], got.Spec.SchedulingGates, "only the admission gate goes")
	gotRS, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, "gated", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, gotRS.Spec.Template.Spec.SchedulingGates)
}
