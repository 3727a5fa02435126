package realnode

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/docs"
	"github.com/paddlepaddle/edl/test/framework"
)

// The proof run's length: long enough for a growth, a yield and a growth
// back, a couple of minutes on two cores.
const (
	torchEpochs = 300
	torchSteps  = 20
)

// torchRunOutEnv names a directory where TestTorchJobIsElasticForReal
// writes the run's record (train.log, resizes.csv, run.png) for
// docs/experiments-torch.md.
const torchRunOutEnv = "EDL_TORCH_RUN_OUT"

// torchUnpricedEnv, when set, runs the proof as EDL scaled such jobs before
// resizes had a price: autoscaler.priceResizes false and one trainer a plan
// (autoscaler.maxGrowPerCycle 1), for the A/B in docs/experiments-torch.md.
const torchUnpricedEnv = "EDL_TORCH_UNPRICED"

// TestTorchJobIsElasticForReal is the real training run of
// example/torchjob.yaml (min 1, max 3) on the real node, under EDL installed
// as its Deployment: logistic regression under torchrun, with its
// checkpoint on the node. EDL grows the job to its maximum in one resize,
// a burst of higher-priority pods shrinks it to one trainer, it grows back
// once they are gone, and it ends Succeeded with the loss of the same
// training run at a fixed size, within 1%. Every trainer removed exits 0
// within its grace period, and no resize counts as a failure. Under the
// fulfillment policy, which grows it back whatever it measured: on the
// two-core node the goodput policy measures 3 trainers slower than 1 and
// keeps the job at 1 after the burst.
func TestTorchJobIsElasticForReal(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	options := map[string]string{"policy": "fulfillment"}
	unpriced := os.Getenv(torchUnpricedEnv) != ""
	if unpriced {
		options["priceResizes"], options["maxGrowPerCycle"] = "false", "1"
	}
	configure(t, cp, options)
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	ckpt := filepath.Join("/var/lib/edl-node", "checkpoints", ns)
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(ckpt) })
	trainLog := filepath.Join(ckpt, "train.log")
	args := fmt.Sprintf("--epochs %d --steps-per-epoch %d", torchEpochs, torchSteps)

	// The same training at a fixed size, one process, beside the job; it
	// asks for no CPU, so that the autoscaler's room is the job's.
	ref := shellPod("fixed-size", exampleImage(t), "EDL_CHECKPOINT_DIR=/tmp/fixed exec python3 /workspace/train.py "+args, nil)
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, ref, metav1.CreateOptions{})
	require.NoError(t, err)

	job := torchJob(t, args, ckpt)
	resizes := watchReplicas(t, cp, ns, job.Name+"-trainer")
	restarts := &restartLog{seen: map[string]int32{}}
	exits := watchTrainerExits(t, cp, ns, job.Name, restarts)
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	// 1. It grows to its maximum.
	grown := waitTraining(t, trainLog, 3, time.Time{})
	// 2. After a while at three, pods of a higher priority take two
	// trainers' room.
	time.Sleep(10 * time.Second)
	burst := time.Now()
	web := webBurst(t, cp, ns, 2)
	shrunk := waitTraining(t, trainLog, 1, burst)
	// 3. They go; the job grows back.
	require.NoError(t, cp.Client.AppsV1().Deployments(ns).Delete(ctx, web, metav1.DeleteOptions{}))
	gone := time.Now()
	regrown := waitTraining(t, trainLog, 3, gone)
	removed := exits()
	// 4. It ends.
	final := waitEnd(t, tj, ns, job.Name)
	require.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s: %s", final.Status.Reason, final.Status.Message)
	assert.Zero(t, final.Status.Resize.Failures, "no resize counted as a failure; counted %v; restarts seen:\n%s", final.Status.Resize.Counted, restarts)
	// Ended, the job holds no trainer: its ReplicaSet stays at 0.
	time.Sleep(10 * time.Second)
	rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, job.Name+"-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(0), *rs.Spec.Replicas, "the trainers of a Succeeded job; resizes %v", resizes())

	got := finalLoss(t, readFile(t, trainLog))
	waitPod(t, cp, ns, ref.Name, ended)
	want := finalLoss(t, logs(t, cp, ns, ref.Name))
	assert.InDelta(t, want, got, 0.01*want, "the final loss within 1%% of the fixed-size run's")

	// Admitted at its minimum (0 → 1), the job grew in one resize, 1 → 3.
	history := resizes()
	require.Greater(t, len(history), 1, "%v", history)
	assert.Equal(t, resize{from: 0, to: 1}.String(), history[0].String(), "admitted at its minimum")
	if !unpriced {
		assert.Equal(t, resize{from: 1, to: 3}.String(), history[1].String(), "grown to its maximum in one resize")
	}
	// The two trainers the burst took left in order.
	assert.Len(t, removed, 2, "trainers removed during the run: %v", removed)
	for name, e := range removed {
		assert.Equal(t, int32(0), e.code, "%s exited %d (%s)", name, e.code, e.reason)
		assert.Less(t, e.after, 30*time.Second, "%s ended within its grace period", name)
	}
	t.Logf("fixed-size final loss %.6f, elastic %.6f; training at 3 at %s, at 1 %.1f s after the burst, at 3 %.1f s after it went; resizes %v; trainer restarts: %s",
		want, got, grown.Format(time.RFC3339), shrunk.Sub(burst).Seconds(), regrown.Sub(gone).Seconds(), history, restarts)
	if dir := os.Getenv(torchRunOutEnv); dir != "" {
		require.NoError(t, writeTorchRun(dir, readFile(t, trainLog), history, burst, gone))
	}
}

