package realnode

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

var installOnce sync.Once

// installed installs EDL once for the package's tests that need it running.
func installed(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	installOnce.Do(func() { install(t, cp) })
	leader(t, cp, time.Time{})
}

// smallRole is what each role of the test job asks for: the real node has
// the machine's cores, shared by every pod of the package.
var smallRole = corev1.ResourceRequirements{Requests: corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("64Mi"),
}}

// TestTrainersAreRealProcesses runs a fault-tolerant TrainingJob whose
// master, pserver and trainers are processes on the real node (the example
// image's paddle_k8s): the pods get the environment docs/api.md lists, a
// trainer reaches the master through its Service name, kubectl logs shows
// each role; EDL grows the job to its maximum, explains it from the live
// plan with the leader's options, shrinks it when its maximum is lowered —
// a trainer it marked is among those the ReplicaSet deletes, each gets
// SIGTERM and exits 0 within its grace period, and the job goes on
// Running — and grows it back when the maximum is raised again. Deleting
// the job stops every process. Its trainers report their progress, one at a
// time, and EDL measures it.
func TestTrainersAreRealProcesses(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	events := filepath.Join("/var/lib/edl-node", "events", ns)
	require.NoError(t, os.MkdirAll(events, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(events) })
	job := &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "real"},
		Spec: v1.TrainingJobSpec{
			Image:         exampleImage(t),
			FaultTolerant: true,
			NodeSelector:  map[string]string{framework.RealNodeLabel: "true"},
			Volumes: []corev1.Volume{{Name: "events", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: events},
			}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "events", MountPath: "/edl-events"}},
			Master:       v1.MasterSpec{Resources: smallRole},
			Pserver:      v1.PserverSpec{MinInstance: 1, MaxInstance: 1, Resources: smallRole},
			Trainer:      v1.TrainerSpec{Entrypoint: "python3 train.py", MinInstance: 1, MaxInstance: 3, Resources: smallRole},
		},
	}
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	// EDL grows the job into the idle node: three trainers, all running.
	trainers := waitTrainers(t, cp, ns, 3)
	pod := trainers[0]
	waitEvent(t, filepath.Join(events, pod.Name), "master reached")
	out := logs(t, cp, ns, pod.Name)
	for _, want := range []string{
		"PADDLE_JOB_NAME=real", "TRAINING_ROLE=TRAINER", "PADDLE_TRAINING_ROLE=TRAINER",
		"POD_IP=" + pod.Status.PodIP, "POD_NAME=" + pod.Name, "NAMESPACE=" + ns,
		"PADDLE_MASTER_ENDPOINT=real-master." + ns + ".svc:8080",
		"ENTRY=python3 train.py", "PADDLE_PSERVERS_NUM=1", "PADDLE_TRAINERS_NUM=1",
		"master reached at real-master." + ns + ".svc:8080",
	} {
		assert.Contains(t, out, want, "trainer %s's log", pod.Name)
	}
	assert.Regexp(t, `master real-master\.`+ns+`\.svc resolved to 10\.96\.`, out, "the master Service's name resolves to its ClusterIP")
	for role, want := range map[v1.Role]string{v1.RoleMaster: "TRAINING_ROLE=MASTER", v1.RolePserver: "TRAINING_ROLE=PSERVER"} {
		pods := rolePods(t, cp, ns, role)
		require.Len(t, pods, 1, role)
		assert.Contains(t, logs(t, cp, ns, pods[0].Name), want, role)
	}

	// kubectl edl explain plans on the live cluster with the leader's options.
	plugin, err := framework.BuildCommand("kubectl-edl")
	require.NoError(t, err)
	text, err := exec.CommandContext(ctx, plugin, "explain", "--kubeconfig", cp.Kubeconfig, "-n", ns, "real").CombinedOutput() // #nosec G204 -- the built plugin
	require.NoError(t, err, "%s", text)
	assert.NotContains(t, string(text), "no Lease", "explain reads the running controller's options")
	assert.Regexp(t, `(?m)^`+ns+`/real \(Running`, string(text))
	assert.Regexp(t, `trainers\s+3 asked for \(3 running\), min 1, max 3`, string(text))

	// Shrink it to one trainer: the ReplicaSet deletes two, any trainer
	// EDL marked for removal among them (on one node, without restarts,
	// EDL marks none and leaves the choice to the ReplicaSet's ranking),
	// and each stops on its SIGTERM within its grace period.
	deleted, marked := watchDeletions(t, cp, ns)
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, "real", types.MergePatchType,
		[]byte(`{"spec":{"trainer":{"max-instance":1}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	kept := waitTrainers(t, cp, ns, 1)[0]
	gone := deleted()
	require.Len(t, gone, 2, "two trainers removed")
	assert.NotContains(t, gone, kept.Name)
	for _, name := range marked() {
		assert.Contains(t, gone, name, "a trainer EDL marked for removal goes")
	}
	grace := 30 * time.Second
	for name, at := range gone {
		lines := waitEvent(t, filepath.Join(events, name), "exit 0 (stopped)")
		term := eventTime(t, lines, "got SIGTERM")
		exit := eventTime(t, lines, "exit 0 (stopped)")
		assert.False(t, term.Before(at.Add(-time.Second)), "%s got SIGTERM at %s, before its deletion at %s", name, term, at)
		assert.Less(t, exit.Sub(at), grace, "%s exited within its grace period", name)
	}
	// Room for three again: EDL grows it back.
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, "real", types.MergePatchType,
		[]byte(`{"spec":{"trainer":{"max-instance":3}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitTrainers(t, cp, ns, 3)
	got, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, "real", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PhaseRunning, got.Status.Phase, "the removed trainers' exits are neither a success nor a failure")

	// The stand-in's trainers report their progress, one at a time: EDL
	// measures a throughput (its 1,000 samples a second) from the reports.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, "real", metav1.GetOptions{})
		return err == nil && got.Status.Progress != nil && len(got.Status.Progress.Measured) > 0, nil
	})
	require.NoError(t, err, "status.progress measured; it is %+v", got.Status.Progress)
	assert.Empty(t, got.Status.Progress.Error)
	m := slices.MaxFunc(got.Status.Progress.Measured, func(a, b v1.SizeThroughput) int { return cmp.Compare(a.Millis, b.Millis) })
	assert.InEpsilon(t, 1000, float64(m.Work)*1000/float64(m.Millis), 0.1, "the stand-in's 1,000 samples a second: %+v", m)

	// Deleting the job stops every process.
	_, err = cp.Kubectl(ctx, "-n", ns, "delete", "tj", "real", "--wait=true")
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0 && len(jobProcesses("real", ns)) == 0, nil
	})
	require.NoError(t, err, "processes of the job left: %v", jobProcesses("real", ns))
}

