package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/paddlepaddle/edl/pkg/config"
	"github.com/paddlepaddle/edl/test/framework"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := framework.ModuleRoot()
	require.NoError(t, err)
	return r
}

// render builds the kustomization in dir, as kubectl apply -k does.
func render(t *testing.T, dir string) []*resource.Resource {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	return m.Resources()
}

func kinds(objs []*resource.Resource) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o.GetKind()]++
	}
	return out
}

// object converts the one object of kind and name in objs into out.
func object(t *testing.T, objs []*resource.Resource, kind, name string, out any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			m, err := o.Map()
			require.NoError(t, err)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, out))
			return
		}
	}
	t.Fatalf("no %s %s", kind, name)
}

// TestConfigCopiesAreCurrent: the kustomize bases under config/ hold the
// top-level files as they are (make generate copies them).
func TestConfigCopiesAreCurrent(t *testing.T) {
	for copyPath, source := range map[string]string{
		"config/crd/thirdpartyresource.yaml":    "thirdpartyresource.yaml",
		"config/controller/edl_controller.yaml": "edl_controller.yaml",
	} {
		want, err := os.ReadFile(filepath.Join(root(t), source))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(root(t), copyPath))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s is not %s: run make generate", copyPath, source)
	}
}

// TestTheControllerIsApartFromTheAPI: kubectl apply --server-side -k . installs both;
// config/controller holds no CRD, so that deleting it keeps every
// TrainingJob; config/crd holds only the CRDs, TrainingJob's among them.
func TestTheControllerIsApartFromTheAPI(t *testing.T) {
	api := render(t, filepath.Join(root(t), "config", "crd"))
	crds := kinds(api)["CustomResourceDefinition"]
	assert.Equal(t, map[string]int{"CustomResourceDefinition": crds}, kinds(api), "only CRDs")
	var crd apiextensionsv1.CustomResourceDefinition
	object(t, api, "CustomResourceDefinition", "trainingjobs.paddlepaddle.org", &crd)
	assert.Equal(t, "TrainingJob", crd.Spec.Names.Kind)
	all := kinds(render(t, root(t)))
	assert.Equal(t, crds, all["CustomResourceDefinition"])
	assert.Equal(t, 1, all["Deployment"])
	controller := kinds(render(t, filepath.Join(root(t), "config", "controller")))
	assert.Zero(t, controller["CustomResourceDefinition"], "deleting the controller must not delete the jobs")
	assert.Equal(t, 1, controller["Deployment"])
}

// TestOverlayMovesTheWholeInstall: an overlay that sets another namespace
// moves every object that names one — the bindings' subjects included —
// and leaves nothing pointing at paddlecloud; the Lease follows the pod's
// namespace, which the ConfigMap does not pin.
func TestOverlayMovesTheWholeInstall(t *testing.T) {
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, root(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(overlay, "kustomization.yaml"),
		[]byte("namespace: ml-system\nresources:\n  - "+filepath.ToSlash(rel)+"\n"), 0o600))
	objs := render(t, overlay)
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue // its schema's descriptions mention paddlecloud-job images
		}
		data, err := o.AsYAML()
		require.NoError(t, err)
		assert.NotContains(t, string(data), "paddlecloud", "%s %s", o.GetKind(), o.GetName())
		if o.GetNamespace() != "" {
			assert.Equal(t, "ml-system", o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	var ns corev1.Namespace
	object(t, objs, "Namespace", "ml-system", &ns)
	for _, b := range []struct{ kind, name string }{{"ClusterRoleBinding", "edl-controller"}, {"RoleBinding", "edl-controller-leader-election"}} {
		var binding rbacv1.RoleBinding // a ClusterRoleBinding has the same subjects
		object(t, objs, b.kind, b.name, &binding)
		require.Len(t, binding.Subjects, 1)
		assert.Equal(t, "ml-system", binding.Subjects[0].Namespace, b.kind)
	}
	var cm corev1.ConfigMap
	object(t, objs, "ConfigMap", "edl-config", &cm)
	c, err := config.Decode([]byte(cm.Data["config.yaml"]))
	require.NoError(t, err)
	assert.Nil(t, c.LeaderElection.ResourceNamespace, "the Lease is in POD_NAMESPACE")
	var d appsv1.Deployment
	object(t, objs, "Deployment", "training-job-controller", &d)
	var podNamespace *corev1.EnvVarSource
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "POD_NAMESPACE" {
			podNamespace = e.ValueFrom
		}
	}
	require.NotNil(t, podNamespace)
	assert.Equal(t, "metadata.namespace", podNamespace.FieldRef.FieldPath)
}

// TestTheImageIsTheRelease: the Deployment runs the image of the release
// in the file VERSION, in the file and as kubectl apply -k renders it,
// never a moving tag, at a priority class the install ships.
func TestTheImageIsTheRelease(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "VERSION"))
	require.NoError(t, err)
	release := strings.TrimSpace(string(data))
	require.Regexp(t, `^v\d+\.\d+\.\d+$`, release)
	objs := render(t, root(t))
	var d appsv1.Deployment
	object(t, objs, "Deployment", "training-job-controller", &d)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "paddlepaddle/edl-controller:"+release, c.Image)
	assert.NotEqual(t, corev1.PullAlways, c.ImagePullPolicy)
	controllerFile := render(t, filepath.Join(root(t), "config", "controller"))
	object(t, controllerFile, "Deployment", "training-job-controller", &d)
	assert.Equal(t, "paddlepaddle/edl-controller:"+release, d.Spec.Template.Spec.Containers[0].Image, "edl_controller.yaml without kustomize")
	assert.Equal(t, "edl-controller", d.Spec.Template.Spec.PriorityClassName)
	assert.Equal(t, 1, kinds(controllerFile)["PriorityClass"])
}

// TestTenantRolesAggregate: view gets read rights on TrainingJobs, edit
// and admin the writes too, through the aggregation labels.
func TestTenantRolesAggregate(t *testing.T) {
	objs := render(t, root(t))
	var view, edit rbacv1.ClusterRole
	object(t, objs, "ClusterRole", "edl-trainingjobs-view", &view)
	object(t, objs, "ClusterRole", "edl-trainingjobs-edit", &edit)
	for _, role := range []string{"view", "edit", "admin"} {
		assert.Equal(t, "true", view.Labels["rbac.authorization.k8s.io/aggregate-to-"+role], role)
	}
	assert.NotContains(t, edit.Labels, "rbac.authorization.k8s.io/aggregate-to-view", "view only reads")
	assert.Equal(t, "true", edit.Labels["rbac.authorization.k8s.io/aggregate-to-edit"])
	assert.Equal(t, "true", edit.Labels["rbac.authorization.k8s.io/aggregate-to-admin"])
	for _, r := range view.Rules {
		assert.Subset(t, []string{"get", "list", "watch"}, r.Verbs)
	}
	require.Len(t, edit.Rules, 1)
	assert.Subset(t, edit.Rules[0].Verbs, []string{"create", "patch", "delete"})
	assert.Equal(t, []string{"trainingjobs"}, edit.Rules[0].Resources)
}
