package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// The bad days of issue 58, on the real node: a training script that fails
// fails its job, with why in its status; the loss of a PyTorch job's
// master (its rendezvous store) is no failure of the training; a Horovod
// job ends with its launcher, which runs once, and fails when it keeps
// failing.

// TestTorchScriptThatFailsFailsItsJob runs example/torchjob.yaml with a
// training script that fails at once (a flag it cannot read): every run of
// every trainer fails, and the job ends Failed, reason TooManyFailures,
// within a few minutes — its budget (maxRestarts 3) spent on kubelet's
// crash backoff — its message naming the pod, the exit code and the
// script's own error, and a Warning event says so. The failed trainers
// are kept, stopped, and kubectl logs reads the error in them.
func TestTorchScriptThatFailsFailsItsJob(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	ckpt := checkpointDir(t, ns)
	job := torchJob(t, "--epochs notanumber", ckpt)
	onFailure(t, cp, ns, job.Name)
	runs := watchTerminations(t, cp, ns, map[string]string{v1.LabelTrainer: job.Name})
	created := time.Now()
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	require.NoError(t, err)

	final, at := waitJobEnds(t, tj, ns, job.Name, 3*time.Minute)
	t.Logf("Failed %.1f s after its creation: %s", at.Sub(created).Seconds(), final.Status.Message)
	ended := runs()
	t.Logf("the trainers' runs that ended, by their end:\n%s", describeRuns(ended))
	require.Equal(t, v1.PhaseFailed, final.Status.Phase, "%s: %s", final.Status.Reason, final.Status.Message)
	assert.Equal(t, v1.ReasonTooManyFailures, final.Status.Reason)
	msg := final.Status.Message
	assert.Regexp(t, `pod `+job.Name+`-trainer-\S+ exited with code 1\b`, msg, "the pod and the exit code of the last failure")
	// train.py reads --epochs with int(): the script's own error, from the
	// end of its log, not only torchrun's report of it.
	assert.Contains(t, msg, "invalid literal for int() with base 10: 'notanumber'", "the script's error in the message")
	assert.Greater(t, final.Status.Resize.Failures, final.Spec.Elastic().MaxRestartsOrDefault(), "the failures counted")
	require.NotNil(t, final.Status.Resize.LastFailure)
	assert.Equal(t, int32(1), final.Status.Resize.LastFailure.ExitCode)

	ev := waitJobEvent(t, cp, ns, job.Name, corev1.EventTypeWarning, v1.EventFailed)
	assert.Contains(t, ev.Message, "exited with code 1", "the Warning event's message")

	// Each run failed on the script's error: a later run that found the
	// rendezvous closed (an agent that exits closes it) never trained, and
	// its failure is torchrun's, not the training's.
	require.NotEmpty(t, ended, "the trainers' runs that ended")
	var closed []string
	for _, r := range ended {
		if strings.Contains(r.message, "RendezvousClosedError") {
			closed = append(closed, fmt.Sprintf("%s %s-%s", r.pod, r.started.Format(time.TimeOnly), r.ended.Format(time.TimeOnly)))
		}
	}
	assert.Empty(t, closed, "of %d runs, these found the job's rendezvous closed", len(ended))

	keptFailedPods(t, cp, ns, job.Name, "invalid literal for int() with base 10: 'notanumber'")
}

// keptFailedPods: a failed job keeps its failed trainer pods by default
// (spec.runPolicy.cleanPodPolicy Running), stopped by their kubelet for
// good, and kubectl logs reads the training's error in them; the trainer
// ReplicaSet is gone, no pod of it is left, and nothing runs again.
func keptFailedPods(t *testing.T, cp *framework.ControlPlane, ns, job, logged string) {
	t.Helper()
	waitJobEvent(t, cp, ns, job, corev1.EventTypeNormal, v1.EventPodsKept)
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: v1.LabelKept + "=" + job})
	require.NoError(t, err)
	require.NotEmpty(t, list.Items, "the failed trainers kept")
	restarts := map[string]int32{}
	for _, p := range list.Items {
		assert.Equal(t, "trainer", p.Labels[v1.LabelKeptRole])
		stopped := waitPod(t, cp, ns, p.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		assert.Equal(t, "DeadlineExceeded", stopped.Status.Reason)
		require.NotEmpty(t, stopped.Status.ContainerStatuses)
		restarts[p.Name] = stopped.Status.ContainerStatuses[0].RestartCount
		out, err := cp.Kubectl(t.Context(), "logs", "-n", ns, p.Name)
		require.NoError(t, err, out)
		assert.Contains(t, out, logged, "kubectl logs %s", p.Name)
	}
	// Deleted with propagation Orphan, the ReplicaSet carries the orphan
	// finalizer until the garbage collector has let its pods go.
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, v1.ReplicaSetName(job, v1.RoleTrainer), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "the trainer ReplicaSet is gone")
	time.Sleep(10 * time.Second)
	left, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: v1.LabelTrainer + "=" + job})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "no trainer of the job's ReplicaSet")
	for name, n := range restarts {
		p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodFailed, p.Status.Phase, "%s stays stopped", name)
		assert.Equal(t, n, p.Status.ContainerStatuses[0].RestartCount, "%s ran no more", name)
	}
}

