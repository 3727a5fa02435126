package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/paddlepaddle/edl/pkg/config"
	"github.com/paddlepaddle/edl/test/framework"
)

// manifestFile is the in-cluster deployment of EDL, at the module root.
const manifestFile = "edl_controller.yaml"

// manifestPath returns the absolute path of edl_controller.yaml.
func manifestPath(t *testing.T) string {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	return filepath.Join(root, manifestFile)
}

// manifestObjects reads every object of edl_controller.yaml, in file order.
func manifestObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(manifestPath(t))
	require.NoError(t, err)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
	return objs
}

// manifestObject converts the one object of kind into out.
func manifestObject(t *testing.T, kind string, out any) {
	t.Helper()
	manifestObjectNamed(t, kind, "", out)
}

// manifestObjectNamed converts the one object of kind named name (any
// name when "") into out.
func manifestObjectNamed(t *testing.T, kind, name string, out any) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range manifestObjects(t) {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			found = append(found, o)
		}
	}
	require.Len(t, found, 1, "%s holds one %s %s", manifestFile, kind, name)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].Object, out, true))
}

var (
	rbacOnce sync.Once
	rbacErr  error
)

// installControllerIdentity creates, for real and once for the package, the
// objects of edl_controller.yaml except the Deployment (and its disruption
// budget): the namespace, the ServiceAccount and its RBAC. The controller's
// pods themselves are not wanted on the shared cluster.
func installControllerIdentity(t *testing.T) {
	t.Helper()
	rbacOnce.Do(func() {
		var docs []string
		for _, o := range manifestObjects(t) {
			if o.GetKind() == "Deployment" || o.GetKind() == "PodDisruptionBudget" {
				continue
			}
			data, err := o.MarshalJSON()
			if err != nil {
				rbacErr = err
				return
			}
			docs = append(docs, string(data))
		}
		path := filepath.Join(t.TempDir(), "identity.yaml")
		if rbacErr = os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600); rbacErr != nil {
			return
		}
		_, rbacErr = cp.Kubectl(context.Background(), "apply", "--server-side", "-f", path)
	})
	require.NoError(t, rbacErr, "install the controller's namespace, ServiceAccount and RBAC")
}

// TestManifestAppliesOnTheAPIServer: every object of edl_controller.yaml
// passes the real API server's validation and admission in a server-side
// dry run (the namespace exists for real, so that the namespaced objects can
// be checked too).
func TestManifestAppliesOnTheAPIServer(t *testing.T) {
	installControllerIdentity(t)
	out, err := cp.Kubectl(testContext(t), "apply", "--server-side", "--dry-run=server", "-f", manifestPath(t))
	require.NoError(t, err)
	objs := manifestObjects(t)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, len(objs), "one line per object:\n%s", out)
	for i, o := range objs {
		assert.Contains(t, lines[i], "/"+o.GetName()+" serverside-applied (server dry run)", "object %d, %s %s", i, o.GetKind(), o.GetName())
	}
	assert.Len(t, objs, 14, "Namespace, ServiceAccount, 4 ClusterRoles, ClusterRoleBinding, Role, RoleBinding, ConfigMap, PriorityClass, Deployment, PodDisruptionBudget, Service")
}

// TestManifestPodTemplateIsRestricted evaluates the Deployment's pod
// template against the Pod Security "restricted" profile with the admission
// plugin's own checks; a template made less strict must fail them.
func TestManifestPodTemplateIsRestricted(t *testing.T) {
	var d appsv1.Deployment
	manifestObject(t, "Deployment", &d)
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	require.NoError(t, err)
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	evaluate := func(tmpl *corev1.PodTemplateSpec) policy.AggregateCheckResult {
		return policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &tmpl.ObjectMeta, &tmpl.Spec))
	}

	result := evaluate(&d.Spec.Template)
	assert.True(t, result.Allowed, "forbidden: %s", result.ForbiddenDetail())

	loosened := map[string]func(*corev1.PodSpec){
		"privilege escalation": func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil },
		"capabilities kept":    func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities = nil },
		"no seccomp profile":   func(s *corev1.PodSpec) { s.SecurityContext.SeccompProfile = nil },
		"may run as root": func(s *corev1.PodSpec) {
			s.SecurityContext.RunAsNonRoot = nil
			s.Containers[0].SecurityContext.RunAsNonRoot = nil
		},
	}
	for name, loosen := range loosened {
		tmpl := d.Spec.Template.DeepCopy()
		loosen(&tmpl.Spec)
		assert.False(t, evaluate(tmpl).Allowed, "a template with %s must not pass", name)
	}
}

