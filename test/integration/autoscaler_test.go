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
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// elasticCluster is what TestAutoscalerGrowsYieldsAndGrowsBack measures.
type elasticCluster struct {
	plane *framework.ControlPlane
	kube  kubernetes.Interface
	tj    tjclient.Interface
	ns    string
}

// trainerReplicas returns each job's trainer ReplicaSet replicas.
func (c elasticCluster) trainerReplicas(ctx context.Context, jobs []string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, job := range jobs {
		rs, err := c.kube.AppsV1().ReplicaSets(c.ns).Get(ctx, v1.ReplicaSetName(job, v1.RoleTrainer), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out[job] = *rs.Spec.Replicas
	}
	return out, nil
}

// load is Σ CPU requests of the pods bound to nodes ÷ Σ allocatable CPU, and
// the number of pods still waiting for a node.
func (c elasticCluster) load(ctx context.Context) (float64, int, error) {
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	var alloc, used int64
	for _, n := range nodes.Items {
		alloc += n.Status.Allocatable.Cpu().MilliValue()
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	pending := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			pending++
			continue
		}
		for _, ct := range p.Spec.Containers {
			used += ct.Resources.Requests.Cpu().MilliValue()
		}
	}
	return float64(used) / float64(alloc), pending, nil
}

// describe lists the jobs and pods, for a failure message.
func (c elasticCluster) describe(ctx context.Context) string {
	var b strings.Builder
	if jobs, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range jobs.Items {
			fmt.Fprintf(&b, "job %s: %s %s %q trainers %s\n", j.Name, j.Status.Phase, j.Status.Reason, j.Status.Message, j.Status.Trainers.Summary)
		}
	}
	if pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s/%s node=%q phase=%s priority=%d nominated=%q deleting=%v\n", p.Namespace, p.Name, p.Spec.NodeName,
				p.Status.Phase, ptr.Deref(p.Spec.Priority, 0), p.Status.NominatedNodeName, p.DeletionTimestamp != nil)
		}
	}
	return b.String()
}

func sum(m map[string]int32) int32 {
	var s int32
	for _, v := range m {
		s += v
	}
	return s
}

func spread(m map[string]int32) int32 {
	lo, hi := int32(1<<30), int32(0)
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi - lo
}

// newElasticCluster starts a control plane of its own with nodes, installs
// the CRD, the namespace "training" and the PriorityClasses, and runs EDL on
// it with scaling.
func newElasticCluster(t *testing.T, ctx context.Context, nodes framework.NodeSpec, priorities map[string]int32, scaling autoscaler.Config) elasticCluster {
	t.Helper()
	plane := framework.StartForTest(t, framework.Options{Nodes: []framework.NodeSpec{nodes}})
	require.NoError(t, applyCRD(plane))
	c := elasticCluster{plane: plane, kube: plane.Client, ns: "training"}
	var err error
	c.tj, err = tjclient.NewForConfig(plane.Config)
	require.NoError(t, err)
	_, err = c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for name, value := range priorities {
		_, err := c.kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	runEDL(t, plane, "", &scaling)
	return c
}

// submit creates a job of the "training" class: trainers of trainerCPU and
// 1 GiB, 1 to 20 of them, and one pserver of pserverCPU.
func (c elasticCluster) submit(t *testing.T, ctx context.Context, name, trainerCPU, pserverCPU string) {
	t.Helper()
	job := &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			PriorityClassName: "training",
			Trainer: v1.TrainerSpec{MinInstance: 1, MaxInstance: 20, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(trainerCPU), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(pserverCPU), corev1.ResourceMemory: resource.MustParse("128Mi")}}},
		},
	}
	_, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestAutoscalerGrowsYieldsAndGrowsBack runs EDL on a control plane of its
