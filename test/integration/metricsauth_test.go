package integration

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlepaddle/edl/test/framework"
)

// TestSecureMetricsNeedAnAuthorizedToken runs edl as its ServiceAccount
// with -secure_metrics, as the ConfigMap of edl_controller.yaml does, and
// scrapes it as a ServiceMonitor would: over TLS, with a ServiceAccount
// token. Without a token the scrape is refused, with the token of an
// account that is not bound to the ClusterRole edl-metrics-reader it is
// forbidden, and with one that is it gets the metrics; the probes stay
// open. The controller's own RBAC covers the reviews (no 403).
func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	installControllerIdentity(t)
	ctx := testContext(t)
	ns := cp.NewNamespace(t)
	edl := startEDLProc(t, "-kubeconfig", impersonatingKubeconfig(t, controllerUser), "-secure_metrics", "-leader_elect=false")
	addr := edl.logged(regexp.MustCompile(`msg="serving metrics and health checks" addr=(\S+) tls=true`))

	token := func(name string) string {
		_, err := cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	prometheus, tenant := token("prometheus"), token("tenant")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "edl-metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edl-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}},
	}
	_, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.Client.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })

	get := func(path, token string) (int, string) {
		code, body, err := framework.GetSelfSigned(ctx, "https://"+addr+path, token)
		require.NoError(t, err)
		return code, body
	}
	code, _ := get("/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = get("/metrics", "not-a-token")
	assert.Equal(t, http.StatusUnauthorized, code, "a token the API server does not know")
	code, _ = get("/metrics", tenant)
	assert.Equal(t, http.StatusForbidden, code, "an account without get on /metrics")
	// RBAC takes effect at once, but the binding was made after the tokens:
	// the first review of the allowed token is the one below.
	code, body := get("/metrics", prometheus)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "\nedl_leader ")
	assert.NotContains(t, body, `edl_rest_client_requests_total{code="403"`, "the controller may review tokens and access")
	code, _ = get("/healthz", "")
	assert.Equal(t, http.StatusOK, code, "the liveness probe needs no token")
	assert.False(t, strings.Contains(edl.Log(), "cannot review a request for metrics"), edl.Log())
}