// rolePods lists the live pods of one role of the job real.
func rolePods(t *testing.T, cp *framework.ControlPlane, ns string, role v1.Role) []corev1.Pod {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selectorOf(map[string]string{v1.LabelFor(role): "real"})})
	require.NoError(t, err)
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// waitTrainers waits until the job has n trainers, all Running and Ready
// on the real node, and no other, and returns them.
func waitTrainers(t *testing.T, cp *framework.ControlPlane, ns string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		all, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selectorOf(map[string]string{v1.LabelTrainer: "real"})})
		if err != nil || len(all.Items) != n {
			return false, nil
		}
		for i := range all.Items {
			if !running(&all.Items[i]) || all.Items[i].Spec.NodeName != framework.RealNodeName {
				return false, nil
			}
		}
		pods = all.Items
		return true, nil
	})
	require.NoError(t, err, "%d trainers Running on %s", n, framework.RealNodeName)
	return pods
}

// watchDeletions records, from now on, the trainers deleted, with when
// their deletion began, and the trainers EDL marked for removal.
func watchDeletions(t *testing.T, cp *framework.ControlPlane, ns string) (deleted func() map[string]time.Time, marked func() []string) {
	t.Helper()
	w, err := cp.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: selectorOf(map[string]string{v1.LabelTrainer: "real"})})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	gone := map[string]time.Time{}
	marks := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			if _, seen := gone[p.Name]; !seen && (p.DeletionTimestamp != nil || ev.Type == watch.Deleted) {
				gone[p.Name] = time.Now()
			}
			if p.Annotations[v1.AnnotationDeletionCost] == v1.DeletionCostRemove {
				marks[p.Name] = true
			}
			mu.Unlock()
		}
	}()
	deleted = func() map[string]time.Time {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]time.Time{}
		for k, v := range gone {
			out[k] = v
		}
		return out
	}
	marked = func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for k := range marks {
			out = append(out, k)
		}
		return out
	}
	return deleted, marked
}

// waitEvent waits until a trainer's event file has a line containing want
// and returns its lines.
func waitEvent(t *testing.T, path, want string) []string {
	t.Helper()
	var lines []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return false, nil
		}
		lines = strings.Split(strings.TrimSpace(string(data)), "\n")
		return strings.Contains(string(data), want), nil
	})
	require.NoError(t, err, "%s: %q in %v", path, want, lines)
	return lines
}

var eventLine = regexp.MustCompile(`^(\d+)\.(\d+) (.*)$`)

// eventTime is when the first event line containing what was written.
func eventTime(t *testing.T, lines []string, what string) time.Time {
	t.Helper()
	for _, l := range lines {
		m := eventLine.FindStringSubmatch(l)
		if m != nil && strings.Contains(m[3], what) {
			sec, _ := strconv.ParseInt(m[1], 10, 64)
			nsec, _ := strconv.ParseInt((m[2] + "000000000")[:9], 10, 64)
			return time.Unix(sec, nsec)
		}
	}
	t.Fatalf("no %q in %v", what, lines)
	return time.Time{}
}

// jobProcesses lists the PIDs of processes on this machine that belong to
// the job: PADDLE_JOB_NAME and NAMESPACE in their environment.
func jobProcesses(job, ns string) []int {
	return processesWith(func(pid int) bool {
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			return false
		}
		vars := strings.Split(string(env), "\x00")
		return contains(vars, "PADDLE_JOB_NAME="+job) && contains(vars, "NAMESPACE="+ns)
	})
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
