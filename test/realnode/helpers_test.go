package realnode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/paddlepaddle/edl/test/framework"
)

// waitTimeout bounds each wait for a real pod: an image is preloaded, so a
// pod starts in seconds; the bound only keeps a broken node from hanging.
const waitTimeout = 3 * time.Minute

// namespace creates a namespace for t and waits for its default
// ServiceAccount, which a real node's pods are admitted with. It first
// waits until the namespaces earlier tests deleted are gone, with their
// pods: a test that counts the node's room must not share it with the
// trainers of the test before it, still in their grace period.
func namespace(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, n := range list.Items {
			if n.Status.Phase == corev1.NamespaceTerminating {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "the namespaces of earlier tests gone")
	ns := cp.NewNamespace(t)
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "the default ServiceAccount of %s", ns)
	return ns
}

// shellPod is a pod on the real node running script with sh -c.
func shellPod(name, image, script string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{framework.RealNodeLabel: "true"},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", script},
			}},
		},
	}
}

// waitPod waits until done says the pod is where the test wants it and
// returns it.
func waitPod(t *testing.T, cp *framework.ControlPlane, ns, name string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return done(p), nil
	})
	require.NoError(t, err, "pod %s/%s: %s", ns, name, podState(last))
	return last
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && ready(p) }

func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is a pod's phase and its containers' states, for a failure message.
func podState(p *corev1.Pod) string {
	if p == nil {
		return "not found"
	}
	s := fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.ContainerStatuses {
		s += fmt.Sprintf("; %s: %+v (restarts %d)", c.Name, c.State, c.RestartCount)
	}
	return s
}

// logs is kubectl logs: through the API server to the node's kubelet.
func logs(t *testing.T, cp *framework.ControlPlane, ns, pod string, args ...string) string {
	t.Helper()
	out, err := cp.Kubectl(t.Context(), append([]string{"-n", ns, "logs", pod}, args...)...)
	require.NoError(t, err)
	return out
}
