package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/config"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// kubectlEDL runs `kubectl edl ARGS` as a user would: kubectl finds the
// plugin on the PATH, and the only configuration is KUBECONFIG.
func kubectlEDL(ctx context.Context, t *testing.T, plane *framework.ControlPlane, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return kubectlEDLWith(ctx, t, plane, plane.Kubeconfig, args...)
}

// kubectlEDLWith is kubectlEDL with another kubeconfig: another user's.
func kubectlEDLWith(ctx context.Context, t *testing.T, plane *framework.ControlPlane, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	plugin, err := framework.BuildCommand("kubectl-edl")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, filepath.Join(plane.BinDir(), "kubectl"), append([]string{"edl"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// controllerLimits are the reasons of the Running jobs' Scaling conditions,
// what the controller itself says limits them, by namespace/name.
func controllerLimits(ctx context.Context, t *testing.T, tj tjclient.Interface) map[string]string {
	t.Helper()
	list, err := tj.PaddlepaddleV1().TrainingJobs("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, j := range list.Items {
		if c := meta.FindStatusCondition(j.Status.Conditions, v1.ConditionScaling); c != nil && j.Status.Phase == v1.PhaseRunning {
			out[j.Namespace+"/"+j.Name] = c.Reason
		}
	}
	return out
}

// explainReport is what the tests read of `kubectl edl explain -o json`.
type explainReport struct {
	Source        string `json:"source"`
	Configuration struct {
		Autoscaler struct {
			MaxLoadDesired float64 `json:"maxLoadDesired"`
			CooldownCycles int     `json:"cooldownCycles"`
		} `json:"autoscaler"`
	} `json:"configuration"`
	Jobs []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Phase     string `json:"phase"`
		Limit     string `json:"limit"`
	} `json:"jobs"`
}

// explainLimits runs `kubectl edl explain -A -o json` and returns the
// limits of the Running jobs and the report.
func explainLimits(ctx context.Context, t *testing.T, plane *framework.ControlPlane) (map[string]string, explainReport) {
	t.Helper()
	out, errOut, err := kubectlEDL(ctx, t, plane, "explain", "-A", "-o", "json")
	require.NoError(t, err, "kubectl edl explain: %s", errOut)
	assert.Empty(t, errOut, "the controller's configuration is found: no warning")
	var r explainReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), "%s", out)
	limits := map[string]string{}
	for _, j := range r.Jobs {
		if j.Phase == string(v1.PhaseRunning) {
			limits[j.Namespace+"/"+j.Name] = j.Limit
		}
	}
	return limits, r
}

// runControllerFromConfigMap starts edl as the Deployment would run it:
// with -config on the ConfigMap edl-config's config.yaml, as the kubelet
// mounts it, and leader election in paddlecloud; only where it listens and
// how it reaches the API server come from flags.
func runControllerFromConfigMap(ctx context.Context, t *testing.T, plane *framework.ControlPlane) *edlProc {
	t.Helper()
	cm, err := plane.Client.CoreV1().ConfigMaps("paddlecloud").Get(ctx, "edl-config", metav1.GetOptions{})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cm.Data["config.yaml"]), 0o600))
	return startEDLProc(t, "-config", path, "-kubeconfig", plane.Kubeconfig)
}

