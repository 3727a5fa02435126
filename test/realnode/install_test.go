package realnode

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/paddlepaddle/edl/test/framework"
)

const (
	edlNamespace = "paddlecloud"
	edlLease     = "edl-controller"
	edlApp       = "training-job-controller"
)

// install applies the README's install, kubectl apply --server-side -k ., once for the
// package, and waits until every replica of edl's Deployment is Running and
// Ready and one of them holds the Lease. It returns the leader's pod.
func install(t *testing.T, cp *framework.ControlPlane) *corev1.Pod {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	ctx := t.Context()
	_, err = cp.Kubectl(ctx, "apply", "--server-side", "-k", root)
	require.NoError(t, err)
	_, err = cp.Kubectl(ctx, "-n", edlNamespace, "rollout", "status", "deployment/"+edlApp, "--timeout=3m")
	require.NoError(t, err, "edl's Deployment: %s", edlPods(t, cp))
	return leader(t, cp, time.Time{})
}

// edlPods describes edl's pods, for a failure message.
func edlPods(t *testing.T, cp *framework.ControlPlane) string {
	pods, err := cp.Client.CoreV1().Pods(edlNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + edlApp})
	if err != nil {
		return err.Error()
	}
	var s []string
	for i := range pods.Items {
		s = append(s, pods.Items[i].Name+": "+podState(&pods.Items[i]))
	}
	return strings.Join(s, "\n")
}

// leader waits for the Lease to be held, renewed after since, by a Running
// and Ready edl pod on the real node, and returns that pod.
func leader(t *testing.T, cp *framework.ControlPlane, since time.Time) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	var holder string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := cp.Client.CoordinationV1().Leases(edlNamespace).Get(ctx, edlLease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(since) {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		pods, err := cp.Client.CoreV1().Pods(edlNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + edlApp})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			// edl's identity is its hostname, the pod's name, and a suffix.
			if strings.HasPrefix(holder, p.Name) && running(p) && p.Spec.NodeName == framework.RealNodeName {
				found = p
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the Lease %s/%s held by a Running, Ready edl pod on %s (holder %q):\n%s", edlNamespace, edlLease, framework.RealNodeName, holder, edlPods(t, cp))
	return found
}

// TestEDLRunsAsItsDeploymentsPod installs EDL as the README says and checks
// it as a pod: Running and Ready on the real node (its probes pass), the
// Lease held by that pod (its ServiceAccount token, in-cluster config and
// RBAC work), /metrics served to a ServiceAccount token that may read it and
// refused without one, and, after its process is killed (not its pod), the
// container restarted and a replica leading again.
func TestEDLRunsAsItsDeploymentsPod(t *testing.T) {
	cp := plane(t)
	lead := install(t, cp)
	ctx := t.Context()

	token := metricsToken(t, cp)
	url := fmt.Sprintf("https://%s:8080/metrics", lead.Status.PodIP)
	code, body := get(t, url, token)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "edl_", "edl's own metrics")
	code, _ = get(t, url, "")
	assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, "/metrics without a token")

	// Kill the leader's process from the node, as an OOM kill or a crash
	// would: kubelet restarts the container, and leadership returns.
	before := lead.Status.ContainerStatuses[0].RestartCount
	pid := containerPID(t, lead)
	killedAt := time.Now()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	restarted := waitPod(t, cp, edlNamespace, lead.Name, func(p *corev1.Pod) bool {
		return running(p) && p.Status.ContainerStatuses[0].RestartCount > before
	})
	assert.Equal(t, before+1, restarted.Status.ContainerStatuses[0].RestartCount)
	assert.NotNil(t, restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated, "the killed run is the container's last state")
	again := leader(t, cp, killedAt)
	t.Logf("leader %s killed at %s; %s leads again", lead.Name, killedAt.Format(time.RFC3339), again.Name)
	_, err := cp.Client.CoreV1().Pods(edlNamespace).Get(ctx, lead.Name, metav1.GetOptions{})
	require.NoError(t, err, "the pod itself is kept: only its process died")
}

// metricsToken is a token of a ServiceAccount bound to edl-metrics-reader,
// as a Prometheus in the cluster would hold.
func metricsToken(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	ctx := t.Context()
	_, err := cp.Client.CoreV1().ServiceAccounts(edlNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "edl-metrics-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edl-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: edlNamespace}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr, err := cp.Client.CoreV1().ServiceAccounts(edlNamespace).CreateToken(ctx, "scraper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// get fetches url from edl's self-signed HTTPS server, with a bearer token
// unless it is empty.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	code, body, err := framework.GetSelfSigned(t.Context(), url, token)
	require.NoError(t, err)
	return code, body
}

// containerPID finds the host PID of the pod's first container's main
// process: the lowest PID in the container's cgroup, the first started.
func containerPID(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	require.NotEmpty(t, p.Status.ContainerStatuses)
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	require.NotEmpty(t, id)
	pids := processesWith(func(pid int) bool {
		cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
		return err == nil && strings.Contains(string(cg), id)
	})
	require.NotEmpty(t, pids, "no process in container %s", id)
	return pids[0]
}

// processesWith lists the PIDs for which match holds, lowest first.
func processesWith(match func(pid int) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && match(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// selectorOf is a label selector's string form.
func selectorOf(m map[string]string) string { return labels.SelectorFromSet(m).String() }
