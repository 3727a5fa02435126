package controller

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework/horovod"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// horovodJob is the job "mnist" as a Horovod job with host discovery, two
// slots per trainer, 1 to 4 trainers.
func horovodJob() *v1.TrainingJob {
	job := builders.Job("mnist", testNamespace, builders.PyTorch("python3 train.py"),
		builders.Elastic(v1.ElasticPolicy{HostDiscovery: &v1.HostDiscovery{SlotsPerHost: ptr.To(int32(2))}}))
	job.Spec.Framework = v1.FrameworkHorovod
	job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance = 1, 4
	v1.SetObjectDefaults_TrainingJob(job)
	return job
}

// hostPod is a trainer of mnist with an address, created age after T0.
func hostPod(name, ip string, age time.Duration, muts ...builders.PodOption) *corev1.Pod {
	muts = append([]builders.PodOption{builders.CreatedAfter(age), func(p *corev1.Pod) { p.Status.PodIP = ip }}, muts...)
	return trainerPod(name, muts...)
}

func marked() builders.PodOption {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{v1.AnnotationDeletionCost: v1.DeletionCostRemove}
	}
}

func TestHosts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int32
		pods     []*corev1.Pod
		want     []string
	}{
		{"running and ready trainers, sorted", 2,
			[]*corev1.Pod{hostPod("t-b", "10.0.0.9", 0, builders.Ready()), hostPod("t-a", "10.0.0.10", time.Second, builders.Ready())},
			[]string{"10.0.0.10:2", "10.0.0.9:2"}},
		{"a pending or not ready trainer is left out", 3,
			[]*corev1.Pod{hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "", 0, builders.Unbound()), hostPod("t-c", "10.0.0.3", 0, builders.Running())},
			[]string{"10.0.0.1:2"}},
		{"a trainer being deleted is left out", 2,
			[]*corev1.Pod{hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", 0, builders.Ready(), builders.Terminating())},
			[]string{"10.0.0.1:2"}},
		{"a trainer marked for removal leaves before its pod", 2,
			[]*corev1.Pod{hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", 0, builders.Ready(), marked())},
			[]string{"10.0.0.1:2"}},
		{"unmarked, a decrease removes the newest", 1,
			[]*corev1.Pod{hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", time.Minute, builders.Ready())},
			[]string{"10.0.0.1:2"}},
		{"a decrease takes the pending trainer before a listed one", 1,
			[]*corev1.Pod{hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "", time.Minute, builders.Unbound())},
			[]string{"10.0.0.1:2"}},
		{"none", 0, nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts, _, _ := horovod.Hosts(horovodJob(), tc.replicas, slim(tc.pods...))
			assert.Equal(t, tc.want, hosts)
		})
	}
}

// TestDiscoverHostsScriptPrintsTheHosts runs the ConfigMap's script with sh
// on its hosts file, as horovodrun's driver does in the master pod.
func TestDiscoverHostsScriptPrintsTheHosts(t *testing.T) {
	cm := HostsConfigMap(horovodJob(), []string{"10.0.0.1:2", "10.0.0.2:2"}, []string{"t-a", "t-b"})
	dir := t.TempDir()
	for key, data := range cm.Data {
		require.NoError(t, os.WriteFile(filepath.Join(dir, key), []byte(data), 0o755))
	}
	script := strings.ReplaceAll(cm.Data[horovod.DiscoverHostsKey], horovod.MountPath, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, horovod.DiscoverHostsKey), []byte(script), 0o755))
	out, err := exec.Command("sh", filepath.Join(dir, horovod.DiscoverHostsKey)).Output()
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1:2\n10.0.0.2:2\n", string(out))
	assert.Equal(t, cm.Data[horovod.HostsKey], string(out))
}

