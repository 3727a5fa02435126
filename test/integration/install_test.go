package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// overlayOf writes a kustomization that puts base into namespace ns, as an
// operator's overlay would, and returns its directory.
func overlayOf(t *testing.T, base, ns string) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, base)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"),
		[]byte("namespace: "+ns+"\nresources:\n  - "+filepath.ToSlash(rel)+"\n"), 0o600))
	return dir
}

// TestInstallInAnotherNamespace installs EDL with an overlay that moves it
// to ml-system and runs the controller as the Deployment would (its
// ConfigMap, its ServiceAccount, POD_NAMESPACE): it leads with the Lease in
// ml-system, kubectl edl explain finds it there without being told, a user
// bound only to edit in a namespace submits a TrainingJob that the
// controller runs, and gets its reasons from kubectl edl explain and queue;
// applying the next release over it (an upgrade) changes
// the image and keeps the job's objects; and deleting the controller's
// component leaves the CRD, the job and its ReplicaSets in place.
func TestInstallInAnotherNamespace(t *testing.T) {
	plane := framework.StartForTest(t, framework.Options{Nodes: []framework.NodeSpec{{Name: "a", CPU: "8", Memory: "32Gi"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	const ns = "ml-system"

	_, err = plane.Kubectl(ctx, "apply", "--server-side", "-k", overlayOf(t, root, ns))
	require.NoError(t, err)
	_, err = plane.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/trainingjobs.paddlepaddle.org")
	require.NoError(t, err)
	// The controller runs below as a process; the Deployment's (fake) pods
	// are scaled away.
	_, err = plane.Kubectl(ctx, "-n", ns, "scale", "deployment/training-job-controller", "--replicas=0")
	require.NoError(t, err)
	cm, err := plane.Client.CoreV1().ConfigMaps(ns).Get(ctx, "edl-config", metav1.GetOptions{})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cm.Data["config.yaml"]), 0o600))
	edl := &edlProc{t: t, EDL: framework.StartEDLForTest(t, framework.EDLOptions{
		Args: []string{"-config", path, "-http_addr", "127.0.0.1:0",
			"-kubeconfig", impersonatingKubeconfigOf(t, plane.Kubeconfig, "system:serviceaccount:"+ns+":edl-controller")},
		Env: []string{"POD_NAMESPACE=" + ns},
	})}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edl logged:\n%s", edl.Log())
		}
	})
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return leaseHolder(ctx, plane, ns) != "", nil
	})
	require.NoError(t, err, "a leader with the Lease in %s", ns)
	assert.Empty(t, leaseHolder(ctx, plane, "paddlecloud"))

	// kubectl edl explain finds the controller's Lease in ml-system.
	var report explainReport
	err = wait.PollUntilContextTimeout(ctx, time.Second, waitTimeout, true, func(ctx context.Context) (bool, error) {
		out, errOut, err := kubectlEDL(ctx, t, plane, "explain", "-A", "-o", "json")
		return err == nil && errOut == "" && json.Unmarshal([]byte(out), &report) == nil, nil
	})
	require.NoError(t, err, "explain without a warning")
	assert.Contains(t, report.Source, "the Lease "+ns+"/edl-controller")

	// A namespace editor submits a TrainingJob: edit aggregates the rights.
	_, err = plane.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = plane.Client.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createPriorityClasses(ctx, t, plane)
	aliceConfig := rest.CopyConfig(plane.Config)
	aliceConfig.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice, err := tjclient.NewForConfig(aliceConfig)
	require.NoError(t, err)
	// The aggregation controller fills edit in a moment.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := alice.PaddlepaddleV1().TrainingJobs("team").Create(ctx, elasticJob("team", "mnist"), metav1.CreateOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "alice, an editor of team, creates a TrainingJob")
	_, err = alice.PaddlepaddleV1().TrainingJobs("other").List(ctx, metav1.ListOptions{})
	assert.Error(t, err, "and nothing outside her namespace")
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := plane.Client.AppsV1().ReplicaSets("team").Get(ctx, "mnist-trainer", metav1.GetOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "the controller runs her job")

	// She asks why her job has the trainers it has, and where the queue
	// stands: she may not read the cluster, so explain gives what the
	// controller wrote in the job's status, and says so.
	aliceKubeconfig := impersonatingKubeconfigOf(t, plane.Kubeconfig, "alice")
	var out, errOut string
	err = wait.PollUntilContextTimeout(ctx, time.Second, waitTimeout, true, func(ctx context.Context) (bool, error) {
		out, errOut, err = kubectlEDLWith(ctx, t, plane, aliceKubeconfig, "explain", "-n", "team", "mnist")
		return err == nil && strings.Contains(out, "team/mnist (Running)") && strings.Contains(out, "limited by"), nil
	})
	require.NoError(t, err, "explain for an editor: %s %s", out, errOut)
	job, err := alice.PaddlepaddleV1().TrainingJobs("team").Get(ctx, "mnist", metav1.GetOptions{})
	require.NoError(t, err)
	scaling := meta.FindStatusCondition(job.Status.Conditions, v1.ConditionScaling)
	require.NotNil(t, scaling)
	assert.Contains(t, out, "limited by   "+scaling.Reason+": ", "the controller's own reason")
	assert.Contains(t, out, "planning live needs the right to list nodes in every namespace")
	out, errOut, err = kubectlEDLWith(ctx, t, plane, aliceKubeconfig, "queue", "-n", "team")
	require.NoError(t, err, "queue for an editor: %s", errOut)
	t.Logf("kubectl edl queue -n team, as alice:\n%s", out)

	// An upgrade applies the next release over it: the Deployment takes the
	// new image; the job and its ReplicaSets are the same objects.
	rs, err := plane.Client.AppsV1().ReplicaSets("team").Get(ctx, "mnist-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	next := overlayOf(t, root, ns)
	require.NoError(t, os.WriteFile(filepath.Join(next, "kustomization.yaml"), append(mustRead(t, filepath.Join(next, "kustomization.yaml")),
		[]byte("images:\n  - name: paddlepaddle/edl-controller\n    newTag: v99.0.0\n")...), 0o600))
	_, err = plane.Kubectl(ctx, "apply", "--server-side", "-k", next)
	require.NoError(t, err)
	d, err := plane.Client.AppsV1().Deployments(ns).Get(ctx, "training-job-controller", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "paddlepaddle/edl-controller:v99.0.0", d.Spec.Template.Spec.Containers[0].Image)
	after, err := plane.Client.AppsV1().ReplicaSets("team").Get(ctx, "mnist-trainer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rs.UID, after.UID, "the job's objects stay through an upgrade")

	// Removing the controller keeps the API, the job and its objects.
	require.NoError(t, edl.stop())
	_, err = plane.Kubectl(ctx, "delete", "--wait=false", "-k", overlayOf(t, filepath.Join(root, "config", "controller"), ns))
	require.NoError(t, err)
	_, err = plane.Client.RbacV1().ClusterRoles().Get(ctx, "edl-controller", metav1.GetOptions{})
	require.Error(t, err, "the controller's objects are gone")
	time.Sleep(5 * time.Second) // room for a garbage collector that would delete
	_, err = plane.Kubectl(ctx, "get", "crd", "trainingjobs.paddlepaddle.org")
	assert.NoError(t, err, "the CRD stays")
	_, err = mustJobClient(t, plane).PaddlepaddleV1().TrainingJobs("team").Get(ctx, "mnist", metav1.GetOptions{})
	assert.NoError(t, err, "the job stays")
	_, err = plane.Client.AppsV1().ReplicaSets("team").Get(ctx, "mnist-trainer", metav1.GetOptions{})
	assert.NoError(t, err, "its ReplicaSets stay")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}
