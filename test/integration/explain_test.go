package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// explainFlags are the options the edl under test runs with, and so the
// ones edl explain must be given: a long cool-down, so that the jobs it
// holds can be looked at.
var explainFlags = []string{"-autoscale_interval", "1s", "-cooldown_cycles", "90"}

// TestJobsSayWhatLimitsThem runs the edl binary on a small cluster of
// pools, one job held by each cause — at its max, by GPU load, by its
// namespace's quota, by trainers too big for any node it may use, by a
// cool-down after yielding to a job below its minimum, and by fair share
// behind that job — and checks that each job's Scaling condition, the
// LIMITED BY column of `kubectl get tj -o wide` and `edl explain` name the
// cause; and that a quiet cluster gets no status writes for 30 s.
func TestJobsSayWhatLimitsThem(t *testing.T) {
	plane := framework.StartForTest(t, framework.Options{Nodes: []framework.NodeSpec{
		{Name: "cpu", CPU: "4", Memory: "16Gi", Labels: map[string]string{"pool": "cpu"}},
		{Name: "gpu", CPU: "4", Memory: "16Gi", GPU: 4, Labels: map[string]string{"pool": "gpu"}},
		{Name: "shared", CPU: "5", Memory: "16Gi", Labels: map[string]string{"pool": "shared"}},
		{Name: "big-a", CPU: "16", Memory: "32Gi", Labels: map[string]string{"size": "large"}},
		{Name: "big-b", CPU: "8", Memory: "32Gi", Labels: map[string]string{"size": "large"}},
	}})
	require.NoError(t, applyCRD(plane))
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	tj := mustJobClient(t, plane)
	kube := plane.Client
	const ns, quotaNS = "jobs", "capped"
	for _, name := range []string{ns, quotaNS} {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	createPriorityClasses(ctx, t, plane)
	_, err := kube.CoreV1().ResourceQuotas(quotaNS).Create(ctx, builders.Quota("cpu", "", []string{"requests.cpu", "2"}), metav1.CreateOptions{})
	require.NoError(t, err)
	// A pod of a higher priority than the jobs holds 1 CPU of the shared
	// pool until the test frees it.
	_, err = kube.CoreV1().Pods(ns).Create(ctx, builders.NewPod("filler", builders.PriorityClass("load"),
		builders.NodeSelector(map[string]string{"pool": "shared"}), builders.Requests("1", "64Mi")), metav1.CreateOptions{})
	require.NoError(t, err)

	edl := framework.StartEDLForTest(t, framework.EDLOptions{Args: append([]string{
		"-kubeconfig", plane.Kubeconfig, "-leader_elect=false", "-http_addr", "", "-log_level", "info"}, explainFlags...)})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edl logged:\n%s", edl.Tail(60))
		}
	})

	onPool := func(key, value string) builders.JobOption {
		return func(j *v1.TrainingJob) { j.Spec.NodeSelector = map[string]string{key: value} }
	}
	trainers := func(minInstance, maxInstance int32, cpu string) builders.JobOption {
		return func(j *v1.TrainingJob) {
			j.Spec.Trainer.MinInstance, j.Spec.Trainer.MaxInstance = minInstance, maxInstance
			j.Spec.Trainer.Resources = requests(cpu, "256Mi")
		}
	}
	gpu := func(j *v1.TrainingJob) {
		one := resource.MustParse("1")
		j.Spec.Trainer.Resources.Requests[framework.GPUResource] = one
		j.Spec.Trainer.Resources.Limits = corev1.ResourceList{framework.GPUResource: one}
	}
	create := func(namespace, name string, muts ...builders.JobOption) {
		job := elasticJob(namespace, name)
		for _, m := range muts {
			m(job)
		}
		_, err := tj.PaddlepaddleV1().TrainingJobs(namespace).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create(ns, "atmax", onPool("pool", "cpu"), trainers(1, 2, "500m"))
	create(ns, "gpu", onPool("pool", "gpu"), trainers(1, 8, "500m"), gpu)
	create(quotaNS, "capped", onPool("pool", "cpu"), trainers(1, 8, "500m"))
	create(ns, "big", onPool("size", "large"), trainers(1, 3, "10"))
	// cool fills the shared pool (5 CPU: 1 for the filler, 0.1 for its
	// pserver, 3 trainers of 1 CPU); fair comes later.
	create(ns, "cool", onPool("pool", "shared"), trainers(1, 8, "1"))

	limitOf := func(namespace, name string) (string, string) {
		job, err := tj.PaddlepaddleV1().TrainingJobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err.Error()
		}
		c := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionScaling)
		if c == nil {
			return "", fmt.Sprintf("phase %q, no Scaling condition", job.Status.Phase)
		}
		return c.Reason, c.Message
	}
	waitLimit := func(namespace, name, want string, messageHas ...string) {
		t.Helper()
		var reason, message string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			reason, message = limitOf(namespace, name)
			if reason != want {
				return false, nil
			}
			for _, s := range messageHas {
				if !strings.Contains(message, s) {
					return false, nil
				}
			}
			return true, nil
		})
		require.NoError(t, err, "job %s/%s: want %s %q, have %s: %s", namespace, name, want, messageHas, reason, message)
	}
	waitLimit(ns, "atmax", v1.ScalingAtMax, "2 of 1..2 trainers")
	waitLimit(ns, "gpu", v1.ScalingLoad, "one more trainer (1 GPU) would take GPU requests past max_load_desired 0.97: 3 GPU of 4 GPU requested on its pool of 1 node (load 0.75)")
	waitLimit(quotaNS, "capped", v1.ScalingQuota, "the ResourceQuota of namespace capped leaves requests.cpu 0.4 CPU, and one more trainer needs 0.5 CPU; at 3 of 1..8 trainers")
	waitLimit(ns, "big", v1.ScalingNoRoom, "no node it may use has room for one more trainer (10 CPU")
	// cool's pool is the shared node: with the filler, its pserver and 3
	// trainers it is past what one more trainer may take.
	waitLimit(ns, "cool", v1.ScalingLoad, "4.1 CPU of 5 CPU requested on its pool of 1 node (load 0.82)")

	// A quiet cluster: nothing changes, so nothing is written — not the
	// conditions, not anything else of the jobs.
	versions := func() map[string]string {
		out := map[string]string{}
		for _, namespace := range []string{ns, quotaNS} {
			list, err := tj.PaddlepaddleV1().TrainingJobs(namespace).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			for _, j := range list.Items {
				out[namespace+"/"+j.Name] = j.ResourceVersion
			}
		}
		return out
	}
	// The trainers the last plans added are still starting: their counts
	// reach the statuses within an interval or two. Quiet is from when the
	// statuses have not changed for 3 s.
	before := versions()
	err = wait.PollUntilContextTimeout(ctx, 3*time.Second, time.Minute, false, func(context.Context) (bool, error) {
		now := versions()
		settled := maps.Equal(before, now)
		before = now
		return settled, nil
	})
	require.NoError(t, err, "the jobs' statuses never settled")
	time.Sleep(30 * time.Second) // the property is "no write for 30 s": there is nothing to poll for
	assert.Equal(t, before, versions(), "a quiet cluster got status writes")

	// The big job's node is cordoned: its trainer is bigger than any node
	// left that it may use.
	_, err = kube.CoreV1().Nodes().Patch(ctx, "big-a", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitLimit(ns, "big", v1.ScalingNoEligibleNode, "one trainer needs 10 CPU, 256 MiB memory, 0 GPU, more than any node it may use: the largest, big-b, has 8 CPU")

	// fair, of the same priority, arrives in the full pool: its two
	// minimum trainers take two of cool's, which then cools down at its
	// minimum. Once the filler goes, cool is first in line (a tie at
	// fulfillment 0, and its name comes first): fair waits behind it.
	create(ns, "fair", onPool("pool", "shared"), trainers(2, 4, "1"))
	waitLimit(ns, "cool", v1.ScalingCoolDown, "at 1 of 1..8 trainers")
	waitForJobIn(t, ctx, tj, ns, "fair", v1.PhaseRunning)
	require.NoError(t, kube.CoreV1().Pods(ns).Delete(ctx, "filler", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
	waitLimit(ns, "fair", v1.ScalingFairShare, "the room it could use is kept for jobs/cool (fulfillment 0), which is cooling down and grows first")
	waitLimit(ns, "cool", v1.ScalingCoolDown)

	want := map[string]string{
		ns + "/atmax": "AtMax", ns + "/gpu": "Load", quotaNS + "/capped": "Quota", ns + "/big": "NoEligibleNode",
		ns + "/cool": "CoolDown", ns + "/fair": "FairShare",
	}

	// kubectl get tj -o wide shows the cause in LIMITED BY.
	out, err := plane.Kubectl(ctx, "get", "tj", "-A", "-o", "wide")
	require.NoError(t, err)
	t.Logf("kubectl get tj -A -o wide:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := strings.Fields(strings.ReplaceAll(lines[0], "LIMITED BY", "LIMITED_BY"))
	col := -1
	for i, h := range header {
		if h == "LIMITED_BY" {
			col = i
		}
	}
	require.GreaterOrEqual(t, col, 0, "no LIMITED BY column: %s", lines[0])
	got := map[string]string{}
	for _, l := range lines[1:] {
		// The columns up to LIMITED BY hold one word each; QUEUED, a
		// sentence, comes after it.
		f := strings.Fields(l)
		require.Greater(t, len(f), col, l)
		got[f[0]+"/"+f[1]] = f[col]
	}
	assert.Equal(t, want, got, "LIMITED BY")

	// edl explain, with the controller's flags (it runs without leader
	// election, so nothing is published on a Lease), says the same, and more.
	args := append([]string{"explain", "-kubeconfig", plane.Kubeconfig}, explainFlags...)
	text, err := exec.CommandContext(ctx, edlBinary(t), args...).CombinedOutput()
	require.NoError(t, err, "%s", text)
	t.Logf("edl explain:\n%s", text)
	for job, cause := range want {
		assert.Regexp(t, `(?m)^`+job+` \(Running, priority 100\)\n(  .*\n)*  limited by   `+cause+`[ :(]`, string(text), job)
	}
	assert.Regexp(t, `limited by   CoolDown \(\d+ cycles, [0-9ms.]+ left\)`, string(text))
	assert.Regexp(t, `(?m)^cluster: 4 nodes; allocatable `, string(text), "the cordoned node does not count")

	js, err := exec.CommandContext(ctx, edlBinary(t), append(args, "-o", "json", "-n", ns, "fair")...).Output()
	require.NoError(t, err)
	var report struct {
		Jobs []struct {
			Name  string `json:"name"`
			Limit string `json:"limit"`
			Other string `json:"other"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(js, &report), "%s", js)
	require.Len(t, report.Jobs, 1)
	assert.Equal(t, "fair", report.Jobs[0].Name)
	assert.Equal(t, "FairShare", report.Jobs[0].Limit)
	assert.Equal(t, "jobs/cool", report.Jobs[0].Other)

	// An unknown job is one line and exit code 2.
	cmd := exec.CommandContext(ctx, edlBinary(t), append(args, "-n", ns, "nope")...)
	msg, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	// This edl runs without leader election, so it publishes no
	// configuration: explain says so, and plans with the flags given.
	assert.Equal(t, "edl explain: warning: no Lease paddlecloud/edl-controller: no edl controller runs with leader election in namespace paddlecloud; planning with the default options\n"+
		"edl explain: TrainingJob jobs/nope not found\n", string(msg))
}

func mustJobClient(t *testing.T, plane *framework.ControlPlane) tjclient.Interface {
	t.Helper()
	c, err := tjclient.NewForConfig(plane.Config)
	require.NoError(t, err)
	return c
}

// createPriorityClasses creates "training" (100), the jobs' class, and
// "load" (1000), for what outranks them.
func createPriorityClasses(ctx context.Context, t *testing.T, plane *framework.ControlPlane) {
	t.Helper()
	for name, value := range map[string]int32{"training": 100, "load": 1000} {
		_, err := plane.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// waitForJobIn waits until the job reaches phase.
func waitForJobIn(t *testing.T, ctx context.Context, tj tjclient.Interface, ns, name string, phase v1.TrainingJobPhase) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && job.Status.Phase == phase, nil
	})
	require.NoError(t, err, "job %s/%s never %s", ns, name, phase)
}