func TestHostsNamesTheTrainersItLists(t *testing.T) {
	hosts, names, excess := horovod.Hosts(horovodJob(), 3, slim(
		hostPod("t-b", "10.0.0.9", 0, builders.Ready()), hostPod("t-a", "10.0.0.10", 0, builders.Ready()),
		hostPod("t-c", "10.0.0.3", 0, builders.Ready(), marked())))
	assert.Equal(t, []string{"10.0.0.10:2", "10.0.0.9:2"}, hosts)
	assert.Equal(t, []string{"t-a", "t-b"}, names, "in the order of the list")
	assert.Empty(t, excess, "three replicas: none left out for the count")
	cm := HostsConfigMap(horovodJob(), hosts, names)
	assert.Equal(t, "t-a,t-b", cm.Annotations[v1.AnnotationHostsPods])
	_, names, excess = horovod.Hosts(horovodJob(), 1, slim(
		hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", time.Minute, builders.Ready()),
		hostPod("t-c", "10.0.0.3", 2*time.Minute, builders.Ready())))
	assert.Equal(t, []string{"t-a"}, names)
	assert.Equal(t, []string{"t-c", "t-b"}, podNames(excess), "the newest two, which the ReplicaSet deletes for one replica")
}

func TestSyncKeepsTheHostsConfigMap(t *testing.T) {
	f := newFixture(t)
	job := f.addJob(horovodJob())
	f.addJobObjects(job, 2)
	both, one := horovod.Version("10.0.0.1:2\n10.0.0.2:2\n"), horovod.Version("10.0.0.1:2\n")
	f.addPods(hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", 0, builders.Ready()), toldMaster(job, ""))
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{nudge("m", both)}, nudges(f), "a master without the file's version is told of it once")
	f.feedBack()
	f.addPods(toldMaster(job, both)) // the informer delivers the nudge
	f.settle("mnist")
	cm, err := f.kube.CoreV1().ConfigMaps(testNamespace).Get(f.ctx, v1.HostsConfigMapName("mnist"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1:2\n10.0.0.2:2\n", cm.Data[horovod.HostsKey])
	assert.Equal(t, "t-a,t-b", cm.Annotations[v1.AnnotationHostsPods])
	assert.True(t, controlledBy(cm, job), "the job controls its ConfigMap")

	t.Run("no write when unchanged", func(t *testing.T) {
		f.reset()
		require.NoError(t, f.sync("mnist"))
		assert.Empty(t, f.writeStrings())
	})
	t.Run("a marked trainer leaves the list, and the master is nudged", func(t *testing.T) {
		f.reset()
		f.addPods(hostPod("t-b", "10.0.0.2", 0, builders.Ready(), marked()))
		require.NoError(t, f.sync("mnist"))
		cm, err := f.kube.CoreV1().ConfigMaps(testNamespace).Get(f.ctx, v1.HostsConfigMapName("mnist"), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "10.0.0.1:2\n", cm.Data[horovod.HostsKey])
		assert.Equal(t, "t-a", cm.Annotations[v1.AnnotationHostsPods])
		assert.Equal(t, []string{nudge("m", one)}, nudges(f),
			"the master pod gets the ConfigMap's version, for its kubelet to project the file now")
	})
	t.Run("a master not yet at the file's version is nudged again", func(t *testing.T) {
		// The ConfigMap is current, but the master's annotation is not (a
		// nudge that failed, or one the informer has not delivered yet).
		f.feedBack()
		f.reset()
		require.NoError(t, f.sync("mnist"))
		assert.Equal(t, []string{nudge("m", one)}, nudges(f), "only the master is written")
		f.addPods(toldMaster(job, one))
		f.reset()
		require.NoError(t, f.sync("mnist"))
		assert.Empty(t, f.writeStrings(), "a master at the file's version is left alone")
	})
}

// toldMaster is mnist's running master pod m, told of the hosts file
// version (none when "").
func toldMaster(job *v1.TrainingJob, version string) *corev1.Pod {
	return builders.RolePod(job, v1.RoleMaster, "m", builders.OnNode("n-0"), builders.Phase(corev1.PodRunning), func(p *corev1.Pod) {
		if version != "" {
			p.Annotations = map[string]string{v1.AnnotationHostsVersion: version}
		}
	})
}

// nudge is the patch that tells master pod name of the hosts file version.
func nudge(name, version string) string {
	return name + ` {"metadata":{"annotations":{"` + v1.AnnotationHostsVersion + `":"` + version + `"}}}`
}

// nudges are the pod patches the fixture's clientset recorded.
func nudges(f *fixture) []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, p.GetName()+" "+string(p.GetPatch()))
		}
	}
	return out
}

