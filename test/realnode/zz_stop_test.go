package realnode

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlepaddle/edl/test/framework"
)

// TestZStopLeavesNothing runs last (go test runs a package's tests in the
// order of its files): with a pod still running, it stops the package's
// control plane and checks that the real node left nothing on the machine
// — no process, no mount, no interface, no iptables rule, no pod cgroup —
// as hack/cluster.sh down must leave it.
func TestZStopLeavesNothing(t *testing.T) {
	cp := plane(t)
	pod := shellPod("left-running", exampleImage(t), "trap '' TERM; exec sleep 3600", nil)
	_, err := cp.Client.CoreV1().Pods(metav1.NamespaceDefault).Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPod(t, cp, metav1.NamespaceDefault, pod.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	require.NotEmpty(t, framework.RealNodeProcesses(), "the node's processes run before the stop")
	require.NotEmpty(t, framework.RealNodeMounts(), "the pod's mounts exist before the stop")
	require.NotEmpty(t, framework.RealNodeLinks(), "the node's interfaces exist before the stop")
	require.NotEmpty(t, framework.RealNodeRules(), "kube-proxy's rules exist before the stop")

	stopped = true
	require.NoError(t, cp.Stop())
	assert.Empty(t, framework.RealNodeProcesses(), "processes left")
	assert.Empty(t, framework.RealNodeMounts(), "mounts left")
	assert.Empty(t, framework.RealNodeLinks(), "interfaces left")
	assert.Empty(t, framework.RealNodeRules(), "iptables rules left")
}
