package integration

import (
	"context"
	"fmt"
	"slices"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/test/framework"
)

// webDeployment is a Deployment of replicas pods of priority class class,
// each requesting cpu and 64 MiB.
func webDeployment(ns, name, class, cpu string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					PriorityClassName: class,
					Containers: []corev1.Container{{Name: "nginx", Image: "nginx", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
				},
			},
		},
	}
}

// fill submits jobs and waits until their trainers fill the cluster: at
// least atLeast trainers in all (where the pservers land decides how many
// fit), every pod bound, the same count three polls in a row. It returns
// the jobs' replicas.
func (c elasticCluster) fill(t *testing.T, ctx context.Context, jobs []string, atLeast int32) map[string]int32 {
	t.Helper()
	for _, name := range jobs {
		c.submit(t, ctx, name, "1", "100m")
	}
	var replicas map[string]int32
	last, same := int32(-1), 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if replicas, err = c.trainerReplicas(ctx, jobs); err != nil {
			return false, nil
		}
		_, pending, err := c.load(ctx)
		if err != nil || pending > 0 || sum(replicas) < atLeast {
			last, same = -1, 0
			return false, nil
		}
		if sum(replicas) == last {
			same++
		} else {
			last, same = sum(replicas), 1
		}
		return same == 3, nil
	})
	require.NoError(t, err, "the jobs never filled the cluster: %v\n%s", replicas, c.describe(ctx))
	return replicas
}

// scaleDown is a Scaled event of a job that lowered its trainers.
type scaleDown struct {
	job      string
	at       time.Time
	by       int
	yield    bool // for pods of a higher priority: the reason makes room
	giveBack bool // trainers that cannot be scheduled given back
}

// scaleDowns are the jobs' Scaled events since since that lowered their
// trainers, in the order of their times (a second's resolution).
func (c elasticCluster) scaleDowns(t *testing.T, ctx context.Context, since time.Time) []scaleDown {
	t.Helper()
	events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + v1.EventScaled})
	require.NoError(t, err)
	var out []scaleDown
	for _, e := range events.Items {
		at := e.LastTimestamp.Time
		if e.EventTime.Time.After(at) {
			at = e.EventTime.Time
		}
		var from, to int
		if _, err := fmt.Sscanf(e.Message, "Scaled trainers from %d to %d", &from, &to); err != nil || to >= from || at.Before(since) {
			continue
		}
		out = append(out, scaleDown{job: e.InvolvedObject.Name, at: at, by: from - to,
			yield: strings.Contains(e.Message, "make room on"), giveBack: strings.Contains(e.Message, "cannot be scheduled")})
	}
	slices.SortFunc(out, func(a, b scaleDown) int { return a.at.Compare(b.at) })
	return out
}

// roomFor counts the nodes with at least milliCPU of CPU not requested by
// the pods bound to them.
func (c elasticCluster) roomFor(ctx context.Context, milliCPU int64) (int, error) {
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	used := map[string]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ct := range p.Spec.Containers {
			used[p.Spec.NodeName] += ct.Resources.Requests.Cpu().MilliValue()
		}
	}
	n := 0
	for _, node := range nodes.Items {
		if node.Status.Allocatable.Cpu().MilliValue()-used[node.Name] >= milliCPU {
			n++
		}
	}
	return n, nil
}

// preemptions counts the pods kube-scheduler preempted in the namespace
// (its Preempted events) and the time of the last one.
func (c elasticCluster) preemptions(t *testing.T, ctx context.Context) (n int, last time.Time) {
	t.Helper()
	events, err := c.kube.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
	require.NoError(t, err)
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "Pod" {
			continue
		}
		n += int(max(1, e.Count))
		at := e.LastTimestamp.Time
		if e.EventTime.Time.After(at) {
			at = e.EventTime.Time
		}
		if at.After(last) {
			last = at
		}
	}
	return n, last
}

