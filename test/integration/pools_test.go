package integration

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// The pools of TestAutoscalerHonoursPools: four CPU nodes, and two GPU
// nodes tainted as NVIDIA's GPU operator taints them, each pool labelled.
var (
	cpuPool = framework.NodeSpec{Name: "cpu", CPU: "4", Memory: "16Gi", Count: 4, Labels: map[string]string{"pool": "cpu"}}
	gpuPool = framework.NodeSpec{Name: "gpu", CPU: "8", Memory: "64Gi", GPU: 4, Count: 2, Labels: map[string]string{"pool": "gpu"},
		Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}}
)

// poolsInterval is the autoscaler's interval in the test; pendingSlack is
// what kube-scheduler and the ReplicaSet controller may add to it before a
// trainer EDL grew is bound to a node, on a busy machine.
const (
	poolsInterval = time.Second
	pendingSlack  = 10 * time.Second
)

// TestAutoscalerHonoursPools runs EDL on a control plane of its own with a
// CPU pool and a tainted GPU pool:
//
//  1. a GPU job that selects and tolerates the GPU pool grows into it
//     alone; a CPU job grows only into the CPU pool, though the GPU nodes'
//     CPUs stay idle; a job in a namespace whose ResourceQuota holds its
//     pserver and three trainers stops at three, and the quota refuses no
//     pod of it;
//  2. a Deployment of higher priority pinned to the CPU pool makes only
//     trainers there yield: the GPU job keeps every trainer;
//  3. with a CPU node cordoned, the Deployment goes and the CPU jobs grow
//     back, only into the room of the other CPU nodes.
//
// While the jobs grow, no trainer waits for a node longer than an interval
// and some slack, and no job gives back as unschedulable trainers it was
// grown.
func TestAutoscalerHonoursPools(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	plane := framework.StartForTest(t, framework.Options{Nodes: []framework.NodeSpec{cpuPool, gpuPool}})
	require.NoError(t, applyCRD(plane))
	c := elasticCluster{kube: plane.Client, ns: "training"}
	var err error
	c.tj, err = tjclient.NewForConfig(plane.Config)
	require.NoError(t, err)
	for _, ns := range []string{"training", "capped"} {
		_, err = c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for name, value := range map[string]int32{"training": 100, "web": 1000} {
		_, err := c.kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// The quota holds the capped job's pserver (100m) and three 1-CPU
	// trainers; a fourth would be refused.
	_, err = c.kube.CoreV1().ResourceQuotas("capped").Create(ctx, builders.Quota("cpu", "", []string{"requests.cpu", "3500m"}), metav1.CreateOptions{})
	require.NoError(t, err)

	pending := watchTrainerPending(t, ctx, plane)
	runEDL(t, plane, "", &autoscaler.Config{Interval: poolsInterval, MaxLoadDesired: 0.95, CoolDown: 3 * time.Second})

	// The GPU job's pods may use only the GPU pool, and tolerate its taint.
	gpuJob := poolJob("vision", "training", 1, 16, func(s *v1.TrainingJobSpec) {
		s.NodeSelector = map[string]string{"pool": "gpu"}
		s.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		gpu := corev1.ResourceList{framework.GPUResource: resource.MustParse("1")}
		s.Trainer.Resources.Requests[framework.GPUResource] = gpu[framework.GPUResource]
		s.Trainer.Resources.Limits = gpu
	})
	cpuJob := poolJob("text", "training", 1, 20, nil)
	cappedJob := poolJob("capped", "capped", 1, 10, nil)
	jobs := []*v1.TrainingJob{gpuJob, cpuJob, cappedJob}
	for _, job := range jobs {
		_, err := c.tj.PaddlepaddleV1().TrainingJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// Each poll reads the trainer counts; the quota must cap the capped job
	// at every one.
	replicas, last := map[string]int32{}, map[string]int32{}
	var overQuota []int32
	steady := 0
	read := func() bool {
		maps.Copy(last, replicas)
		for _, job := range jobs {
			rs, err := c.kube.AppsV1().ReplicaSets(job.Namespace).Get(ctx, v1.ReplicaSetName(job.Name, v1.RoleTrainer), metav1.GetOptions{})
			if err != nil {
				return false
			}
			replicas[job.Name] = *rs.Spec.Replicas
		}
		if replicas["capped"] > 3 {
			overQuota = append(overQuota, replicas["capped"])
		}
		return true
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
			return read() && cond(), nil
		})
		require.NoError(t, err, "%s; trainers: %v\n%s", what, replicas, describePools(ctx, c))
	}
	// settled: no pod waits for a node, every trainer is bound, and the
	// counts held for three polls — the autoscaler grows no further.
	settled := func() bool {
		_, waiting, err := c.load(ctx)
		if err != nil || waiting > 0 || !allPlaced(ctx, c, replicas) || !maps.Equal(last, replicas) {
			steady = 0
			return false
		}
		steady++
		return steady >= 3
	}

	// 1. Growth. 8 GPUs × 0.95 admits 7 one-GPU trainers, all on the GPU
	// pool; the quota, 3 trainers of the capped job; the CPU job the rest
	// of the CPU pool, whose every node ends with less than a CPU free.
	waitFor("the jobs never grew into their pools", func() bool {
		return replicas["vision"] == 7 && replicas["capped"] == 3 && replicas["text"] > 1 && settled()
	})
	nodesOf := trainerNodes(t, ctx, c)
	for _, n := range nodesOf["vision"] {
		assert.True(t, strings.HasPrefix(n, "gpu-"), "a GPU trainer on %s", n)
	}
	for _, job := range []string{"text", "capped"} {
		for _, n := range nodesOf[job] {
			assert.True(t, strings.HasPrefix(n, "cpu-"), "a %s trainer on %s", job, n)
		}
	}
	free := cpuFree(t, ctx, c)
	for node, milli := range free {
		if strings.HasPrefix(node, "cpu-") {
			assert.Less(t, milli, int64(1000), "node %s has room for another trainer: the CPU job stopped short", node)
		}
	}
	assert.Empty(t, givenBack(t, ctx, c, jobs, nil), "trainers EDL grew were given back as unschedulable")
	grown := replicas["text"] + replicas["capped"]
	t.Logf("grown: %v; free CPU (millicores): %v", replicas, free)
	// Growth stayed within the quota: the ReplicaSet controller created every
	// trainer pod. (Later, when kube-scheduler preempts a trainer of the
	// capped job for the web pods, the ReplicaSet's replacement may be
	// refused while the victim still counts in the quota; that is the
	// ReplicaSet controller's retry, not growth, so it is not counted.)
	assert.Zero(t, failedCreates(t, ctx, c, "capped"), "the quota refused trainer pods EDL grew for the capped job")

	// 2. Yield: 3 web pods of 2 CPUs at priority 1000, pinned to the full
	// CPU pool: trainers there yield, GPU ones never.
	pending.pause(true) // preempted trainers wait; that is not growth
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: c.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					PriorityClassName: "web",
					NodeSelector:      map[string]string{"pool": "cpu"},
					Containers: []corev1.Container{{Name: "nginx", Image: "nginx", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
				},
			},
		},
	}
	_, err = c.kube.AppsV1().Deployments(c.ns).Create(ctx, web, metav1.CreateOptions{})
	require.NoError(t, err)
	var gpuTrainers []int32
	waitFor("the web pods never all ran, or trainers stayed pending", func() bool {
		gpuTrainers = append(gpuTrainers, replicas["vision"])
		d, err := c.kube.AppsV1().Deployments(c.ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 3 && replicas["text"]+replicas["capped"] < grown && settled()
	})
	for _, n := range gpuTrainers {
		require.Equal(t, int32(7), n, "the GPU job yielded to pods that may not use its nodes")
	}
	yielded := replicas["text"] + replicas["capped"]
	// Trainers the scheduler preempted for the web pods are re-created by
	// their ReplicaSets and given back as unschedulable: those decisions
	// are right, and not growth's.
	yieldMessages := map[string]bool{}
	for _, job := range jobs {
		for _, msg := range scaledMessages(t, ctx, c, job) {
			yieldMessages[msg] = true
		}
	}

	// 3. Cordon a CPU node, then the web service goes: the CPU jobs grow
	// back, only into the room of the three other CPU nodes.
	const cordoned = "cpu-3"
	_, err = c.kube.CoreV1().Nodes().Patch(ctx, cordoned, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	before := trainerNodes(t, ctx, c)
	pending.pause(false)
	require.NoError(t, c.kube.AppsV1().Deployments(c.ns).Delete(ctx, "web", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
	}))
	waitFor("the CPU jobs never grew back", func() bool {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods.Items) == 0 && replicas["text"]+replicas["capped"] > yielded && settled()
	})
	after := trainerNodes(t, ctx, c)
	for _, job := range []string{"text", "capped"} {
		assert.LessOrEqual(t, count(after[job], cordoned), count(before[job], cordoned), "%s grew onto the cordoned node", job)
	}
	free = cpuFree(t, ctx, c)
	for node, milli := range free {
		if strings.HasPrefix(node, "cpu-") && node != cordoned {
			assert.Less(t, milli, int64(1000), "node %s has room for another trainer: the CPU jobs stopped short", node)
		}
	}
	assert.Equal(t, int32(7), replicas["vision"])

	assert.Empty(t, overQuota, "the capped job was grown past its quota")
	assert.Empty(t, givenBack(t, ctx, c, jobs, yieldMessages), "trainers EDL grew were given back as unschedulable")
	longest := pending.longest()
	t.Logf("longest wait of a grown trainer: %s (%s); trainers at the end: %v", longest.d.Round(100*time.Millisecond), longest.pod, replicas)
	assert.LessOrEqual(t, longest.d, poolsInterval+pendingSlack, "trainer %s waited for a node", longest.pod)
}

