package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// goodputABEnv, when set, runs TestGoodputGivesTheRoomToTheJobThatScales in
// full: each policy in turn, the job that scales to its end, and its JCT
// under goodput below its JCT under fulfillment.
const goodputABEnv = "EDL_GOODPUT_AB"

// The two jobs: the example's training, one of 16 chunks a step, which a
// second trainer speeds up, one of a single chunk, which it cannot; the
// one that scales runs goodputSteps steps, the other until it is deleted.
const (
	goodputSteps   = 30 * 1000
	goodputEpochSz = 100
)

// TestGoodputGivesTheRoomToTheJobThatScales: two copies of
// example/torchjob.yaml (1..2 trainers) share the real node with the room
// for one trainer more than their minimums. Both train at one trainer
// until EDL has measured them, then the room frees and goes, by the tie,
// to a-flat, whose step is a single chunk. Under goodput EDL measures that
// a-flat's second trainer slows it and moves it to b-scales, whose
// second trainer is predicted to add most — the scale-down's event says
// so; under fulfillment a-flat keeps it. In full (EDL_GOODPUT_AB=1),
// b-scales runs to its end under each policy, and its JCT is lower under
// goodput.
func TestGoodputGivesTheRoomToTheJobThatScales(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	full := os.Getenv(goodputABEnv) != ""
	policies := []planner.Policy{planner.PolicyGoodput}
	if full {
		policies = append(policies, planner.PolicyFulfillment)
	}
	jct := map[planner.Policy]time.Duration{}
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) { jct[policy] = goodputRun(t, cp, policy, full) })
	}
	if full {
		t.Logf("b-scales's JCT: goodput %s, fulfillment %s", jct[planner.PolicyGoodput], jct[planner.PolicyFulfillment])
		assert.Less(t, jct[planner.PolicyGoodput], jct[planner.PolicyFulfillment], "b-scales ends sooner under goodput")
	}
}

