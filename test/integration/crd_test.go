package integration

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1/testcorpus"
	"github.com/paddlepaddle/edl/test/framework"
)

var (
	crdOnce sync.Once
	crdErr  error
)

// trainingJobs is the TrainingJob resource for the dynamic client, which
// sends objects as they are written, wrong types and unknown keys included.
var trainingJobs = schema.GroupVersionResource{Group: "paddlepaddle.org", Version: "v1", Resource: "trainingjobs"}

// installCRD checks that thirdpartyresource.yaml is installed on the shared
// control plane (TestMain installs it, once for the package).
func installCRD(t *testing.T) {
	t.Helper()
	crdOnce.Do(func() { crdErr = applyCRD(cp) })
	require.NoError(t, crdErr, "install the TrainingJob CRD")
}

// applyCRD installs thirdpartyresource.yaml on plane.
func applyCRD(plane *framework.ControlPlane) error {
	root, err := framework.ModuleRoot()
	if err != nil {
		return err
	}
	return plane.ApplyCRD(context.Background(), filepath.Join(root, "thirdpartyresource.yaml"))
}

// TestCRDRejectsInvalidJobsNamingTheField sends every job of the invalid
// corpus to the real API server, with strict field validation as kubectl
// does, and expects a rejection that names the field.
func TestCRDRejectsInvalidJobsNamingTheField(t *testing.T) {
	installCRD(t)
	ns := newNamespace(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)

	corpus, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(corpus), 20)
	for _, c := range corpus {
		t.Run(c.Name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(c.YAML, &obj.Object))
			_, err := client.Resource(trainingJobs).Namespace(ns).Create(testContext(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
			require.Error(t, err, "the API server accepted an invalid job")
			msg := err.Error()
			assert.Contains(t, msg, c.Field, "the rejection must name the field")
			assert.Contains(t, msg, c.Message)
			assert.NotContains(t, msg, "\n", "one line")
		})
	}

	// Nothing half-created: the namespace holds no job at all.
	list, err := client.Resource(trainingJobs).Namespace(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

// TestCRDAcceptsTheExampleWithDefaults creates the original-format example
// and reads back the schema's defaults.
func TestCRDAcceptsTheExampleWithDefaults(t *testing.T) {
	installCRD(t)
	ns := newNamespace(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)

	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: paddlepaddle.org/v1
kind: TrainingJob
metadata: {name: minimal}
spec:
  image: paddlepaddle/paddlecloud-job
  trainer: {min-instance: 1, max-instance: 3, resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 2}}}
  pserver: {min-instance: 1, max-instance: 1}
`), &obj.Object))
	created, err := client.Resource(trainingJobs).Namespace(ns).Create(testContext(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	spec := created.Object["spec"].(map[string]any)
	assert.EqualValues(t, 7164, spec["port"])
	assert.EqualValues(t, 1, spec["ports_num"])
	assert.EqualValues(t, 1, spec["ports_num_for_sparse"])
	assert.EqualValues(t, 5, spec["trainer"].(map[string]any)["max-restarts"])

	out, err := cp.Kubectl(testContext(t), "get", "tj", "-n", ns)
	require.NoError(t, err, out)
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	assert.Equal(t, []string{"NAME", "PHASE", "TRAINERS", "MIN", "MAX", "AGE"}, header)
	assert.Regexp(t, `(?m)^minimal\s+1\s+3\s+\S+$`, out, "an unsynced job shows its min and max")
}
