package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1/testcorpus"
)

// trainingJobs is the TrainingJob resource for the dynamic client, which
// sends objects as they are written, wrong types and unknown keys included.
var trainingJobs = schema.GroupVersionResource{Group: "paddlepaddle.org", Version: "v1", Resource: "trainingjobs"}

// TestCRDRejectsInvalidJobsNamingTheField sends every job of the invalid
// corpus to the real API server, with strict field validation as kubectl
// does, and expects a rejection that names the field. The jobs whose rule is
// beyond the CRD's CEL cost budget ('schema: admits') must be admitted, so
// that the corpus says truly which rules the schema checks;
// TestControllerFailsInvalidJobsTheSchemaAdmits follows them.
func TestCRDRejectsInvalidJobsNamingTheField(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)

	corpus, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(corpus), 50)
	admitted := 0
	for _, c := range corpus {
		t.Run(c.Name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(c.YAML, &obj.Object))
			_, err := client.Resource(trainingJobs).Namespace(ns).Create(testContext(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
			if c.SchemaAdmits {
				require.NoError(t, err, "the schema now rejects the job: drop its '# schema: admits' line")
				admitted++
				require.NoError(t, client.Resource(trainingJobs).Namespace(ns).Delete(testContext(t), obj.GetName(), metav1.DeleteOptions{}))
				return
			}
			require.Error(t, err, "the API server accepted an invalid job")
			msg := err.Error()
			t.Log(msg)
			assert.Contains(t, msg, c.Field, "the rejection must name the field")
			assert.Contains(t, msg, c.Message)
			assert.NotContains(t, msg, "\n", "one line")
		})
	}
	t.Logf("%d invalid jobs rejected by the schema, %d left to v1.Validate", len(corpus)-admitted, admitted)

	// Nothing half-created: the namespace holds no job at all.
	list, err := client.Resource(trainingJobs).Namespace(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

// TestControllerFailsInvalidJobsTheSchemaAdmits stores the invalid jobs of
// the corpus whose rule is beyond the CRD's CEL cost budget, as the API
// server admits them, and runs the controller: each ends Failed with reason
// Invalid, v1.Validate's message naming the field, and one Warning event,
// and nothing is created for any of them.
func TestControllerFailsInvalidJobsTheSchemaAdmits(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)

	corpus, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	var admitted []testcorpus.Job
	for _, c := range corpus {
		if !c.SchemaAdmits {
			continue
		}
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(c.YAML, &obj.Object))
		_, err := client.Resource(trainingJobs).Namespace(ns).Create(testContext(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err, "%s: the schema rejects the job: drop its '# schema: admits' line", c.Name)
		admitted = append(admitted, c)
	}
	require.NotEmpty(t, admitted)

	startController(t, ns)
	for _, c := range admitted {
		assertFailedInvalid(t, ns, c.Name, c.Field, c.Message)
	}
	assertNothingCreated(t, ns)
}

// assertFailedInvalid waits for the job to be Failed/Invalid with each of
// want in its message, and asserts its one Invalid event.
func assertFailedInvalid(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	job := waitForJob(t, ns, name, "Failed/Invalid", func(job *v1.TrainingJob) bool {
		return job.Status.Phase == v1.PhaseFailed && job.Status.Reason == v1.ReasonInvalid
	})
	for _, w := range want {
		assert.Contains(t, job.Status.Message, w, name)
	}
	assertEventReasons(t, ns, name, []string{v1.ReasonInvalid}, name)
}

// assertNothingCreated asserts that no ReplicaSet and no Service exists in ns.
func assertNothingCreated(t *testing.T, ns string) {
	t.Helper()
	rss, err := cp.Client.AppsV1().ReplicaSets(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, rss.Items, "ReplicaSets created for invalid jobs")
	services, err := cp.Client.CoreV1().Services(ns).List(testContext(t), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, services.Items, "Services created for invalid jobs")
}

// TestCRDAcceptsTheExampleWithDefaults creates the original-format example
// and reads back the schema's defaults.
func TestCRDAcceptsTheExampleWithDefaults(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
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
	assert.Equal(t, []string{"NAME", "PHASE", "TRAINERS", "MIN", "MAX", "PROGRESS", "THROUGHPUT", "ETA", "AGE"}, header)
	assert.Regexp(t, `(?m)^minimal\s+1\s+3\s+\S+$`, out, "an unsynced job shows its min and max")
}

