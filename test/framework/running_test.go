package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/paddlepaddle/edl/test/kwok"
)

// TestControlPlane checks a running control plane: the versions the build
// stamps, pods of a ReplicaSet running on kwok nodes, kwok's exit stage, and
// an informer that outlives StopAPIServer and StartAPIServer. The subtests
// share one control plane and run in order; the restart comes last.
func TestControlPlane(t *testing.T) {
	nodes := NodeSpec{Name: "node", CPU: "8", Memory: "32Gi", GPU: 4, Count: 3}
	// With a kwok configuration of its own, as make scale starts it.
	plane := StartForTest(t, Options{Nodes: []NodeSpec{nodes}, KwokPodParallelism: 8})
	t.Run("versions", func(t *testing.T) { testVersions(t, plane, nodes) })
	t.Run("PIDs", func(t *testing.T) { testPIDs(t, plane) })
	t.Run("ReplicaSet pods run on kwok nodes", func(t *testing.T) { testReplicaSetPodsRunOnKwokNodes(t, plane) })
	t.Run("kwok exit stage", func(t *testing.T) { testKwokExitStage(t, plane) })
	t.Run("informer recovers after an API server restart", func(t *testing.T) { testInformerRecoversAfterAPIServerRestart(t, plane) })
}

// waitTimeout bounds every wait for the control plane to converge.
const waitTimeout = 90 * time.Second

// testContext returns a context that ends with the test or after waitTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func testVersions(t *testing.T, plane *ControlPlane, nodes NodeSpec) {
	ctx := testContext(t)

	info, err := plane.Client.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.36.3", info.GitVersion, "kube-apiserver version; are the -ldflags of hack/build-control-plane.sh applied?")

	out, err := plane.Kubectl(ctx, "get", "nodes", "-o", "name")
	require.NoError(t, err)
	for i := range nodes.Count {
		assert.Contains(t, out, fmt.Sprintf("node/%s-%d", nodes.Name, i))
	}
}

func testPIDs(t *testing.T, plane *ControlPlane) {
	pids := plane.PIDs()
	assert.Len(t, pids, 5)
	for _, name := range []string{Etcd, APIServer, ControllerManager, Scheduler, Kwok} {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pids[name]))
		if assert.NoError(t, err, name) {
			// The kernel keeps 15 bytes of a command's name.
			assert.Equal(t, name[:min(len(name), 15)], strings.TrimSpace(string(comm)))
		}
	}
}

func testReplicaSetPodsRunOnKwokNodes(t *testing.T, plane *ControlPlane) {
	ctx := testContext(t)
	ns := plane.NewNamespace(t)

	rs := newReplicaSet("trainer", 4)
	_, err := plane.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)

	pods := waitForPods(ctx, t, plane, ns, "app=trainer", "4 Running pods", func(pods []corev1.Pod) bool {
		return len(pods) == 4 && all(pods, podRunning)
	})
	for _, pod := range pods {
		node, err := plane.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err, "pod %s is bound to node %q", pod.Name, pod.Spec.NodeName)
		assert.Equal(t, kwok.NodeAnnotationValue, node.Annotations[kwok.NodeAnnotation], "node %s is not a kwok node", node.Name)
		assert.NotEmpty(t, pod.Status.PodIP, "kwok gives running pods an IP")
		require.Len(t, pod.Status.ContainerStatuses, 1)
		assert.NotNil(t, pod.Status.ContainerStatuses[0].State.Running)
	}
}

// testInformerRecoversAfterAPIServerRestart stops the API server that the
// other subtests share; it must run last.
func testInformerRecoversAfterAPIServerRestart(t *testing.T, plane *ControlPlane) {
	ctx := testContext(t)
	ns := plane.NewNamespace(t)

	factory := informers.NewSharedInformerFactoryWithOptions(plane.Client, 0, informers.WithNamespace(ns))
	configMaps := factory.Core().V1().ConfigMaps()
	lister := configMaps.Lister().ConfigMaps(ns)
	informer := configMaps.Informer()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced), "informer never synced")

	create := func(name string) {
		t.Helper()
		_, err := plane.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	waitListed := func(name string) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			_, err := lister.Get(name)
			return err == nil, nil
		})
		require.NoError(t, err, "the informer never saw configmap %s/%s", ns, name)
	}

	create("before")
	waitListed("before")

	require.NoError(t, plane.StopAPIServer())
	_, err := plane.Client.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{})
	require.Error(t, err, "the API server should be down")
	require.NoError(t, plane.StartAPIServer(ctx))

	create("after")
	waitListed("after")
	_, err = lister.Get("before")
	assert.NoError(t, err, "the informer lost an object created before the restart")
}