// TestTorchMasterLossIsNoFailure grows example/torchjob.yaml to three
// trainers and deletes its master pod, which holds the rendezvous store:
// every trainer's agent loses the store and exits, its container restarts
// and finds the new master through the Service, and the job trains again
// at three, from its checkpoint, and ends Succeeded with no failure
// counted.
func TestTorchMasterLossIsNoFailure(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	ckpt := checkpointDir(t, ns)
	trainLog := filepath.Join(ckpt, "train.log")
	job := torchJob(t, "--epochs 200 --steps-per-epoch 20", ckpt)
	onFailure(t, cp, ns, job.Name)
	restarts := &restartLog{seen: map[string]int32{}}
	watchTrainerExits(t, cp, ns, job.Name, restarts)
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	waitTraining(t, trainLog, 3, time.Time{})
	time.Sleep(5 * time.Second)
	masters := rolePodsOf(t, cp, ns, job.Name, v1.RoleMaster)
	require.Len(t, masters, 1, "the job's master pods")
	deleted := time.Now()
	require.NoError(t, cp.Client.CoreV1().Pods(ns).Delete(ctx, masters[0].Name, metav1.DeleteOptions{}))
	again := waitTraining(t, trainLog, 3, deleted)
	t.Logf("master %s deleted; a world of 3 trains again %.1f s later", masters[0].Name, again.Sub(deleted).Seconds())

	final, _ := waitJobEnds(t, tj, ns, job.Name, 10*time.Minute)
	require.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s: %s", final.Status.Reason, final.Status.Message)
	assert.Zero(t, final.Status.Resize.Failures, "the master's loss counted as a failure: last %+v, counted %v; trainer restarts:\n%s",
		final.Status.Resize.LastFailure, final.Status.Resize.Counted, restarts)
	// The trainers did lose their store: their restarts are what was judged.
	assert.NotEqual(t, "none", restarts.String(), "no trainer restarted after the master's loss")
	t.Logf("trainer restarts: %s", restarts)
}

// horovodrunOnce stands in for horovodrun in the master pod: it records
// that it started, waits up to a minute for the host-discovery script to
// print a host, and exits 0, the end of a training.
const horovodrunOnce = `#!/bin/sh
echo started >> /edl-events/launcher
while [ $# -gt 0 ]; do
  case "$1" in
    --host-discovery-script) script=$2; shift 2 ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
i=0
while [ $i -lt 60 ]; do
  hosts=$(sh "$script" | tr '\n' ' ')
  if [ -n "$hosts" ]; then
    echo "hosts: $hosts" >> /edl-events/launcher
    echo "horovodrun stand-in: trained on $hosts"
    exit 0
  fi
  sleep 1
  i=$((i + 1))
done
echo "horovodrun stand-in: no host discovered in 60 s" >&2
exit 1
`

var hostsLine = regexp.MustCompile(`^hosts:( \d+\.\d+\.\d+\.\d+:1)+$`)

// horovodrunFails stands in for a horovodrun that fails each time.
const horovodrunFails = `#!/bin/sh
echo started >> /edl-events/launcher
echo "horovodrun stand-in: giving up" >&2
exit 3
`

// TestHorovodLauncherEndsItsJob runs a Horovod job without
// elasticPolicy.hostDiscovery, its launcher a stand-in for horovodrun that
// finds a trainer through the defaulted discovery script and exits 0: the
// job ends Succeeded, naming the master pod, and the launcher ran once —
// the master container's restart (restartPolicy Always) does not start it
// again.
func TestHorovodLauncherEndsItsJob(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	job, events := horovodJob(t, ns, horovodrunOnce)
	require.Nil(t, job.Spec.ElasticPolicy, "no elasticPolicy, so no hostDiscovery")
	onFailure(t, cp, ns, job.Name)
	masters := watchPodRestarts(t, cp, ns, map[string]string{v1.LabelMaster: job.Name})
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	require.NoError(t, err)

	final, _ := waitJobEnds(t, tj, ns, job.Name, 5*time.Minute)
	require.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s: %s", final.Status.Reason, final.Status.Message)
	m := regexp.MustCompile(`master pod (\S+) container \S+ exited with code 0`).FindStringSubmatch(final.Status.Message)
	require.NotNil(t, m, "the message names the master pod: %q", final.Status.Message)
	assert.Contains(t, masters(), m[1], "the pod named is the job's master")
	assert.Zero(t, final.Status.Resize.Failures, "last %+v", final.Status.Resize.LastFailure)

	// Until the teardown, the master's container may restart: it must not
	// run the launcher again.
	launcher := filepath.Join(events, "launcher")
	lines := strings.Split(strings.TrimSpace(readFile(t, launcher)), "\n")
	assert.Equal(t, 1, countLines(lines, "started"), "the launcher's runs:\n%s", strings.Join(lines, "\n"))
	assert.True(t, slices.ContainsFunc(lines, hostsLine.MatchString), "the defaulted discovery script lists a trainer, one slot: %q", lines)
	time.Sleep(10 * time.Second)
	lines = strings.Split(strings.TrimSpace(readFile(t, launcher)), "\n")
	assert.Equal(t, 1, countLines(lines, "started"), "the launcher's runs 10 s after the job Succeeded:\n%s", strings.Join(lines, "\n"))
	t.Logf("the master pods and their restarts: %v; launcher events: %q", masters(), lines)
}

