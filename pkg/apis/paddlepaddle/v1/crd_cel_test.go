package v1_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1/testcorpus"
)

// celOf compiles the CRD's schema as the API server does (the CRD's own
// validation checks every rule's and message expression's cost), and
// returns its structural schema and CEL validator.
func celOf(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) (*structuralschema.Structural, *cel.Validator, apiservervalidation.SchemaValidator) {
	t.Helper()
	internal := &apiextensions.CustomResourceDefinition{}
	crd = crd.DeepCopy()
	crd.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil))
	require.Empty(t, validation.ValidateCustomResourceDefinition(context.Background(), internal), "the API server would refuse the CRD")
	// One version: the conversion keeps its schema as the CRD's.
	schema := internal.Spec.Validation
	if v := internal.Spec.Versions[0].Schema; v != nil {
		schema = v
	}
	s, err := structuralschema.NewStructural(schema.OpenAPIV3Schema)
	require.NoError(t, err)
	sv, _, err := apiservervalidation.NewSchemaValidator(schema.OpenAPIV3Schema)
	require.NoError(t, err)
	return s, cel.NewValidator(s, true, celconfig.PerCallLimit), sv
}

// TestCRDRulesOffline runs the CRD's CEL rules, as the API server does on
// create, over the corpus of invalid jobs: every job a rule refuses is
// refused with the corpus's message, in one line naming the field, and the
// valid jobs pass. test/integration's TestCRDRejectsInvalidJobsNamingTheField
// does the same against a real API server, with the schema's other checks.
func TestCRDRulesOffline(t *testing.T) {
	_, _, _ = celOf(t, loadCRDs(t)["trainingqueues.paddlepaddle.org"])
	s, validator, schemaValidator := celOf(t, loadCRD(t))
	run := func(t *testing.T, data []byte) field.ErrorList {
		var obj map[string]any
		js, err := yaml.YAMLToJSON(data)
		require.NoError(t, err)
		require.NoError(t, utiljson.Unmarshal(js, &obj)) // whole numbers as int64, as the API server decodes them
		structuraldefaulting.Default(obj, s)
		if errs := apiservervalidation.ValidateCustomResource(nil, obj, schemaValidator); len(errs) > 0 {
			return errs // the API server runs no rule on an object its schema refuses
		}
		errs, _ := validator.Validate(context.Background(), nil, s, obj, nil, celconfig.RuntimeCELCostBudget)
		return errs
	}
	invalid, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	byRule := 0
	// Refused before the schema: the name by the API server's object-meta
	// checks, the unknown field by strict field validation.
	before := map[string]bool{"name-uppercase": true, "unknown-field": true}
	for _, c := range invalid {
		if before[c.Name] {
			continue
		}
		errs := run(t, c.YAML)
		if len(errs) == 0 {
			require.True(t, c.SchemaAdmits, "invalid/%s: the schema admits it; mark it '# schema: admits'", c.Name)
			continue
		}
		byRule++
		t.Run(c.Name, func(t *testing.T) {
			msg := errs.ToAggregate().Error()
			assert.Contains(t, msg, c.Field)
			assert.Contains(t, msg, c.Message)
			assert.NotContains(t, msg, "\n")
		})
	}
	assert.GreaterOrEqual(t, byRule, 10, "jobs the schema refuses")
	valid, err := testcorpus.ValidJobs()
	require.NoError(t, err)
	for _, c := range valid {
		assert.Empty(t, run(t, c.YAML), "valid/%s", c.Name)
	}
	for _, file := range []string{"example/examplejob.yaml", "example/torchjob.yaml"} {
		data := mustRead(t, repoFile(t, file))
		for _, doc := range strings.Split(data, "\n---\n") {
			if !strings.Contains(doc, "\nkind: TrainingJob\n") {
				continue // the example's claim
			}
			assert.Empty(t, run(t, []byte(doc)), file)
		}
	}
}