func testKwokExitStage(t *testing.T, plane *ControlPlane) {
	tests := []struct {
		name          string
		restartPolicy corev1.RestartPolicy
		exitCode      int32
		// annotateLater adds the annotation to the pod once it is Running,
		// as a test does to end a trainer it started.
		annotateLater bool
		wantPhase     corev1.PodPhase
	}{
		{name: "always-fails", restartPolicy: corev1.RestartPolicyAlways, exitCode: 3, wantPhase: corev1.PodRunning},
		{name: "always-succeeds-later", restartPolicy: corev1.RestartPolicyAlways, exitCode: 0, annotateLater: true, wantPhase: corev1.PodRunning},
		{name: "never-succeeds", restartPolicy: corev1.RestartPolicyNever, exitCode: 0, wantPhase: corev1.PodSucceeded},
		{name: "never-fails-later", restartPolicy: corev1.RestartPolicyNever, exitCode: 1, annotateLater: true, wantPhase: corev1.PodFailed},
		{name: "onfailure-fails", restartPolicy: corev1.RestartPolicyOnFailure, exitCode: 2, wantPhase: corev1.PodRunning},
	}
	ns := plane.NewNamespace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			code := fmt.Sprint(tt.exitCode)
			pod := newPod(tt.name)
			pod.Spec.RestartPolicy = tt.restartPolicy
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
			if !tt.annotateLater {
				pod.Annotations = map[string]string{kwok.ExitCodeAnnotation: code}
			}
			_, err := plane.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			require.NoError(t, err)

			if tt.annotateLater {
				waitForPods(ctx, t, plane, ns, "app="+tt.name, "the pod Running", func(pods []corev1.Pod) bool {
					return len(pods) == 1 && podRunning(pods[0])
				})
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kwok.ExitCodeAnnotation, code)
				_, err := plane.Client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				require.NoError(t, err)
			}

			pods := waitForPods(ctx, t, plane, ns, "app="+tt.name, "every container terminated", func(pods []corev1.Pod) bool {
				return len(pods) == 1 && len(pods[0].Status.ContainerStatuses) == 2 &&
					all(pods[0].Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.State.Terminated != nil })
			})
			got := pods[0]
			for _, s := range got.Status.ContainerStatuses {
				assert.Equal(t, tt.exitCode, s.State.Terminated.ExitCode, "container %s", s.Name)
				assert.False(t, s.Ready, "container %s", s.Name)
			}
			assert.Equal(t, tt.wantPhase, got.Status.Phase)
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.PodReady {
					assert.Equal(t, corev1.ConditionFalse, c.Status, "pod Ready condition")
				}
			}
		})
	}
}

// newPod builds a pod with one container that requests 100m CPU and 64Mi of memory.
func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "paddlepaddle/edl-fake:latest",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
}

func newReplicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	pod := newPod(name)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
		},
	}
}

// waitForPods polls the pods matching selector until done accepts them and
// returns them; on timeout it fails the test, describing what it waited for
// and what it last saw.
func waitForPods(ctx context.Context, t *testing.T, plane *ControlPlane, ns, selector, what string, done func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	sel, err := labels.Parse(selector)
	require.NoError(t, err)
	var last []corev1.Pod
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := plane.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, nil // the API server may be restarting
		}
		last = list.Items
		return done(last), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s (%s in %s): %v; last seen:\n%s", what, selector, ns, err, describePods(last))
	}
	return last
}

func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "  no pods"
	}
	var b strings.Builder
	for _, pod := range pods {
		fmt.Fprintf(&b, "  %s node=%q phase=%s deleting=%t", pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.DeletionTimestamp != nil)
		for _, c := range pod.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		for _, s := range pod.Status.ContainerStatuses {
			fmt.Fprintf(&b, " %s=%+v", s.Name, s.State)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func podRunning(pod corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil &&
		all(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Ready })
}

func all[T any](items []T, ok func(T) bool) bool {
	for _, item := range items {
		if !ok(item) {
			return false
		}
	}
	return true
}