// TestHorovodLauncherThatFailsFailsItsJob runs a Horovod job whose launcher
// exits 3 each time, with elasticPolicy.maxRestarts 1: its second exit
// fails the job, reason TooManyFailures, the message naming the exit code
// and the launcher's last words.
func TestHorovodLauncherThatFailsFailsItsJob(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	job, events := horovodJob(t, ns, horovodrunFails)
	job.Spec.ElasticPolicy = &v1.ElasticPolicy{MaxRestarts: ptr.To(int32(1))}
	onFailure(t, cp, ns, job.Name)
	created := time.Now()
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	require.NoError(t, err)

	final, at := waitJobEnds(t, tj, ns, job.Name, 3*time.Minute)
	t.Logf("Failed %.1f s after its creation: %s", at.Sub(created).Seconds(), final.Status.Message)
	require.Equal(t, v1.PhaseFailed, final.Status.Phase, "%s: %s", final.Status.Reason, final.Status.Message)
	assert.Equal(t, v1.ReasonTooManyFailures, final.Status.Reason)
	assert.Regexp(t, `pod `+job.Name+`-master-\S+ exited with code 3\b`, final.Status.Message)
	assert.Contains(t, final.Status.Message, "horovodrun stand-in: giving up", "the launcher's last words")
	assert.Equal(t, int32(2), final.Status.Resize.Failures, "maxRestarts 1: the second failure fails the job")
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(events, "launcher"))), "\n")
	assert.GreaterOrEqual(t, countLines(lines, "started"), 2, "the launcher's runs")
	waitJobEvent(t, cp, ns, job.Name, corev1.EventTypeWarning, v1.EventFailed)
}

// checkpointDir is a host directory for a torch job's checkpoint and
// train.log, removed when the test ends.
func checkpointDir(t *testing.T, ns string) string {
	t.Helper()
	dir := filepath.Join("/var/lib/edl-node", "checkpoints", ns)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// horovodJob is a Horovod job "real" on the real node without an
// elasticPolicy, one or two trainers of 200m CPU running horovodWorker, its
// master's horovodrun the given script; it returns the job and the host
// directory of its events, mounted at /edl-events.
func horovodJob(t *testing.T, ns, horovodrun string) (*v1.TrainingJob, string) {
	t.Helper()
	events := filepath.Join("/var/lib/edl-node", "events", ns)
	for dir, files := range map[string]map[string]string{
		"bin":       {"horovodrun": horovodrun},
		"workspace": {"train.py": horovodWorker},
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(events, dir), 0o755))
		for name, text := range files {
			require.NoError(t, os.WriteFile(filepath.Join(events, dir, name), []byte(text), 0o755)) // #nosec G306 -- run in the pods
		}
	}
	t.Cleanup(func() { _ = os.RemoveAll(events) })
	hostPath := func(name, dir, at string) (corev1.Volume, corev1.VolumeMount) {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(events, dir)}}},
			corev1.VolumeMount{Name: name, MountPath: at}
	}
	eventsVol, eventsMount := hostPath("events", "", "/edl-events")
	binVol, binMount := hostPath("bin", "bin", "/usr/local/bin")
	workVol, workMount := hostPath("workspace", "workspace", "/workspace")
	trainer := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
	}}
	return &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "real"},
		Spec: v1.TrainingJobSpec{
			Framework:    v1.FrameworkHorovod,
			Image:        exampleImage(t),
			NodeSelector: map[string]string{framework.RealNodeLabel: "true"},
			Volumes:      []corev1.Volume{eventsVol, binVol, workVol},
			VolumeMounts: []corev1.VolumeMount{eventsMount, binMount, workMount},
			Master:       v1.MasterSpec{Resources: smallRole},
			Trainer:      v1.TrainerSpec{Entrypoint: "python3 /workspace/train.py", MinInstance: 1, MaxInstance: 2, Resources: trainer},
		},
	}, events
}