// poolJob is a job of the "training" class in ns: min..max trainers of one
// CPU and 1 GiB, and a pserver of 100m; change adjusts it.
func poolJob(name, ns string, minInstance, maxInstance int32, change func(*v1.TrainingJobSpec)) *v1.TrainingJob {
	trainer := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	job := &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.TrainingJobSpec{
			Image:             "paddlepaddle/paddlecloud-job",
			PriorityClassName: "training",
			Trainer: v1.TrainerSpec{MinInstance: minInstance, MaxInstance: maxInstance,
				Resources: corev1.ResourceRequirements{Requests: trainer}},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}},
		},
	}
	if change != nil {
		change(&job.Spec)
	}
	return job
}

// allPlaced: every job's trainer count is bound to nodes.
func allPlaced(ctx context.Context, c elasticCluster, replicas map[string]int32) bool {
	bound := map[string]int32{}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: v1.LabelTrainer})
	if err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			bound[p.Labels[v1.LabelTrainer]]++
		}
	}
	for job, n := range replicas {
		if bound[job] != n {
			return false
		}
	}
	return true
}

// trainerNodes lists the nodes of each job's live trainers.
func trainerNodes(t *testing.T, ctx context.Context, c elasticCluster) map[string][]string {
	t.Helper()
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: v1.LabelTrainer})
	require.NoError(t, err)
	out := map[string][]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out[p.Labels[v1.LabelTrainer]] = append(out[p.Labels[v1.LabelTrainer]], p.Spec.NodeName)
		}
	}
	return out
}

