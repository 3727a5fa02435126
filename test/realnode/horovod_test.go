package realnode

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// horovodrunStub stands in for horovodrun in the master pod: it runs the
// host-discovery script ten times a second, as horovodrun's driver runs it
// every second or so, and writes each new list it prints, with the time.
const horovodrunStub = `#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    --host-discovery-script) script=$2; shift 2 ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
trap 'exit 0' TERM
last=unset
while true; do
  hosts=$(sh "$script" | tr '\n' ' ')
  if [ "$hosts" != "$last" ]; then
    echo "$(date +%s.%N) hosts: $hosts" >> /edl-events/launcher
    last=$hosts
  fi
  sleep 0.1
done
`

// horovodWorker stands in for a Horovod worker (an sshd the launcher
// reaches): it writes its address when it starts, and when it gets SIGTERM.
const horovodWorker = `import os, signal, sys, time
log = open("/edl-events/" + os.environ["POD_NAME"], "a", buffering=1)
def event(what):
    log.write("%.6f %s\n" % (time.time(), what))
event("started at " + os.environ["POD_IP"])
def stop(*_):
    event("got SIGTERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    time.sleep(3600)
`

// TestHorovodHostsFileDropsATrainerBeforeItsPodGoes runs a Horovod job with
// a host-discovery file on the real node, its launcher a stand-in for
// horovodrun that reads the file ten times a second. EDL grows the job to
// its maximum; then it scales the job down twice — the controller when the
// job's max-instance is lowered, the autoscaler when a pod beside the
// trainers takes the node past max_load_desired — and each time the file in the
// master pod drops every removed trainer before the trainer gets SIGTERM
// (et-operator's order), and the trainers left are listed.
func TestHorovodHostsFileDropsATrainerBeforeItsPodGoes(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	job, events := horovodJob(t, ns, horovodrunStub)
	job.Spec.ElasticPolicy = &v1.ElasticPolicy{HostDiscovery: &v1.HostDiscovery{SlotsPerHost: ptr.To(int32(1))}}
	job.Spec.Trainer.MaxInstance = 3
	job.Spec.Trainer.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	launcher := filepath.Join(events, "launcher")
	named := watchHostsPods(t, cp, ns)

	// EDL grows the job to three trainers, and the launcher lists them.
	trainers := waitTrainers(t, cp, ns, 3)
	waitHosts(t, launcher, addresses(trainers))

	// 1. The controller's scale-down: max-instance lowered to 2.
	deleted, _ := watchDeletions(t, cp, ns)
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, "real", types.MergePatchType,
		[]byte(`{"spec":{"trainer":{"max-instance":2}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	kept := waitTrainers(t, cp, ns, 2)
	assertLeftTheFileFirst(t, events, trainers, deleted(), named(), 1)
	waitHosts(t, launcher, addresses(kept))

	// 2. The autoscaler's: a pod beside the trainers takes the node's
	// requests above max_load_desired; EDL's load rule takes a trainer.
	deleted, _ = watchDeletions(t, cp, ns)
	fillNode(t, cp, ns)
	left := waitFewerTrainers(t, cp, ns, 2)
	assertLeftTheFileFirst(t, events, kept, deleted(), named(), 2-len(left))
	waitHosts(t, launcher, addresses(left))
}

// fillNode runs a pod of the trainers' priority asking for all but 20m of
// the CPU the node has free beside them: kube-scheduler binds it there,
// the node's requests pass max_load_desired, and EDL's load rule takes a
// trainer back, as when an online service grows beside a job.
func fillNode(t *testing.T, cp *framework.ControlPlane, ns string) {
	t.Helper()
	ctx := t.Context()
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, framework.RealNodeName, metav1.GetOptions{})
	require.NoError(t, err)
	pods, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + framework.RealNodeName})
	require.NoError(t, err)
	alloc := node.Status.Allocatable.Cpu().MilliValue()
	free := alloc
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			free -= c.Resources.Requests.Cpu().MilliValue()
		}
	}
	pod := shellPod("service", exampleImage(t), "exec sleep 3600", nil)
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(free-20, resource.DecimalSI)}
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPod(t, cp, ns, "service", running)
	t.Logf("a pod asks for %dm CPU of the node's %dm, %dm free beside the trainers", free-20, alloc, free)
}

// waitFewerTrainers waits until the job runs fewer than n trainers, and no
// trainer is being deleted, and returns them.
func waitFewerTrainers(t *testing.T, cp *framework.ControlPlane, ns string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		all, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selectorOf(map[string]string{v1.LabelTrainer: "real"})})
		if err != nil || len(all.Items) >= n {
			return false, nil
		}
		for i := range all.Items {
			if !running(&all.Items[i]) {
				return false, nil
			}
		}
		pods = all.Items
		return true, nil
	})
	require.NoError(t, err, "fewer than %d trainers", n)
	return pods
}

// addresses are the pods' host-file entries, sorted.
func addresses(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Status.PodIP+":1")
	}
	slices.Sort(out)
	return out
}

// waitHosts waits until the launcher's last list is want.
func waitHosts(t *testing.T, launcher string, want []string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(launcher) // #nosec G304 -- the test's own file
		if err != nil {
			return false, nil
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		last = lines[len(lines)-1]
		_, list, _ := strings.Cut(last, "hosts: ")
		got := strings.Fields(list)
		slices.Sort(got)
		return slices.Equal(got, want), nil
	})
	require.NoError(t, err, "the launcher lists %v; its last list: %q", want, last)
}

// hostsPods is what the host-discovery ConfigMap named when (its
// v1.AnnotationHostsPods), as the test saw it change.
type hostsPods struct {
	at    time.Time
	names string
}

// watchHostsPods records, from now on, each change of the job real's
// host-discovery ConfigMap's list of pods.
func watchHostsPods(t *testing.T, cp *framework.ControlPlane, ns string) func() []hostsPods {
	t.Helper()
	w, err := cp.Client.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + v1.HostsConfigMapName("real")})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var seen []hostsPods
	go func() {
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				mu.Lock()
				seen = append(seen, hostsPods{at: time.Now(), names: cm.Annotations[v1.AnnotationHostsPods]})
				mu.Unlock()
			}
		}
	}()
	return func() []hostsPods {
		mu.Lock()
		defer mu.Unlock()
		return append([]hostsPods(nil), seen...)
	}
}

// assertLeftTheFileFirst checks that n of the trainers were removed, and
// that the launcher's file dropped each before it got SIGTERM. It logs how
// long after the ConfigMap the file in the master pod changed: the
// kubelet's projection, nudged by the controller.
func assertLeftTheFileFirst(t *testing.T, events string, trainers []corev1.Pod, gone map[string]time.Time, named []hostsPods, n int) {
	t.Helper()
	require.Len(t, gone, n, "trainers removed: %v", gone)
	data, err := os.ReadFile(filepath.Join(events, "launcher")) // #nosec G304 -- the test's own file
	require.NoError(t, err)
	lists := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, p := range trainers {
		if _, ok := gone[p.Name]; !ok {
			continue
		}
		term := eventTime(t, waitEvent(t, filepath.Join(events, p.Name), "got SIGTERM"), "got SIGTERM")
		// The first list after the last one naming it.
		var dropped time.Time
		for _, l := range lists {
			m := eventLine.FindStringSubmatch(l)
			require.NotNil(t, m, "launcher line %q", l)
			at := eventTime(t, []string{l}, "hosts:")
			if strings.Contains(l, p.Status.PodIP+":") {
				dropped = time.Time{}
			} else if dropped.IsZero() && at.After(p.CreationTimestamp.Time) {
				dropped = at
			}
		}
		require.False(t, dropped.IsZero(), "the file never dropped %s (%s):\n%s", p.Name, p.Status.PodIP, data)
		assert.True(t, dropped.Before(term), "%s left the file at %s, after its SIGTERM at %s", p.Name, dropped.Format(time.StampMicro), term.Format(time.StampMicro))
		var unnamed time.Time // when the ConfigMap last stopped naming it
		for i, h := range named {
			if !slices.Contains(strings.Split(h.names, ","), p.Name) && (i == 0 || slices.Contains(strings.Split(named[i-1].names, ","), p.Name)) {
				unnamed = h.at
			}
		}
		require.False(t, unnamed.IsZero(), "the ConfigMap never dropped %s: %v", p.Name, named)
		t.Logf("%s left the file %v after the ConfigMap, %v before its SIGTERM", p.Name,
			dropped.Sub(unnamed).Round(time.Millisecond), term.Sub(dropped).Round(time.Millisecond))
	}
}