// TestJobsThatBypassTheSchemaFailInvalid stores invalid jobs the way an
// older, rule-less CRD would have let them in (the TrainingJob schema is
// loosened for the test, then restored), among them a name too long for the
// job's Services, plus one the current schema lets through: the controller
// marks each Failed with reason Invalid, a message naming the field and a
// Warning event, and creates nothing for any of them.
func TestJobsThatBypassTheSchemaFailInvalid(t *testing.T) {
	installCRD(t)
	ns := cp.NewNamespace(t)
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)
	crds, err := apiextensionsclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	// Loosen the spec's schema: no types, no rules, no defaults.
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(testContext(t), "trainingjobs.paddlepaddle.org", metav1.GetOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, applyCRD(cp), "restore the TrainingJob CRD") })
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	schema.XValidations = nil
	schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(testContext(t), crd, metav1.UpdateOptions{})
	require.NoError(t, err)

	// One character too long: <name>-pserver would be a 64-character Service name.
	tooLongName := strings.Repeat("a", v1.MaxNameLength-4) + "-long"
	require.Len(t, tooLongName, v1.MaxNameLength+1)
	cases := []struct{ name, spec, field string }{
		{"min-above-max", `{image: paddlepaddle/paddlecloud-job, trainer: {min-instance: 5, max-instance: 2}, pserver: {min-instance: 1, max-instance: 1}}`,
			"spec.trainer.min-instance"},
		{"no-image", `{trainer: {min-instance: 1, max-instance: 2}, pserver: {min-instance: 1, max-instance: 1}}`,
			"spec.image"},
		{"zero-pservers", `{image: paddlepaddle/paddlecloud-job, trainer: {min-instance: 1, max-instance: 2}, pserver: {min-instance: 0, max-instance: 0}}`,
			"spec.pserver.min-instance"},
		// The Services <name>-pserver and <name>-master could not be created.
		{tooLongName, `{image: paddlepaddle/paddlecloud-job, trainer: {min-instance: 1, max-instance: 2}, pserver: {min-instance: 1, max-instance: 1}}`,
			"metadata.name"},
		// The schema's rules check cpu, memory and GPUs; the controller checks every resource.
		{"negative-storage", `{image: paddlepaddle/paddlecloud-job, trainer: {min-instance: 1, max-instance: 2, resources: {requests: {ephemeral-storage: "-1Gi"}}}, pserver: {min-instance: 1, max-instance: 1}}`,
			"spec.trainer.resources.requests[ephemeral-storage]"},
	}
	for _, c := range cases {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte("apiVersion: paddlepaddle.org/v1\nkind: TrainingJob\nmetadata: {name: "+c.name+"}\nspec: "+c.spec), &obj.Object))
		// The API server takes the loosened schema within moments.
		err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := client.Resource(trainingJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err == nil, nil
		})
		require.NoError(t, err, "the loosened schema never took %s", c.name)
	}

	startController(t, ns)
	for _, c := range cases {
		assertFailedInvalid(t, ns, c.name, c.field)
	}
	assertNothingCreated(t, ns)

	// With the CRD's rules back, the stored job with the too-long name
	// still takes status updates: the name rules run on create only, so
	// the controller can always record why such a job failed.
	require.NoError(t, applyCRD(cp), "restore the TrainingJob CRD")
	another := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte("apiVersion: paddlepaddle.org/v1\nkind: TrainingJob\nmetadata: {name: "+strings.Repeat("b", v1.MaxNameLength+1)+"}\n"+
		"spec: {image: paddlepaddle/paddlecloud-job, trainer: {min-instance: 1, max-instance: 2}, pserver: {min-instance: 1, max-instance: 1}}"), &another.Object))
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.Resource(trainingJobs).Namespace(ns).Create(ctx, another, metav1.CreateOptions{})
		if err == nil {
			return false, client.Resource(trainingJobs).Namespace(ns).Delete(ctx, another.GetName(), metav1.DeleteOptions{})
		}
		return strings.Contains(err.Error(), "metadata.name"), nil
	})
	require.NoError(t, err, "the restored schema never rejected a too-long name")
	job, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Get(testContext(t), tooLongName, metav1.GetOptions{})
	require.NoError(t, err)
	job.Status.Message += " (checked)"
	_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).UpdateStatus(testContext(t), job, metav1.UpdateOptions{})
	assert.NoError(t, err, "a stored job with a name the rules now refuse must take status updates")
}