// TestManifestShape checks what the API server does not: the Deployment's
// promises, and that the ClusterRole stays least-privilege.
func TestManifestShape(t *testing.T) {
	var d appsv1.Deployment
	manifestObject(t, "Deployment", &d)
	assert.Equal(t, "training-job-controller", d.Name)
	assert.Equal(t, "paddlecloud", d.Namespace)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	spec := d.Spec.Template.Spec
	assert.Equal(t, "edl-controller", spec.ServiceAccountName)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	release, err := os.ReadFile(filepath.Join(filepath.Dir(manifestPath(t)), "VERSION"))
	require.NoError(t, err)
	assert.Equal(t, "paddlepaddle/edl-controller:"+strings.TrimSpace(string(release)), c.Image, "the release's image")
	assert.Equal(t, "edl-controller", spec.PriorityClassName)
	require.NotNil(t, c.SecurityContext)
	assert.Equal(t, int64(65532), *c.SecurityContext.RunAsUser)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		assert.Contains(t, c.Resources.Requests, r)
		assert.Contains(t, c.Resources.Limits, r)
	}
	// Go's collector works toward the memory limit before the kernel
	// would kill edl for it; the Lease follows the pod's namespace.
	env := map[string]*corev1.EnvVarSource{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom
	}
	require.Len(t, env, 2, "%+v", c.Env)
	require.NotNil(t, env["GOMEMLIMIT"])
	assert.Equal(t, &corev1.ResourceFieldSelector{Resource: "limits.memory"}, env["GOMEMLIMIT"].ResourceFieldRef)
	require.NotNil(t, env["POD_NAMESPACE"])
	assert.Equal(t, &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}, env["POD_NAMESPACE"].FieldRef)
	require.Len(t, c.Ports, 1)
	assert.Equal(t, int32(8080), c.Ports[0].ContainerPort)
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		require.NotNil(t, probe)
		require.NotNil(t, probe.HTTPGet)
		assert.Equal(t, path, probe.HTTPGet.Path)
		assert.Equal(t, c.Ports[0].Name, probe.HTTPGet.Port.String())
	}
	// edl reads its configuration from the ConfigMap edl-config, mounted
	// read-only at /etc/edl.
	assert.Equal(t, []string{"-config", "/etc/edl/config.yaml"}, c.Args)
	require.Len(t, c.VolumeMounts, 1)
	assert.Equal(t, "/etc/edl", c.VolumeMounts[0].MountPath)
	assert.True(t, c.VolumeMounts[0].ReadOnly)
	require.Len(t, spec.Volumes, 1)
	assert.Equal(t, c.VolumeMounts[0].Name, spec.Volumes[0].Name)
	require.NotNil(t, spec.Volumes[0].ConfigMap)
	var cm corev1.ConfigMap
	manifestObject(t, "ConfigMap", &cm)
	assert.Equal(t, spec.Volumes[0].ConfigMap.Name, cm.Name)
	assert.Equal(t, "paddlecloud", cm.Namespace)
	require.Contains(t, cm.Data, "config.yaml")
	file, err := config.Decode([]byte(cm.Data["config.yaml"]))
	require.NoError(t, err, "the ConfigMap's config.yaml")
	assert.Equal(t, "info", *file.LogLevel)
	assert.True(t, *file.SecureMetrics, "/metrics over TLS, for authorized tokens only")
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		assert.Equal(t, corev1.URISchemeHTTPS, probe.HTTPGet.Scheme, "the server speaks TLS only")
	}
	var reader rbacv1.ClusterRole
	manifestObjectNamed(t, "ClusterRole", "edl-metrics-reader", &reader)
	assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)
	assert.Nil(t, file.LeaderElection.ResourceNamespace, "the Lease follows POD_NAMESPACE, so that an overlay may move the install")

	// The binary accepts the command line and the file: edl validates
	// every flag and the file before it acts on -version.
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cm.Data["config.yaml"]), 0o600))
	out, err := exec.Command(edlBinary(t), "-config", path, "-version").CombinedOutput()
	require.NoError(t, err, "edl rejects the Deployment's configuration: %s", out)
	// The image puts the binary where the command runs it.
	dockerfile, err := os.ReadFile(filepath.Join(filepath.Dir(manifestPath(t)), "Dockerfile"))
	require.NoError(t, err)
	require.Len(t, c.Command, 1)
	assert.Contains(t, string(dockerfile), " "+c.Command[0]+"\n", "the Dockerfile copies edl to %s", c.Command[0])

	var role rbacv1.ClusterRole
	manifestObjectNamed(t, "ClusterRole", "edl-controller", &role)
	for _, rule := range role.Rules {
		for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames} {
			assert.NotContains(t, field, "*", "no wildcards: %+v", rule)
		}
		assert.NotContains(t, rule.Resources, "secrets")
		if slices.Contains(rule.Verbs, "delete") {
			// The garbage collector deletes a job's objects; a finished
			// job's runPolicy alone deletes: the job past its TTL, a
			// ReplicaSet whose pods are kept, the pods not kept.
			for _, r := range rule.Resources {
				assert.Contains(t, []string{"trainingjobs", "replicasets", "pods"}, r, "delete: %+v", rule)
			}
		}
		assert.NotContains(t, rule.Verbs, "deletecollection")
		assert.Empty(t, rule.NonResourceURLs)
	}
	var leaseRole rbacv1.Role
	manifestObject(t, "Role", &leaseRole)
	assert.Equal(t, "paddlecloud", leaseRole.Namespace)
	require.Len(t, leaseRole.Rules, 1)
	assert.Equal(t, []string{"leases"}, leaseRole.Rules[0].Resources)
	assert.ElementsMatch(t, []string{"get", "create", "update"}, leaseRole.Rules[0].Verbs)
}
