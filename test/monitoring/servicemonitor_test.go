package monitoring

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/test/framework"
)

// serviceMonitor is what the test reads of example/monitoring's
// ServiceMonitor.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Scheme          string `json:"scheme"`
			Path            string `json:"path"`
			BearerTokenFile string `json:"bearerTokenFile"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// controllerObject converts the object of edl_controller.yaml of kind and
// name into out.
func controllerObject(t *testing.T, kind, name string, out any) {
	t.Helper()
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "edl_controller.yaml"))
	require.NoError(t, err)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		err := decoder.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		meta, _ := obj["metadata"].(map[string]any)
		if obj["kind"] == kind && meta["name"] == name {
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj, out))
			return
		}
	}
	t.Fatalf("edl_controller.yaml has no %s %s", kind, name)
}

// TestServiceMonitorScrapesTheControllersMetricsService: the ServiceMonitor
// selects the metrics Service of edl_controller.yaml, in its namespace, by
// its port's name, over HTTPS with the pod's token; and the Service reaches
// the Deployment's pods on the port the server listens on.
func TestServiceMonitorScrapesTheControllersMetricsService(t *testing.T) {
	var sm serviceMonitor
	require.NoError(t, yaml.Unmarshal(monitoringFile(t, "servicemonitor.yaml"), &sm))
	assert.Equal(t, "monitoring.coreos.com/v1", sm.APIVersion)
	assert.Equal(t, "ServiceMonitor", sm.Kind)

	var svc corev1.Service
	controllerObject(t, "Service", "edl-controller-metrics", &svc)
	var d appsv1.Deployment
	controllerObject(t, "Deployment", "training-job-controller", &d)
	assert.Equal(t, svc.Namespace, sm.Metadata.Namespace)
	assert.True(t, labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)), "the ServiceMonitor selects the Service")
	assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)), "the Service selects the controller's pods")
	require.Len(t, sm.Spec.Endpoints, 1)
	ep := sm.Spec.Endpoints[0]
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, svc.Spec.Ports[0].Name, ep.Port)
	assert.Equal(t, "https", ep.Scheme, "the token is not sent in the clear")
	assert.Equal(t, "/metrics", ep.Path)
	assert.NotEmpty(t, ep.BearerTokenFile)
	container := d.Spec.Template.Spec.Containers[0]
	require.Len(t, container.Ports, 1)
	assert.Equal(t, container.Ports[0].Name, svc.Spec.Ports[0].TargetPort.String())
}