// own with 10 kwok nodes of 4 CPUs: three elastic jobs grow into the idle
// capacity, evenly, up to max_load_desired; a Deployment of higher-priority
// web pods arrives, the scheduler preempts trainers and the autoscaler
// shrinks the jobs until every web pod runs; when the Deployment goes, the
// jobs grow back.
func TestAutoscalerGrowsYieldsAndGrowsBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	const maxLoad = 0.9
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 10},
		map[string]int32{"training": 100, "web": 1000},
		autoscaler.Config{Interval: time.Second, MaxLoadDesired: maxLoad, CoolDown: 3 * time.Second})

	// Three jobs of 1-CPU trainers, 1 to 20 each, and a 100m pserver.
	jobs := []string{"alpha", "beta", "gamma"}
	for _, name := range jobs {
		c.submit(t, ctx, name, "1", "100m")
	}

	// Grow: 40 CPUs × 0.9 = 36 CPUs; the pservers hold 0.3, so 35 trainers fit
	// under the threshold, shared evenly: 12, 12, 11.
	var replicas map[string]int32
	waitFor := func(what string, cond func() (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) { return cond() })
		require.NoError(t, err, "%s; trainers: %v\n%s", what, replicas, c.describe(ctx))
	}
	// A job Running a cycle after the others is grown by rebalancing to
	// their level: the wait is for the even share, not the first plan's.
	waitFor("the jobs never grew into the idle capacity, evenly", func() (bool, error) {
		var err error
		replicas, err = c.trainerReplicas(ctx, jobs)
		if err != nil {
			return false, nil
		}
		load, pending, err := c.load(ctx)
		return err == nil && sum(replicas) == 35 && pending == 0 && load > 0.85 && spread(replicas) <= 1, nil
	})
	assert.LessOrEqual(t, spread(replicas), int32(1), "spare capacity is shared evenly: %v", replicas)
	load, _, err := c.load(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, load, maxLoad, "growth stays under max_load_desired")
	for _, name := range jobs {
		job, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, job.Status.LastScale, "%s: the decision is in the status", name)
		// The last decision: growth, or — when one job became plannable a
		// cycle before the others and grew first — the rebalance that
		// evened them out.
		assert.Equal(t, replicas[name], job.Status.LastScale.To, "%s: the last scaling is recorded", name)
		assert.Regexp(t, `^scale up|the least fulfilled job`, job.Status.LastScale.Reason, name)
	}

	// Yield: 8 web pods of 2 CPUs at priority 1000 need 16 CPUs.
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: c.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](8),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					PriorityClassName: "web",
					Containers: []corev1.Container{{Name: "nginx", Image: "nginx", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
				},
			},
		},
	}
	_, err = c.kube.AppsV1().Deployments(c.ns).Create(ctx, web, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor("the web pods never all ran, or trainers stayed pending", func() (bool, error) {
		d, err := c.kube.AppsV1().Deployments(c.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || d.Status.ReadyReplicas != 8 {
			return false, nil
		}
		replicas, err = c.trainerReplicas(ctx, jobs)
		if err != nil {
			return false, nil
		}
		_, pending, err := c.load(ctx)
		// 36 − 16 − 0.3 leaves room for at most 19 trainers.
		return err == nil && pending == 0 && sum(replicas) <= 19, nil
	})
	for _, name := range jobs {
		assert.GreaterOrEqual(t, replicas[name], int32(1), "never below min-instance")
	}

	// Grow back once the web service is gone.
	require.NoError(t, c.kube.AppsV1().Deployments(c.ns).Delete(ctx, "web", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
	}))
	waitFor("the jobs never grew back", func() (bool, error) {
		var err error
		replicas, err = c.trainerReplicas(ctx, jobs)
		if err != nil {
			return false, nil
		}
		_, pending, err := c.load(ctx)
		return err == nil && sum(replicas) == 35 && pending == 0, nil
	})
	assert.LessOrEqual(t, spread(replicas), int32(1), "%v", replicas)
	t.Logf("trainers after the wave: %v", fmt.Sprint(replicas))
}

// TestLateJobStartsAndSharesTheCluster runs EDL with its default threshold
// on 4 kwok nodes of 11 CPUs. An early job of 3-CPU trainers fills every node
// to 9 or 10 CPUs, which leaves 7 CPUs idle in pieces no trainer fits and
// keeps the requests under max_load_desired. A late job of the same priority
// then cannot place its trainer, and its pending pods do not cross the
// threshold either: the early job gives a trainer for the late job's
// minimum, then more until the two are within the rebalance gap.
func TestLateJobStartsAndSharesTheCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "11", Memory: "32Gi", Count: 4},
		map[string]int32{"training": 100}, autoscaler.Config{Interval: time.Second, CoolDown: 3 * time.Second})

	var replicas map[string]int32
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) { return cond(), nil })
		require.NoError(t, err, "%s; trainers: %v\n%s", what, replicas, c.describe(ctx))
	}
	settled := func(jobs []string, total int32) func() bool {
		return func() bool {
			var err error
			replicas, err = c.trainerReplicas(ctx, jobs)
			if err != nil {
				return false
			}
			_, pending, err := c.load(ctx)
			return err == nil && pending == 0 && sum(replicas) == total
		}
	}

	// Three trainers per node (4 × 3 = 12) and the pserver: 37 of 44 CPUs.
	c.submit(t, ctx, "early", "3", "1")
	waitFor("the early job never filled the nodes", settled([]string{"early"}, 12))
	load, _, err := c.load(ctx)
	require.NoError(t, err)
	require.Less(t, load, 0.97, "the setting needs requests under the threshold")

	c.submit(t, ctx, "late", "3", "1")
	both := []string{"early", "late"}
	waitFor("the late job never started, or the two never shared the nodes evenly", func() bool {
		if !settled(both, 12)() || spread(replicas) > 1 {
			return false
		}
		job, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "late", metav1.GetOptions{})
		return err == nil && job.Status.Phase == v1.PhaseRunning
	})
	events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=early"})
	require.NoError(t, err)
	var scaled []string
	for _, e := range events.Items {
		if e.Reason == v1.EventScaled {
			scaled = append(scaled, e.Message)
		}
	}
	joined := strings.Join(scaled, "\n")
	assert.Contains(t, joined, "1 job below their minimum", "the early job made room for the late one's minimum")
	assert.Contains(t, joined, "the least fulfilled job of priority 100", "the early job gave back to the late one")
	// It gave back trainers that ran: its cool-down starts there, and the
	// API server keeps the field (the CRD's status schema has it).
	early, err := c.tj.PaddlepaddleV1().TrainingJobs(c.ns).Get(ctx, "early", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, early.Status.LastScaleDown, "status.lastScaleDown of the job that gave back running trainers")
	assert.False(t, early.Status.LastScaleDown.After(time.Now()), "%v", early.Status.LastScaleDown)
	// The late job took that room in the plan that gave it back: no idle
	// room is left that growth could have given it.
	events, err = c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=late"})
	require.NoError(t, err)
	var took []string
	for _, e := range events.Items {
		if e.Reason == v1.EventScaled {
			took = append(took, e.Message)
		}
	}
	assert.Contains(t, strings.Join(took, "\n"), "early, more fulfilled", "the late job grew into the room the early one gave back")
	t.Logf("trainers once shared: %v", replicas)
}
