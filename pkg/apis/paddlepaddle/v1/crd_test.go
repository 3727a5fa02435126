package v1_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// loadCRD is the TrainingJob CRD of thirdpartyresource.yaml.
func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return loadCRDs(t)["trainingjobs.paddlepaddle.org"]
}

// loadCRDs are the CRDs of thirdpartyresource.yaml by name: EDL's whole API.
func loadCRDs(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(repoFile(t, "thirdpartyresource.yaml"))
	require.NoError(t, err)
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), crd))
		if crd.Name != "" {
			crds[crd.Name] = crd
		}
	}
	require.Len(t, crds, 2, "the TrainingJob and TrainingQueue CRDs")
	return crds
}

// TestTrainingQueueCRDNamesAndColumns pins what users type and see of a
// TrainingQueue: cluster-scoped, short name tq, the status subresource and
// the share columns.
func TestTrainingQueueCRDNamesAndColumns(t *testing.T) {
	crd := loadCRDs(t)["trainingqueues.paddlepaddle.org"]
	require.NotNil(t, crd)
	assert.Equal(t, apiextensionsv1.ClusterScoped, crd.Spec.Scope)
	assert.Equal(t, "TrainingQueue", crd.Spec.Names.Kind)
	assert.Equal(t, []string{"tq"}, crd.Spec.Names.ShortNames)
	require.Len(t, crd.Spec.Versions, 1)
	version := crd.Spec.Versions[0]
	require.NotNil(t, version.Subresources)
	assert.NotNil(t, version.Subresources.Status)
	var columns []string
	for _, c := range version.AdditionalPrinterColumns {
		columns = append(columns, c.Name+"="+c.JSONPath)
	}
	assert.Equal(t, []string{
		"Weight=.spec.weight", "Deserved=.status.deserved.cpu", "Used=.status.used.cpu",
		"Borrowed=.status.borrowed.cpu", "Running=.status.runningJobs", "Queued=.status.queuedJobs",
		"Age=.metadata.creationTimestamp",
	}, columns)
	weight := version.Schema.OpenAPIV3Schema.Properties["spec"].Properties["weight"]
	require.NotNil(t, weight.Default)
	assert.JSONEq(t, "1", string(weight.Default.Raw), "the CRD's default weight is DefaultQueueWeight")
	assert.Equal(t, v1.DefaultQueueWeight, (&v1.TrainingQueueSpec{}).QueueWeight())
}

// TestCRDNamesAndColumns pins what users type and see: the resource names,
// the short name, the status subresource and kubectl's columns.
func TestCRDNamesAndColumns(t *testing.T) {
	crd := loadCRD(t)
	assert.Equal(t, "trainingjobs.paddlepaddle.org", crd.Name)
	assert.Equal(t, "paddlepaddle.org", crd.Spec.Group)
	assert.Equal(t, apiextensionsv1.NamespaceScoped, crd.Spec.Scope)
	assert.Equal(t, "trainingjobs", crd.Spec.Names.Plural)
	assert.Equal(t, "TrainingJob", crd.Spec.Names.Kind)
	assert.Equal(t, "TrainingJobList", crd.Spec.Names.ListKind)
	assert.Equal(t, []string{"tj"}, crd.Spec.Names.ShortNames)

	require.Len(t, crd.Spec.Versions, 1)
	version := crd.Spec.Versions[0]
	assert.Equal(t, "v1", version.Name)
	assert.True(t, version.Served)
	assert.True(t, version.Storage)
	require.NotNil(t, version.Subresources)
	assert.NotNil(t, version.Subresources.Status, "status must be a subresource")

	var columns []string
	for _, c := range version.AdditionalPrinterColumns {
		columns = append(columns, c.Name+"="+c.JSONPath)
	}
	assert.Equal(t, []string{
		"Phase=.status.phase",
		"Trainers=.status.trainers.summary",
		"Min=.spec.trainer.min-instance",
		"Max=.spec.trainer.max-instance",
		`Limited By=.status.conditions[?(@.type=="Scaling")].reason`,
		`Resizes=.status.resize.count`,
		`Resize Cost=.status.resize.lastCost`,
		"Progress=.status.progress.percent",
		"Throughput=.status.progress.throughput",
		"ETA=.status.progress.eta",
		"Age=.metadata.creationTimestamp",
		`Queued=.status.conditions[?(@.type=="Queued")].message`,
	}, columns)
}

// TestCRDDefaultsMatchGo keeps the schema's defaults and the Go defaults the
// controller applies to objects that bypassed the schema equal.
func TestCRDDefaultsMatchGo(t *testing.T) {
	spec := loadCRD(t).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	defaultOf := func(s apiextensionsv1.JSONSchemaProps) int32 {
		t.Helper()
		require.NotNil(t, s.Default, "no default in the schema")
		var v int32
		require.NoError(t, json.Unmarshal(s.Default.Raw, &v))
		return v
	}
	assert.Equal(t, v1.DefaultPort, defaultOf(spec.Properties["port"]))
	assert.Equal(t, v1.DefaultPortsNum, defaultOf(spec.Properties["ports_num"]))
	assert.Equal(t, v1.DefaultPortsNumForSparse, defaultOf(spec.Properties["ports_num_for_sparse"]))
	assert.Equal(t, v1.DefaultMaxRestarts, defaultOf(spec.Properties["trainer"].Properties["max-restarts"]))
	elastic := spec.Properties["elasticPolicy"].Properties
	assert.Equal(t, v1.DefaultRdzvPort, defaultOf(elastic["rdzvPort"]))
	assert.Equal(t, v1.DefaultNProcPerNode, defaultOf(elastic["nProcPerNode"]))
	assert.Equal(t, v1.DefaultElasticBudget, defaultOf(elastic["maxRestarts"]))
	assert.Equal(t, v1.DefaultSlotsPerHost, defaultOf(elastic["hostDiscovery"].Properties["slotsPerHost"]))
	assert.JSONEq(t, `"`+string(v1.FrameworkPaddlePaddle)+`"`, string(spec.Properties["framework"].Default.Raw))
	assert.JSONEq(t, `"`+v1.DefaultRdzvBackend+`"`, string(elastic["rdzvBackend"].Default.Raw))
}

// TestCRDKeepsOriginalKeys guards the keys that job files written for the
// original controller use; a renamed Go field must not rename them.
func TestCRDKeepsOriginalKeys(t *testing.T) {
	spec := loadCRD(t).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, key := range []string{"image", "port", "ports_num", "ports_num_for_sparse", "fault_tolerant", "passes",
		"volumes", "volumeMounts", "imagePullSecrets", "hostNetwork", "nodeSelector", "priorityClassName",
		"master", "pserver", "trainer"} {
		assert.Contains(t, spec.Properties, key)
	}
	for _, key := range []string{"entrypoint", "workspace", "passes", "min-instance", "max-instance", "resources"} {
		assert.Contains(t, spec.Properties["trainer"].Properties, key)
	}
	for _, key := range []string{"entrypoint", "min-instance", "max-instance", "resources"} {
		assert.Contains(t, spec.Properties["pserver"].Properties, key)
	}
	for _, key := range []string{"resources", "etcd-endpoint"} {
		assert.Contains(t, spec.Properties["master"].Properties, key)
	}
	// pserver is required of PaddlePaddle jobs only, by a rule of the spec.
	assert.ElementsMatch(t, []string{"image", "trainer"}, spec.Required)
	assert.ElementsMatch(t, []string{"min-instance", "max-instance"}, spec.Properties["trainer"].Required)
}