// setConfig rewrites fields of the ConfigMap's config.yaml.
func setConfig(ctx context.Context, t *testing.T, plane *framework.ControlPlane, change func(*config.EDLConfiguration)) {
	t.Helper()
	cms := plane.Client.CoreV1().ConfigMaps("paddlecloud")
	cm, err := cms.Get(ctx, "edl-config", metav1.GetOptions{})
	require.NoError(t, err)
	c, err := config.Decode([]byte(cm.Data["config.yaml"]))
	require.NoError(t, err)
	change(c)
	data, err := yaml.Marshal(c)
	require.NoError(t, err)
	cm.Data["config.yaml"] = string(data)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// agree waits until kubectl edl explain gives every Running job the limit
// the controller gave it in its Scaling condition, and returns them.
func agree(ctx context.Context, t *testing.T, plane *framework.ControlPlane, tj tjclient.Interface, jobs ...string) (map[string]string, explainReport) {
	t.Helper()
	var mine, theirs map[string]string
	var report explainReport
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		theirs = controllerLimits(ctx, t, tj)
		mine, report = explainLimits(ctx, t, plane)
		for _, j := range jobs {
			if theirs[j] == "" || theirs[j] != mine[j] {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "kubectl edl explain says %v, the controller %v", mine, theirs)
	return mine, report
}

// TestKubectlEDL installs EDL with `kubectl apply --server-side -k` from the repository,
// runs the controller with the ConfigMap's configuration changed from the
// defaults, and checks that `kubectl edl explain`, given nothing but the
// kubeconfig, plans with that configuration and gives the limits the
// controller gives — a job at its quota, one at its maximum; that after a
// change of the ConfigMap and a restart of the controller it plans with the
// new one; that `kubectl edl queue` lists a queued job with the planner's
// reason and cause, also as JSON, and `kubectl edl explain` in its queue;
// and that suspend and resume set spec.suspend, taking the job out of the
// queue and back.
func TestKubectlEDL(t *testing.T) {
	plane := framework.StartForTest(t, framework.Options{Nodes: []framework.NodeSpec{
		{Name: "a", CPU: "4", Memory: "16Gi", Labels: map[string]string{"pool": "a"}},
		{Name: "b", CPU: "4", Memory: "16Gi", Labels: map[string]string{"pool": "b"}},
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)

	// Install as the README says. The controller runs below as a process,
	// so the Deployment's (fake) pods are scaled away.
	out, err := plane.Kubectl(ctx, "apply", "--server-side", "-k", root)
	require.NoError(t, err)
	for _, want := range []string{"customresourcedefinition.apiextensions.k8s.io/trainingjobs.paddlepaddle.org", "namespace/paddlecloud",
		"configmap/edl-config", "deployment.apps/training-job-controller", "clusterrole.rbac.authorization.k8s.io/edl-controller"} {
		assert.Contains(t, out, want+" ")
	}
	_, err = plane.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.paddlepaddle.org")
	require.NoError(t, err)
	_, err = plane.Kubectl(ctx, "-n", "paddlecloud", "scale", "deployment/training-job-controller", "--replicas=0")
	require.NoError(t, err)

	// Before any controller runs, explain says it plans with the defaults.
	_, errOut, err := kubectlEDL(ctx, t, plane, "explain", "-A")
	require.NoError(t, err, errOut)
	assert.Equal(t, "kubectl edl: warning: no Lease paddlecloud/edl-controller: no edl controller runs with leader election in namespace paddlecloud; planning with the default options\n", errOut)

	setConfig(ctx, t, plane, func(c *config.EDLConfiguration) {
		c.Autoscaler.Interval = &metav1.Duration{Duration: time.Second}
		c.Autoscaler.MaxLoadDesired = ptrTo(0.9)
		c.Autoscaler.CooldownCycles = ptrTo(90)
	})
	edl := runControllerFromConfigMap(ctx, t, plane)
	edl.waitIdentity()

	tj := mustJobClient(t, plane)
	kube := plane.Client
	createPriorityClasses(ctx, t, plane)
	for _, ns := range []string{"jobs", "capped", "waiting"} {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = kube.CoreV1().ResourceQuotas("capped").Create(ctx, builders.Quota("cpu", "", []string{"requests.cpu", "2"}), metav1.CreateOptions{})
	require.NoError(t, err)
	create := func(ns, name, pool string, minInstance, maxInstance int32, cpu string) {
		job := elasticJob(ns, name)
		job.Spec.NodeSelector = map[string]string{"pool": pool}
		job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance = minInstance, maxInstance
		job.Spec.Trainer.Resources = requests(cpu, "256Mi")
		_, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("jobs", "atmax", "a", 1, 2, "500m")
	create("capped", "capped", "b", 1, 8, "500m")

	// The controller's own reasons, and kubectl edl explain's, agree.
	limits, report := agree(ctx, t, plane, tj, "jobs/atmax", "capped/capped")
	assert.Equal(t, map[string]string{"jobs/atmax": v1.ScalingAtMax, "capped/capped": v1.ScalingQuota}, limits)
	assert.Equal(t, 0.9, report.Configuration.Autoscaler.MaxLoadDesired, "the ConfigMap's, not the default")
	assert.Equal(t, 90, report.Configuration.Autoscaler.CooldownCycles)
	assert.Contains(t, report.Source, "the Lease paddlecloud/edl-controller, published by "+edl.Identity())

	text, errOut, err := kubectlEDL(ctx, t, plane, "explain", "atmax", "-n", "jobs")
	require.NoError(t, err, errOut)
	t.Logf("kubectl edl explain atmax -n jobs:\n%s", text)
	assert.Contains(t, text, "jobs/atmax (Running, priority 100)\n")
	assert.Contains(t, text, "  limited by   AtMax: ")
	assert.Contains(t, text, "(max_load_desired 0.9)")
	assert.Contains(t, text, "autoscaler.cooldownCycles=90")
	assert.NotContains(t, text, "capped/capped", "one job")

	// A job whose trainers are bigger than the one node of its pool waits in
	// the queue, with the planner's reason and cause.
	create("waiting", "huge", "b", 3, 4, "5")
	var queue struct {
		Jobs []struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Position  int    `json:"position"`
			Reason    string `json:"reason"`
			Cause     string `json:"cause"`
		} `json:"jobs"`
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, _, err := kubectlEDL(ctx, t, plane, "queue", "-A", "-o", "json")
		if err != nil || json.Unmarshal([]byte(out), &queue) != nil {
			return false, nil
		}
		return len(queue.Jobs) == 1 && queue.Jobs[0].Position == 1, nil
	})
	require.NoError(t, err, "the queue: %+v", queue)
	assert.Equal(t, "waiting", queue.Jobs[0].Namespace)
	assert.Equal(t, "huge", queue.Jobs[0].Name)
	assert.Equal(t, v1.ReasonUnplaceable, queue.Jobs[0].Reason)
	assert.Contains(t, queue.Jobs[0].Cause, "its minimum")
	out, errOut, err = kubectlEDL(ctx, t, plane, "queue", "-A", "-o", "jsonpath={.jobs[*].name}")
	require.NoError(t, err, errOut)
	assert.Equal(t, "huge", out)
	out, errOut, err = kubectlEDL(ctx, t, plane, "explain", "-n", "jobs", "-o", "name")
	require.NoError(t, err, errOut)
	assert.Equal(t, "trainingjob.paddlepaddle.org/atmax\n", out)
	text, errOut, err = kubectlEDL(ctx, t, plane, "queue", "-n", "waiting")
	require.NoError(t, err, errOut)
	t.Logf("kubectl edl queue -n waiting:\n%s", text)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	require.Len(t, lines, 2, text)
	assert.Regexp(t, `^NAME\s+POSITION\s+WAITING\s+REASON\s+CAUSE$`, lines[0])
	assert.Regexp(t, `^huge\s+1/1\s+\S+\s+`+queue.Jobs[0].Reason+`\s+its minimum`, lines[1])
	// explain lists the queue too, as the planner sees it.
	text, errOut, err = kubectlEDL(ctx, t, plane, "explain", "-n", "waiting")
	require.NoError(t, err, errOut)
	assert.Contains(t, text, "queue:\n  waiting      waiting/huge (Unplaceable): position 1 of 1 in the queue: its minimum", text)

	// suspend and resume set spec.suspend.
	for _, step := range []struct {
		verb string
		want bool
	}{{"suspend", true}, {"resume", false}} {
		out, errOut, err := kubectlEDL(ctx, t, plane, step.verb, "huge", "-n", "waiting")
		require.NoError(t, err, errOut)
		assert.Equal(t, fmt.Sprintf("trainingjob.paddlepaddle.org/huge %sed\n", strings.TrimSuffix(step.verb, "e")), out)
		job, err := tj.PaddlepaddleV1().TrainingJobs("waiting").Get(ctx, "huge", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, step.want, job.Spec.Suspend, step.verb)
		// A suspended job has left the queue; resumed, it is back.
		text, errOut, err := kubectlEDL(ctx, t, plane, "queue", "-n", "waiting")
		require.NoError(t, err, errOut)
		if step.want {
			assert.Empty(t, text, step.verb)
			assert.Equal(t, "No TrainingJobs wait for admission in namespace waiting.\n", errOut, step.verb)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, _, err := kubectlEDL(ctx, t, plane, "queue", "-n", "waiting", "-o", "json")
		return err == nil && json.Unmarshal([]byte(out), &queue) == nil &&
			len(queue.Jobs) == 1 && queue.Jobs[0].Reason == v1.ReasonUnplaceable, nil
	})
	require.NoError(t, err, "the resumed job never queued again: %+v", queue)
	_, errOut, err = kubectlEDL(ctx, t, plane, "suspend", "nope", "-n", "waiting")
	require.Error(t, err)
	assert.Equal(t, "kubectl edl: TrainingJob waiting/nope not found\n", errOut)
	require.NoError(t, tj.PaddlepaddleV1().TrainingJobs("waiting").Delete(ctx, "huge", metav1.DeleteOptions{}))

	// A new load target, applied by a restart: the controller takes a
	// trainer back from the job at its maximum (its pool, node a, is at
	// 1.1 of 4 CPU), and explain plans with the new target and still
	// agrees with the controller.
	setConfig(ctx, t, plane, func(c *config.EDLConfiguration) { c.Autoscaler.MaxLoadDesired = ptrTo(0.2) })
	require.NoError(t, edl.stop())
	edl = runControllerFromConfigMap(ctx, t, plane)
	edl.waitIdentity()
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return controllerLimits(ctx, t, tj)["jobs/atmax"] != v1.ScalingAtMax, nil
	})
	require.NoError(t, err, "the controller never took atmax below its maximum: %v", controllerLimits(ctx, t, tj))
	limits, report = agree(ctx, t, plane, tj, "jobs/atmax", "capped/capped")
	assert.NotEqual(t, v1.ScalingAtMax, limits["jobs/atmax"])
	assert.Equal(t, 0.2, report.Configuration.Autoscaler.MaxLoadDesired, "the changed ConfigMap's")
	assert.Contains(t, report.Source, "published by "+edl.Identity(), "the restarted controller's")
	text, errOut, err = kubectlEDL(ctx, t, plane, "explain", "-A")
	require.NoError(t, err, errOut)
	t.Logf("kubectl edl explain -A:\n%s", text)
	assert.Contains(t, text, "(max_load_desired 0.2)")
}

func ptrTo[T any](v T) *T { return &v }