// TestHostsUpdatedBeforeTheScaleDown: when the controller lowers the
// trainers (clamped to a max that was lowered), it marks the trainers the
// ReplicaSet is to delete, the hosts file drops them, and the ReplicaSet
// is lowered only v1.HostsSettle later, once the master's kubelet wrote
// the file.
func TestHostsUpdatedBeforeTheScaleDown(t *testing.T) {
	f := maxLowered(t)
	require.NoError(t, f.sync("mnist"))
	var order []string
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			order = append(order, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	require.GreaterOrEqual(t, len(order), 2)
	assert.Equal(t, []string{"patch pods", "update configmaps"}, order[:2], "the newest trainer marked, then dropped from the file")
	assert.Empty(t, trainerPatches(f), "held for the master's kubelet to write the file")
	cm, err := f.kube.CoreV1().ConfigMaps(testNamespace).Get(f.ctx, v1.HostsConfigMapName("mnist"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1:2\n", cm.Data[horovod.HostsKey], "the newest trainer, which the ReplicaSet deletes, is gone")
	pod, err := f.kube.CoreV1().Pods(testNamespace).Get(f.ctx, "t-b", metav1.GetOptions{})
	if err == nil { // the fixture's client holds the pods it was given
		assert.Equal(t, v1.DeletionCostRemove, pod.Annotations[v1.AnnotationDeletionCost])
	}

	f.feedBack()
	time.Sleep(v1.HostsSettle)
	f.reset()
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{`[{"op":"replace","path":"/spec/replicas","value":1}]`}, trainerPatches(f), "lowered once the file had time to change")
}

// trainerPatches are the patches of the trainer ReplicaSet since the
// fixture's last reset.
func trainerPatches(f *fixture) []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetName() == v1.ReplicaSetName("mnist", v1.RoleTrainer) {
			out = append(out, string(p.GetPatch()))
		}
	}
	return out
}

// maxLowered is the fixture of a settled Horovod job of two ready
// trainers, t-b the newer, whose max-instance was just lowered to 1.
func maxLowered(t *testing.T) *fixture {
	f := newFixture(t)
	job := f.addJob(horovodJob())
	f.addJobObjects(job, 2)
	f.addPods(hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", time.Minute, builders.Ready()))
	f.settle("mnist")
	job = f.getJob("mnist")
	job.Spec.Trainer.MaxInstance = 1
	f.updateJob(job)
	f.reset()
	return f
}

func podNames(pods []*cluster.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestOnlyHorovodJobsWithHostDiscoveryGetAConfigMap(t *testing.T) {
	for name, job := range map[string]*v1.TrainingJob{
		"PaddlePaddle": builders.Job("mnist", testNamespace),
		"PyTorch":      builders.Job("mnist", testNamespace, builders.PyTorch("python3 train.py")),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(job)
			require.NoError(t, f.sync("mnist"))
			for _, a := range f.kube.Actions() {
				if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "configmaps" {
					assert.Equal(t, v1.ProgressConfigMapName("mnist"), c.GetObject().(*corev1.ConfigMap).Name, "the progress ConfigMap alone")
				}
			}
		})
	}
}

// TestAFailedHostsWriteHoldsTheScaleDown: when the trainers the hosts file
// drops cannot be marked, the controller does not lower the ReplicaSet in
// that sync: the ReplicaSet would delete trainers the file still lists.
func TestAFailedHostsWriteHoldsTheScaleDown(t *testing.T) {
	f := maxLowered(t)
	f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is gone")
	})
	require.Error(t, f.sync("mnist"))
	assert.Empty(t, trainerPatches(f), "no scale-down while the file may list the trainers it removes")
}