// configure sets fields of edl's autoscaler configuration (the ConfigMap
// edl-config) and restarts edl's Deployment with it, until the test ends.
func configure(t *testing.T, cp *framework.ControlPlane, fields map[string]string) {
	t.Helper()
	ctx := t.Context()
	cms := cp.Client.CoreV1().ConfigMaps(edlNamespace)
	cm, err := cms.Get(ctx, "edl-config", metav1.GetOptions{})
	require.NoError(t, err)
	before := cm.Data["config.yaml"]
	after := before
	for k, v := range fields {
		re := regexp.MustCompile(`(?m)^(\s+)` + k + `: .*$`)
		require.True(t, re.MatchString(after), "edl-config sets autoscaler.%s", k)
		after = re.ReplaceAllString(after, "${1}"+k+": "+v)
	}
	restart := func(config string) {
		cm, err := cms.Get(context.Background(), "edl-config", metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data["config.yaml"] = config
		_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = cp.Kubectl(context.Background(), "-n", edlNamespace, "rollout", "restart", "deployment/"+edlApp)
		require.NoError(t, err)
		_, err = cp.Kubectl(context.Background(), "-n", edlNamespace, "rollout", "status", "deployment/"+edlApp, "--timeout=3m")
		require.NoError(t, err)
	}
	restart(after)
	leader(t, cp, time.Now())
	t.Cleanup(func() { restart(before) })
}

// torchJob is example/torchjob.yaml on the real node, its checkpoint on a
// host directory every trainer mounts in place of the example's claim, the
// training of the given length.
func torchJob(t *testing.T, args, ckpt string) *v1.TrainingJob {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	jobs, err := docs.ExampleJobs(root)
	require.NoError(t, err)
	job := jobs["example/torchjob.yaml/torch-example"]
	require.NotNil(t, job, "example/torchjob.yaml's job; the examples: %v", slices.Collect(maps.Keys(jobs)))
	require.Equal(t, v1.FrameworkPyTorch, job.Spec.Framework)
	require.Equal(t, int32(1), job.Spec.Trainer.MinInstance)
	require.Equal(t, int32(3), job.Spec.Trainer.MaxInstance)
	job.Spec.Image = exampleImage(t)
	job.Spec.Trainer.Entrypoint += " " + args
	job.Spec.NodeSelector = map[string]string{framework.RealNodeLabel: "true"}
	replaced := false
	for i := range job.Spec.Volumes {
		if job.Spec.Volumes[i].Name == "checkpoint" {
			job.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: ckpt}}
			replaced = true
		}
	}
	require.True(t, replaced, "example/torchjob.yaml's checkpoint volume")
	return job
}

// webBurst runs n pods of a priority above the job's, each asking for a
// trainer's CPU, as a Deployment; kube-scheduler preempts trainers for them.
func webBurst(t *testing.T, cp *framework.ControlPlane, ns string, n int32) string {
	t.Helper()
	ctx := t.Context()
	class := "web-" + ns
	_, err := cp.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cp.Client.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	pod := shellPod("web", exampleImage(t), "exec sleep 3600", map[string]string{"app": "web"}).Spec
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.PriorityClassName = class
	pod.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	_, err = cp.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: pod},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return "web"
}

var trainingLine = regexp.MustCompile(`(?m)^training world_size=(\d+) .* time=([0-9.]+)$`)

// waitTraining waits until train.log says a world of size world started
// training after since, and returns when.
func waitTraining(t *testing.T, path string, world int, since time.Time) time.Time {
	t.Helper()
	var at time.Time
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		data, _ := os.ReadFile(path)
		for _, m := range trainingLine.FindAllStringSubmatch(string(data), -1) {
			if w, _ := strconv.Atoi(m[1]); w == world {
				if tm := unixTime(m[2]); tm.After(since) {
					at = tm
					return true, nil
				}
			}
		}
		return false, nil
	})
	data, _ := os.ReadFile(path)
	require.NoError(t, err, "a world of %d training after %s; train.log ends:\n%s", world, since.Format(time.RFC3339), tail(string(data), 8))
	return at
}