// failedCreates counts the pod creations refused to a job's trainer
// ReplicaSet (the ReplicaSet controller's FailedCreate events).
func failedCreates(t *testing.T, ctx context.Context, c elasticCluster, job string) int {
	t.Helper()
	events, err := c.kube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + v1.ReplicaSetName(job, v1.RoleTrainer)})
	require.NoError(t, err)
	n := 0
	for _, e := range events.Items {
		if e.Reason == "FailedCreate" {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// givenBack lists the Scaled events of jobs, but those in before, that gave
// back trainers because they could not be scheduled.
func givenBack(t *testing.T, ctx context.Context, c elasticCluster, jobs []*v1.TrainingJob, before map[string]bool) []string {
	t.Helper()
	var out []string
	for _, job := range jobs {
		for _, msg := range scaledMessages(t, ctx, c, job) {
			if !before[msg] && strings.Contains(msg, "cannot be scheduled") {
				out = append(out, job.Name+": "+msg)
			}
		}
	}
	return out
}

// scaledMessages are the messages of a job's Scaled events.
func scaledMessages(t *testing.T, ctx context.Context, c elasticCluster, job *v1.TrainingJob) []string {
	t.Helper()
	events, err := c.kube.CoreV1().Events(job.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + job.Name})
	require.NoError(t, err)
	var out []string
	for _, e := range events.Items {
		if e.Reason == v1.EventScaled {
			out = append(out, e.Message)
		}
	}
	return out
}

// cpuFree is each node's allocatable CPU less the CPU requests of the live
// pods bound to it, in millicores.
func cpuFree(t *testing.T, ctx context.Context, c elasticCluster) map[string]int64 {
	t.Helper()
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	free := map[string]int64{}
	for _, n := range nodes.Items {
		free[n.Name] = n.Status.Allocatable.Cpu().MilliValue()
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ct := range p.Spec.Containers {
			free[p.Spec.NodeName] -= ct.Resources.Requests.Cpu().MilliValue()
		}
	}
	return free
}

// describePools lists the jobs of both namespaces and every pod.
func describePools(ctx context.Context, c elasticCluster) string {
	capped := c
	capped.ns = "capped"
	return c.describe(ctx) + capped.describe(ctx)
}

// pendingSpan is how long one trainer pod waited for a node.
type pendingSpan struct {
	pod string
	d   time.Duration
}

// trainerPending watches trainer pods from the moment they appear without a
// node until they are bound or deleted.
type trainerPending struct {
	mu     sync.Mutex
	paused bool // pods that appear meanwhile are not measured
	since  map[types.UID]time.Time
	names  map[types.UID]string
	max    pendingSpan
}

// pause stops or resumes measuring the trainer pods that appear from now.
func (w *trainerPending) pause(p bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused = p
}

// watchTrainerPending starts a pod informer on plane that measures how long
// each trainer pod waits for a node.
func watchTrainerPending(t *testing.T, ctx context.Context, plane *framework.ControlPlane) *trainerPending {
	t.Helper()
	w := &trainerPending{since: map[types.UID]time.Time{}, names: map[types.UID]string{}}
	factory := informers.NewSharedInformerFactoryWithOptions(plane.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = v1.LabelTrainer
	}))
	observe := func(obj any, gone bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
				pod, ok = tomb.Obj.(*corev1.Pod)
			}
			if !ok {
				return
			}
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		start, seen := w.since[pod.UID]
		switch {
		case !seen && pod.Spec.NodeName == "" && !gone && !w.paused:
			w.since[pod.UID], w.names[pod.UID] = now, pod.Namespace+"/"+pod.Name
		case seen && (pod.Spec.NodeName != "" || gone):
			if d := now.Sub(start); d > w.max.d {
				w.max = pendingSpan{pod: w.names[pod.UID], d: d}
			}
			delete(w.since, pod.UID)
			delete(w.names, pod.UID)
		}
	}
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj, false) },
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	factory.WaitForCacheSync(ctx.Done())
	return w
}

// longest is the longest wait of a trainer pod so far, counting the pods
// still waiting.
func (w *trainerPending) longest() pendingSpan {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.max
	now := time.Now()
	for uid, start := range w.since {
		if d := now.Sub(start); d > out.d {
			out = pendingSpan{pod: w.names[uid] + " (still pending)", d: d}
		}
	}
	return out
}