// pendingScaleDown is the fixture of a settled Horovod job of two ready
// trainers and a master at the hosts file's version, whose scale-down to
// one trainer the autoscaler decided decided ago: t-b marked, the trainer
// ReplicaSet annotated v1.AnnotationScaleDownTo, its replicas left at 2.
func pendingScaleDown(t *testing.T, decided time.Duration) (*fixture, *v1.TrainingJob) {
	f := newFixture(t)
	job := f.addJob(horovodJob())
	f.addJobObjects(job, 2)
	both := horovod.Version("10.0.0.1:2\n10.0.0.2:2\n")
	f.addPods(hostPod("t-a", "10.0.0.1", 0, builders.Ready()), hostPod("t-b", "10.0.0.2", time.Minute, builders.Ready()), toldMaster(job, both))
	// The API server holds the master, so that a nudge finds it.
	require.NoError(t, f.kube.Tracker().Add(toldMaster(job, both)))
	f.settle("mnist")
	rs := f.getReplicaSet(v1.ReplicaSetName("mnist", v1.RoleTrainer)).DeepCopy()
	rs.Annotations[v1.AnnotationScaleDownTo] = "1"
	rs.Annotations[v1.AnnotationLastScale] = v1.LastScaleAnnotation(v1.ScaleRecord{Time: metav1.NewTime(time.Now().Add(-decided)), From: 2, To: 1, Reason: "room"})
	f.updateReplicaSet(rs)
	f.addPods(hostPod("t-b", "10.0.0.2", time.Minute, builders.Ready(), markedAt(time.Now())))
	f.reset()
	return f, job
}

// TestPendingScaleDownWaitsForTheMastersAck: a scale-down the autoscaler
// decided for a Horovod job is the controller's to apply: the hosts file
// drops the marked trainer and the master is nudged; the replicas stay
// while the master pod does not carry the new file's version — however
// long the settle — and go down, with the decision's annotation, once it
// does and v1.HostsSettle passed.
func TestPendingScaleDownWaitsForTheMastersAck(t *testing.T) {
	f, job := pendingScaleDown(t, 0)
	one := horovod.Version("10.0.0.1:2\n")
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{nudge("m", one)}, nudges(f))
	assert.Empty(t, trainerPatches(f), "not before the master has the file")

	f.feedBack()
	time.Sleep(v1.HostsSettle)
	f.reset()
	require.NoError(t, f.sync("mnist"))
	assert.Empty(t, trainerPatches(f), "the settle passed, but the master pod does not carry the version: no ack")

	f.addPods(toldMaster(job, one))
	time.Sleep(v1.HostsSettle)
	f.reset()
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{`[{"op":"replace","path":"/spec/replicas","value":1},{"op":"remove","path":"/metadata/annotations/edl.paddlepaddle.org~1scale-down-to","value":null}]`},
		trainerPatches(f), "acked and settled: lowered to the count decided")
	assert.Equal(t, []string{"Normal Scaled Scaled ReplicaSet mnist-trainer from 2 to 1: the autoscaler's scale-down, once the hosts file left out the trainers it removes"}, f.events(), "no warning")
}

// TestPendingScaleDownGoesAheadAfterTheTimeout: a master that never acks
// (a nudge that keeps failing) holds a scale-down v1.HostsDropTimeout after
// the decision at most; then it goes ahead with a Warning event.
func TestPendingScaleDownGoesAheadAfterTheTimeout(t *testing.T) {
	f, _ := pendingScaleDown(t, v1.HostsDropTimeout+time.Second)
	f.kube.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchAction).GetName() == "m" {
			return true, nil, errors.New("the master's node is gone")
		}
		return false, nil, nil
	})
	_ = f.sync("mnist")
	assert.Equal(t, []string{`[{"op":"replace","path":"/spec/replicas","value":1},{"op":"remove","path":"/metadata/annotations/edl.paddlepaddle.org~1scale-down-to","value":null}]`}, trainerPatches(f))
	events := strings.Join(f.events(), "\n")
	assert.Contains(t, events, "Warning "+v1.EventHostsNotUpdated)
}

// TestAMarkOnATrainerToBeDeletedIsNotStale: the autoscaler's mark on a
// trainer whose scale-down is pending stands however old: it is still to
// be deleted.
func TestAMarkOnATrainerToBeDeletedIsNotStale(t *testing.T) {
	f, _ := pendingScaleDown(t, 0)
	f.addPods(hostPod("t-b", "10.0.0.2", time.Minute, builders.Ready(), markedAt(time.Now().Add(-2*MarkTTL))))
	require.NoError(t, f.sync("mnist"))
	for _, p := range nudges(f) {
		assert.NotContains(t, p, "t-b ", "the mark of t-b stands")
	}
}