// goodputRun is one run under policy; in full, the JCT of b-scales.
func goodputRun(t *testing.T, cp *framework.ControlPlane, policy planner.Policy, full bool) time.Duration {
	configure(t, cp, map[string]string{"policy": string(policy)})
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	// Ballast, so that the node holds both minimums and one trainer more,
	// and a blocker holding that trainer's room until both are measured.
	const perJob, trainer = 600, 500 // a master's 100m and a trainer's 500m
	var room int64
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		room = trainerRoom(t, cp) // the pods of an earlier run may still be going
		return room >= 2*perJob+trainer, nil
	})
	require.NoError(t, err, "the real node's room for growth, %dm, holds two minimums and a trainer", room)
	blockers := map[string]int64{"blocker": trainer}
	if spare := room - 2*perJob - trainer - trainer/2; spare > 0 {
		blockers["ballast"] = spare // room for a trainer more, not two
	}
	for name, milli := range blockers {
		pod := shellPod(name, exampleImage(t), "exec sleep 3600", nil)
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
		_, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(t, cp, ns, name, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	}

	logs := map[string]string{}
	created := map[string]time.Time{}
	for _, name := range []string{"a-flat", "b-scales"} {
		ckpt := filepath.Join("/var/lib/edl-node", "checkpoints", ns+"-"+name)
		require.NoError(t, os.MkdirAll(ckpt, 0o755))
		t.Cleanup(func() { _ = os.RemoveAll(ckpt) })
		logs[name] = filepath.Join(ckpt, "train.log")
		epochs, chunks := goodputSteps/goodputEpochSz, 16
		if name == "a-flat" {
			epochs, chunks = 100*epochs, 1 // it runs until deleted
		}
		job := torchJob(t, fmt.Sprintf("--epochs %d --steps-per-epoch %d", epochs, goodputEpochSz), ckpt)
		job.Name = name
		job.Spec.Trainer.MaxInstance = 2
		// Each trainer limited to what it requests, as on a cluster
		// whose trainers are Guaranteed: on the two-core node, a-flat's
		// busy ranks would otherwise take the cores b-scales' second
		// trainer needs, and a trainer would be worth nothing to anyone.
		job.Spec.Trainer.Resources.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(trainer, resource.DecimalSI)
		job.Spec.Trainer.Entrypoint = fmt.Sprintf("env EDL_BATCH_CHUNKS=%d %s", chunks, job.Spec.Trainer.Entrypoint)
		got, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
		created[name] = got.CreationTimestamp.Time
	}

	// Both measured at one trainer: each has reported its throughput.
	for _, name := range []string{"a-flat", "b-scales"} {
		waitTraining(t, logs[name], 1, time.Time{})
		waitMeasured(t, tj, ns, name, 1)
	}
	freed := time.Now()
	require.NoError(t, cp.Client.CoreV1().Pods(ns).Delete(ctx, "blocker", metav1.DeleteOptions{}))
	waitTraining(t, logs["a-flat"], 2, freed)

	if policy == planner.PolicyGoodput {
		grown := waitTraining(t, logs["b-scales"], 2, freed)
		t.Logf("b-scales trains at 2 %s after the room freed", grown.Sub(freed).Round(time.Second))
		evs, err := cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=TrainingJob,involvedObject.name=a-flat"})
		require.NoError(t, err)
		var moved string
		for _, e := range evs.Items {
			if e.Reason == v1.EventScaled && strings.Contains(e.Message, "from 2 to 1") {
				moved = e.Message
			}
		}
		// Moved by rebalancing (naming b-scales' gain), or given back as
		// slower when b-scales could not take it yet (grown next plan):
		// either way for the loss EDL measured.
		assert.Regexp(t, `a 2nd trainer adds -[0-9.]+×.*(to `+ns+`/b-scales, a 2nd trainer would add|the job runs faster without it)`, moved,
			"a-flat's scale-down names the loss it measured")
		t.Logf("a-flat: %s", moved)
	}
	if !full {
		return 0
	}
	end := waitEndWithin(t, tj, ns, "b-scales", 25*time.Minute)
	require.Equal(t, v1.PhaseSucceeded, end.Status.Phase)
	if policy == planner.PolicyFulfillment {
		data, _ := os.ReadFile(logs["b-scales"])
		assert.NotContains(t, string(data), "training world_size=2", "under fulfillment a-flat keeps the room")
	}
	var done time.Time
	for _, c := range end.Status.Conditions {
		if c.Type == v1.ConditionComplete && c.Status == metav1.ConditionTrue {
			done = c.LastTransitionTime.Time
		}
	}
	require.False(t, done.IsZero(), "b-scales's Complete condition")
	return done.Sub(created["b-scales"])
}

// trainerRoom is the CPU, in millicores, that growth may fill on the real
// node: its allocatable below max_load_desired less the grow margin, less
// what the pods on it request.
func trainerRoom(t *testing.T, cp *framework.ControlPlane) int64 {
	t.Helper()
	ctx := t.Context()
	nodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: framework.RealNodeLabel + "=true"})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 1)
	node := nodes.Items[0]
	pods, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	require.NoError(t, err)
	var used int64
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			used += c.Resources.Requests.Cpu().MilliValue()
		}
	}
	alloc := node.Status.Allocatable.Cpu().MilliValue()
	return int64(float64(alloc)*(planner.DefaultMaxLoadDesired-planner.DefaultGrowMargin)) - used
}

// waitMeasured waits until EDL has measured the job's throughput at
// trainers.
func waitMeasured(t *testing.T, tj tjclient.Interface, ns, name string, trainers int32) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.Status.Progress == nil {
			return false, nil
		}
		for _, m := range got.Status.Progress.Measured {
			if m.Trainers == trainers && m.Millis >= 10_000 {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "EDL measures %s at %d trainers", name, trainers)
}