func unixTime(s string) time.Time {
	f, _ := strconv.ParseFloat(s, 64)
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

var finalLine = regexp.MustCompile(`(?m)^final_loss=([0-9.]+)`)

// finalLoss is the loss a training run ended with.
func finalLoss(t *testing.T, out string) float64 {
	t.Helper()
	m := finalLine.FindStringSubmatch(out)
	require.NotNil(t, m, "no final_loss in:\n%s", tail(out, 8))
	f, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return f
}

// resize is one change of the trainer ReplicaSet's replicas.
type resize struct {
	at       time.Time
	from, to int32
}

func (r resize) String() string { return fmt.Sprintf("%d→%d", r.from, r.to) }

// watchReplicas records every change of a ReplicaSet's spec.replicas.
func watchReplicas(t *testing.T, cp *framework.ControlPlane, ns, name string) func() []resize {
	t.Helper()
	w, err := cp.Client.AppsV1().ReplicaSets(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []resize
	last := int32(-1)
	go func() {
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok || rs.Spec.Replicas == nil {
				continue
			}
			mu.Lock()
			if n := *rs.Spec.Replicas; last >= 0 && n != last && n > 0 {
				seen = append(seen, resize{at: time.Now(), from: last, to: n})
			}
			last = *rs.Spec.Replicas
			mu.Unlock()
		}
	}()
	return func() []resize {
		mu.Lock()
		defer mu.Unlock()
		return append([]resize(nil), seen...)
	}
}

// exit is how a deleted trainer's container ended, and how long after
// its deletion began.
type exit struct {
	code   int32
	reason string
	after  time.Duration
}

// watchTrainerExits records, for each trainer pod that ran and is deleted
// from now on, its container's exit code and the time from the deletion to
// the container's end. Each restart of a trainer not being deleted goes to
// restarts, with the end of the log of the run that exited, so that a
// failure counted against the job says which process failed and why.
func watchTrainerExits(t *testing.T, cp *framework.ControlPlane, ns, job string, restarts *restartLog) func() map[string]exit {
	t.Helper()
	w, err := cp.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: selectorOf(map[string]string{v1.LabelTrainer: job})})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	deleting := map[string]time.Time{}
	started := map[string]bool{}
	exits := map[string]exit{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			for _, c := range p.Status.ContainerStatuses {
				started[p.Name] = started[p.Name] || c.ContainerID != ""
				if p.DeletionTimestamp == nil && c.RestartCount > 0 {
					restarts.saw(cp, p, c)
				}
			}
			// A trainer that never started (created for a preempted one,
			// then scaled away) has no process to stop.
			if p.DeletionTimestamp == nil || !started[p.Name] {
				mu.Unlock()
				continue
			}
			if _, ok := deleting[p.Name]; !ok {
				deleting[p.Name] = time.Now()
			}
			for _, c := range p.Status.ContainerStatuses {
				term := c.State.Terminated
				if term == nil && c.State.Running == nil {
					term = c.LastTerminationState.Terminated
				}
				if term != nil {
					exits[p.Name] = exit{code: term.ExitCode, reason: term.Reason, after: time.Since(deleting[p.Name])}
				}
			}
			if _, ok := exits[p.Name]; !ok && ev.Type == watch.Deleted {
				exits[p.Name] = exit{code: -1, reason: "deleted before its container was seen to end", after: time.Since(deleting[p.Name])}
			}
			mu.Unlock()
		}
	}()
	return func() map[string]exit {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]exit{}
		for k, v := range exits {
			out[k] = v
		}
		return out
	}
}

// restartLog is what watchTrainerExits saw of trainer restarts: for each,
// the pod, its restart count, how its container's last run ended and that
// run's last log lines.
type restartLog struct {
	mu    sync.Mutex
	seen  map[string]int32
	lines []string
}

func (r *restartLog) saw(cp *framework.ControlPlane, p *corev1.Pod, c corev1.ContainerStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.RestartCount <= r.seen[p.Name] {
		return
	}
	r.seen[p.Name] = c.RestartCount
	line := fmt.Sprintf("%s restart %d at %s", p.Name, c.RestartCount, time.Now().Format(time.RFC3339))
	if term := c.LastTerminationState.Terminated; term != nil {
		line += fmt.Sprintf(": exited %d (%s) at %s", term.ExitCode, term.Reason, term.FinishedAt.Format(time.RFC3339))
	}
	i := len(r.lines)
	r.lines = append(r.lines, line)
	// The log of the run that exited, while the pod is there to ask; not
	// on the watch's goroutine, whose times the exits are.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := cp.Kubectl(ctx, "-n", p.Namespace, "logs", p.Name, "--previous", "--tail", "30")
		if err != nil {
			out = err.Error()
		}
		r.mu.Lock()
		r.lines[i] += "\n" + out
		r.mu.Unlock()
	}()
}

func (r *restartLog) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) == 0 {
		return "none"
	}
	return strings.Join(r.lines, "\n")
}
