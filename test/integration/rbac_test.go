package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// controllerUser is the ServiceAccount of edl_controller.yaml.
const controllerUser = "system:serviceaccount:paddlecloud:edl-controller"

// impersonatingKubeconfig writes a copy of the admin kubeconfig that acts as
// user, with that user's permissions only.
func impersonatingKubeconfig(t *testing.T, user string) string {
	t.Helper()
	return impersonatingKubeconfigOf(t, cp.Kubeconfig, user)
}

// impersonatingKubeconfigOf is impersonatingKubeconfig for the admin
// kubeconfig of another control plane.
func impersonatingKubeconfigOf(t *testing.T, kubeconfig, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// forbiddenLog and forbiddenRequests are the signs of a refused request: the REST client's 403 count
// and the words client-go and edl log for one.
var forbiddenLog = regexp.MustCompile(`(?i)forbidden|cannot (list|watch|get|create|update|patch)`)

func forbiddenRequests(p *edlProc) float64 {
	p.t.Helper()
	_, body := p.get("/metrics")
	total := 0.0
	for _, m := range regexp.MustCompile(`(?m)^edl_rest_client_requests_total\{code="403",method="[A-Z]+"\} (\S+)$`).FindAllStringSubmatch(body, -1) {
		var v float64
		_, err := fmt.Sscan(m[1], &v)
		require.NoError(p.t, err)
		total += v
	}
	return total
}

// TestControllerNeedsNoMoreThanItsServiceAccount runs the edl binary as the
// ServiceAccount of edl_controller.yaml, with the RBAC of that file and
// nothing else, through a job's whole life: created, Running, grown by the
// autoscaler, its trainers given deletion costs, a drifted Service put back,
// deleted; a failed job's pods kept and the job deleted after its TTL; then
// a clean shutdown
// that releases the lease in paddlecloud. No request may be refused.
func TestControllerNeedsNoMoreThanItsServiceAccount(t *testing.T) {
	installCRD(t)
	installControllerIdentity(t)
	ns := cp.NewNamespace(t)
	ctx := testContext(t)
	edl := startEDLProc(t, "-kubeconfig", impersonatingKubeconfig(t, controllerUser),
		"-log_level", "debug", "-autoscale_interval", "1s")
	edl.waitFor("edl leads with the lease in paddlecloud", func() bool { return edl.metric("edl_leader") == 1 })
	edl.waitFor("every informer lists and watches", func() bool {
		code, _ := edl.get("/readyz")
		return code == 200
	})

	tj := jobClient(t).PaddlepaddleV1().TrainingJobs(ns)
	job, err := tj.Create(ctx, exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, job.Name, "Running", phaseIs(v1.PhaseRunning))
	grown := waitForJob(t, ns, job.Name, "scaled by the autoscaler", func(j *v1.TrainingJob) bool {
		return j.Status.LastScale != nil && j.Status.LastScale.To > j.Spec.Trainer.MinInstance
	})
	t.Logf("the autoscaler scaled trainers from %d to %d", grown.Status.LastScale.From, grown.Status.LastScale.To)

	// The leader's metrics show the job, the cluster, the decision and the
	// work queue.
	jobSeries := `edl_job_trainers{state="desired",trainingjob="` + job.Name + `",trainingjob_namespace="` + ns + `"}`
	edl.waitFor("the job's trainers are in the metrics", func() bool { return edl.metric(jobSeries) > float64(job.Spec.Trainer.MinInstance) })
	assert.GreaterOrEqual(t, edl.metric(`edl_autoscaler_scale_actions_total{direction="up",reason="idle"}`), 1.0)
	assert.Greater(t, edl.metric(`edl_cluster_allocatable{resource="cpu"}`), 0.0)
	assert.Greater(t, edl.metric(`edl_autoscaler_plan_duration_seconds_count`), 0.0)
	assert.Greater(t, edl.metric(`workqueue_adds_total{name="trainingjobs"}`), 0.0)

	// A deletion cost on one trainer puts costs on all running ones: the
	// controller patches pods.
	var first string
	for _, p := range podsOf(t, ns, v1.LabelTrainer, job.Name) {
		if p.Status.Phase == corev1.PodRunning {
			first = p.Name
			break
		}
	}
	require.NotEmpty(t, first, "a running trainer")
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"7"}}}`, v1.AnnotationDeletionCost)
	_, err = cp.Client.CoreV1().Pods(ns).Patch(ctx, first, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	edl.waitFor("every running trainer has a deletion cost", func() bool {
		pods := podsOf(t, ns, v1.LabelTrainer, job.Name)
		for _, p := range pods {
			if c, ok := p.Annotations[v1.AnnotationDeletionCost]; p.Status.Phase == corev1.PodRunning && (!ok || c == "7") {
				return false
			}
		}
		return len(pods) > 1
	})

	// A drifted Service is updated back.
	svcs := cp.Client.CoreV1().Services(ns)
	svcName := v1.ServiceName(job.Name, v1.RolePserver)
	_, err = svcs.Patch(ctx, svcName, types.MergePatchType, []byte(`{"spec":{"selector":{"drift":"yes"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	edl.waitFor("the Service's selector is put back", func() bool {
		svc, err := svcs.Get(ctx, svcName, metav1.GetOptions{})
		return err == nil && svc.Spec.Selector["drift"] == ""
	})

	// A plain job whose trainer fails keeps that pod: its ReplicaSet is
	// deleted, the pod patched, the other trainers deleted; then its
	// ttlSecondsAfterFinished deletes the job.
	failing := exampleJob(t, ns, plain)
	failing.Name = "failing"
	failing.Spec.RunPolicy = &v1.RunPolicy{TTLSecondsAfterFinished: ptr.To(int32(2))}
	_, err = tj.Create(ctx, failing, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, failing.Name, "Running", phaseIs(v1.PhaseRunning))
	trainers := podsOf(t, ns, v1.LabelTrainer, failing.Name)
	require.NotEmpty(t, trainers)
	annotateExit(t, ns, trainers[0].Name, 3)
	edl.waitFor("the failed job kept its failed trainer and was deleted after its TTL", func() bool {
		_, err := tj.Get(ctx, failing.Name, metav1.GetOptions{})
		kept, podErr := cp.Client.CoreV1().Pods(ns).Get(ctx, trainers[0].Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && (apierrors.IsNotFound(podErr) || podErr == nil && kept.Labels[v1.LabelKept] == failing.Name)
	})
	assert.Empty(t, podsOf(t, ns, v1.LabelTrainer, failing.Name), "the other trainers deleted")

	// The controller's events were recorded under its own name.
	events, err := cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	reasons := map[string]bool{}
	for _, e := range events.Items {
		if e.Source.Component == "edl-controller" {
			reasons[e.Reason] = true
		}
	}
	assert.True(t, reasons[v1.EventCreated] && reasons[v1.EventRunning] && reasons[v1.EventScaled],
		"Created, Running and Scaled events, got %v", reasons)

	require.NoError(t, tj.Delete(ctx, job.Name, metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		rs, err := cp.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(rs.Items) == 0, nil
	})
	require.NoError(t, err, "the garbage collector removes the deleted job's ReplicaSets")
	edl.waitFor("the deleted job's series are gone", func() bool {
		_, body := edl.get("/metrics")
		return !strings.Contains(body, `trainingjob="`+job.Name+`",trainingjob_namespace="`+ns+`"`)
	})

	assert.Zero(t, forbiddenRequests(edl), "requests refused with 403")
	require.NoError(t, edl.stop(), "SIGTERM exits 0")
	assert.Empty(t, leaseHolder(testContext(t), cp, leaderLeaseNamespace), "the lease is released on shutdown")
	assert.Empty(t, forbiddenLog.FindAllString(edl.Log(), -1), "edl logged a refused request")
}

// TestForbiddenRequestsAreSeen is the check of the check above: with one
// rule fewer than edl_controller.yaml grants, both signs of a refused
// request appear.
func TestForbiddenRequestsAreSeen(t *testing.T) {
	installCRD(t)
	installControllerIdentity(t)
	ctx := testContext(t)
	var role rbacv1.ClusterRole
	manifestObjectNamed(t, "ClusterRole", "edl-controller", &role)
	const name = "edl-controller-without-services"
	role.ObjectMeta = metav1.ObjectMeta{Name: name}
	var kept []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if len(r.Resources) != 1 || r.Resources[0] != "services" {
			kept = append(kept, r)
		}
	}
	require.Len(t, kept, len(role.Rules)-1, "the ClusterRole has a rule for services")
	role.Rules = kept
	sa := "system:serviceaccount:paddlecloud:" + name
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "paddlecloud", Name: name}}
	rbac := cp.Client.RbacV1()
	_, err := rbac.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// No leader election: this replica must not compete for the lease.
	edl := startEDLProc(t, "-kubeconfig", impersonatingKubeconfig(t, sa), "-log_level", "debug", "-leader_elect=false")
	edl.waitFor("a 403 is counted", func() bool { return forbiddenRequests(edl) > 0 })
	edl.waitFor("a refused request is logged", func() bool { return forbiddenLog.MatchString(edl.Log()) })
	code, body := edl.get("/readyz")
	assert.Equal(t, 503, code, "the Service informer cannot sync: %s", body)
	assert.Regexp(t, `(?i)services is forbidden`, edl.Log(), "the refusal names the resource")
}