// TestWebBurstStopsNoMoreTrainersThanItNeeds fills 20 kwok nodes of 4 CPUs with
// the 1-CPU trainers of four elastic jobs (max_load_desired 1), then scales
// a Deployment of higher-priority web pods of 400m from 0 to 100 at once:
// 40 CPUs. Every web pod is bound; the trainers stopped on the way — those
// kube-scheduler preempts and those EDL yields — do not add up to more than
// the web pods need plus a trainer per node; and in the end no node keeps
// room for a trainer: only what no longer fits has gone. On
// this small cluster kube-scheduler tries each web pod within milliseconds
// of its creation and preempts for it at once, before any plan: EDL's part
// is to yield for the pods the scheduler has not reached, and to give back
// the victims the ReplicaSet controller re-creates, in one plan. (At 1,000
// nodes the scheduler took 114 s to work through such a burst; there the
// plan an event wakes reaches most pods first.)
func TestWebBurstStopsNoMoreTrainersThanItNeeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	const interval = 2 * time.Second
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 20},
		map[string]int32{"training": 100, "web": 1000},
		autoscaler.Config{Interval: interval, MaxLoadDesired: 1, CoolDown: 30 * time.Second})
	jobs := []string{"alpha", "beta", "gamma", "delta"}
	// 80 CPUs: a node with a 100m pserver holds three trainers, the others
	// four: 76 trainers or more.
	before := c.fill(t, ctx, jobs, 76)

	_, err := c.kube.AppsV1().Deployments(c.ns).Create(ctx, webDeployment(c.ns, "web", "web", "400m", 0), metav1.CreateOptions{})
	require.NoError(t, err)
	step := time.Now().Add(-time.Second) // event times have a second's resolution
	_, err = c.kube.AppsV1().Deployments(c.ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":100}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	var bound int
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, nil
		}
		bound = 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				bound++
			}
		}
		return bound == 100, nil
	})
	require.NoError(t, err, "%d of 100 web pods bound\n%s", bound, c.describe(ctx))
	took := time.Since(step)
	// Let the plans that follow settle: the trainers left fit.
	var after map[string]int32
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if after, err = c.trainerReplicas(ctx, jobs); err != nil {
			return false, nil
		}
		_, pending, err := c.load(ctx)
		return err == nil && pending == 0, nil
	})
	require.NoError(t, err, "trainers stayed pending: %v\n%s", after, c.describe(ctx))

	downs := c.scaleDowns(t, ctx, step)
	preempted, lastPreempted := c.preemptions(t, ctx)
	yielded, givenBack := 0, map[string]int{}
	var firstBack, lastBack time.Time
	for _, d := range downs {
		if d.yield {
			yielded += d.by
		}
		if d.giveBack {
			givenBack[d.job]++
			if firstBack.IsZero() {
				firstBack = d.at
			}
			lastBack = d.at
		}
	}
	var lines []string
	for _, d := range downs {
		lines = append(lines, fmt.Sprintf("%s -%d at +%.0fs (yield %v, give-back %v)", d.job, d.by, d.at.Sub(step).Seconds(), d.yield, d.giveBack))
	}
	t.Logf("web pods bound %.1fs after the step; trainers %v -> %v; trainers preempted by kube-scheduler: %d (the last at +%.0fs), yielded by EDL: %d; scale-downs: %s",
		took.Seconds(), before, after, preempted, lastPreempted.Sub(step).Seconds(), yielded, strings.Join(lines, ", "))

	// 40 CPUs for the web pods and 0.4 for the pservers: 39 trainers stay
	// at most.
	assert.LessOrEqual(t, sum(after), int32(39))
	for _, name := range jobs {
		assert.GreaterOrEqual(t, after[name], int32(1), "never below min-instance")
	}
	// What goes in the end is only what no longer fits: once the jobs'
	// cool-down is over, no node has room for a trainer (1 CPU; the web
	// pods' 400m leave pieces smaller than that on some nodes).
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		room, err := c.roomFor(ctx, 1000)
		return err == nil && room == 0, nil
	})
	require.NoError(t, err, "nodes kept room for a trainer\n%s", c.describe(ctx))
	// Stopped on the way: kube-scheduler preempts the fewest trainers on one
	// node per pod, and may leave room short of one trainer on each node it
	// preempts on — 40 + 20 at most, as EDL's bulk yield. Were EDL's yields
	// and the scheduler's preemptions to add up, up to twice that would go.
	assert.LessOrEqual(t, preempted+yielded, 40+20, "kube-scheduler's preemptions and EDL's yields add up")
	// The ReplicaSet controller re-creates the victims as the scheduler's
	// deletions land; EDL gives back those that cannot be placed in the
	// next plans: a woken one and the ticks after it, within 3 intervals —
	// the woken plan and the 3 ticks of that window (a woken plan may run in
	// the second of a tick). The window opens at the first give-back, or at
	// kube-scheduler's last preemption if that came later: on a busy
	// machine the scheduler may take seconds to work through the burst, and
	// victims it preempts late are re-created late.
	for job, n := range givenBack {
		assert.LessOrEqual(t, n, 4, "%s gave back re-created trainers in %d plans: %+v", job, n, downs)
	}
	opens := firstBack
	if lastPreempted.After(opens) {
		opens = lastPreempted
	}
	assert.LessOrEqual(t, lastBack.Sub(opens), 3*interval,
		"the give-backs are spread over many plans after kube-scheduler's last preemption at +%.0fs: %+v", lastPreempted.Sub(step).Seconds(), downs)
}

// TestYieldsOnlyForPodsItCanHelp fills 4 kwok nodes of 4 CPUs with
// trainers, then creates pods of a higher priority that no node could hold
// even with every trainer gone, of a lower priority, and that may not
// preempt: no trainer goes for any of them.
func TestYieldsOnlyForPodsItCanHelp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	c := newElasticCluster(t, ctx, framework.NodeSpec{Name: "worker", CPU: "4", Memory: "16Gi", Count: 4},
		map[string]int32{"training": 100, "web": 1000, "low": 10},
		autoscaler.Config{Interval: time.Second, MaxLoadDesired: 1, CoolDown: 3 * time.Second})
	_, err := c.kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "web-never"}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	jobs := []string{"alpha", "beta"}
	// 16 CPUs, the pservers 0.2: 14 or 15 trainers.
	before := c.fill(t, ctx, jobs, 14)

	for _, d := range []*appsv1.Deployment{
		webDeployment(c.ns, "huge", "web", "5", 1),         // bigger than any node
		webDeployment(c.ns, "low", "low", "1", 2),          // of a lower priority than the trainers
		webDeployment(c.ns, "polite", "web-never", "1", 2), // may not preempt
	} {
		_, err := c.kube.AppsV1().Deployments(c.ns).Create(ctx, d, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// Wait until kube-scheduler reported all five unschedulable, then
	// give EDL five more plans.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app in (huge,low,polite)"})
		if err != nil {
			return false, nil
		}
		n := 0
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
					n++
				}
			}
		}
		return n == 5, nil
	})
	require.NoError(t, err, "the pods were not all unschedulable\n%s", c.describe(ctx))
	time.Sleep(5 * time.Second)
	after, err := c.trainerReplicas(ctx, jobs)
	require.NoError(t, err)
	assert.Equal(t, before, after, "trainers went for pods they could not help\n%s", c.describe(ctx))
	preempted, _ := c.preemptions(t, ctx)
	assert.Zero(t, preempted, "kube-scheduler preempted trainers")
}
