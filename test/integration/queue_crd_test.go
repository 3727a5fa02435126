package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// trainingQueues is the TrainingQueue resource for the dynamic client.
var trainingQueues = schema.GroupVersionResource{Group: "paddlepaddle.org", Version: "v1", Resource: "trainingqueues"}

// TestCRDRejectsInvalidQueuesNamingTheField sends invalid TrainingQueues to
// the real API server, with strict field validation as kubectl does: each
// is refused in one line that names the field, and nothing is stored. A
// valid one is stored with the default weight.
func TestCRDRejectsInvalidQueuesNamingTheField(t *testing.T) {
	installCRD(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)
	cases := []struct {
		name, spec, field, message string
	}{
		{"no namespaces", `{}`, "spec.namespaces", "Required value"},
		{"an empty list of namespaces", `{namespaces: []}`, "spec.namespaces", "should have at least 1 items"},
		{"a namespace twice", `{namespaces: [a, a]}`, "spec.namespaces[1]", "Duplicate value"},
		{"a namespace that is no DNS label", `{namespaces: [Team_A]}`, "spec.namespaces[0]", "should match"},
		{"weight 0", `{namespaces: [a], weight: 0}`, "spec.weight", "should be greater than or equal to 1"},
		{"weight above 1000", `{namespaces: [a], weight: 1001}`, "spec.weight", "should be less than or equal to 1000"},
		{"a negative guarantee", `{namespaces: [a], guarantee: {cpu: "-1"}}`, "spec.guarantee", "guarantee must be non-negative quantities: guarantee[cpu] is -1"},
		{"a negative limit", `{namespaces: [a], limit: {memory: "-1Gi"}}`, "spec.limit", "limit must be non-negative quantities: limit[memory] is -1Gi"},
		{"a guarantee above the limit", `{namespaces: [a], guarantee: {cpu: "10"}, limit: {cpu: "8"}}`, "spec.guarantee", "spec.guarantee must not exceed spec.limit: guarantee[cpu] is above limit[cpu]"},
		{"an unknown field", `{namespaces: [a], weigth: 2}`, "spec.weigth", "unknown field"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			doc := fmt.Sprintf("{apiVersion: paddlepaddle.org/v1, kind: TrainingQueue, metadata: {name: bad-%d}, spec: %s}", i, c.spec)
			require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
			_, err := client.Resource(trainingQueues).Create(testContext(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
			require.Error(t, err, "the API server accepted an invalid TrainingQueue")
			msg := err.Error()
			t.Log(msg)
			assert.Contains(t, msg, c.field, "the rejection must name the field")
			assert.Contains(t, msg, c.message)
			assert.NotContains(t, msg, "\n", "one line")
			_, err = client.Resource(trainingQueues).Get(testContext(t), obj.GetName(), metav1.GetOptions{})
			assert.Error(t, err, "nothing is stored")
		})
	}

	good := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`{apiVersion: paddlepaddle.org/v1, kind: TrainingQueue, metadata: {name: nlp},
spec: {namespaces: [nlp, nlp-dev], guarantee: {cpu: "8", memory: 32Gi}, limit: {cpu: "64"}}}`), &good.Object))
	created, err := client.Resource(trainingQueues).Create(testContext(t), good, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Resource(trainingQueues).Delete(testContext(t), "nlp", metav1.DeleteOptions{}) })
	weight, found, err := unstructured.NestedInt64(created.Object, "spec", "weight")
	require.NoError(t, err)
	require.True(t, found, "the weight is defaulted")
	assert.Equal(t, int64(1), weight)
}
