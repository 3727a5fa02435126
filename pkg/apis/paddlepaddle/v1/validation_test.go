package v1_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1/testcorpus"
)

func TestValidateAcceptsTheExamples(t *testing.T) {
	for _, doc := range []string{originalJob, mustRead(t, repoFile(t, "example/examplejob.yaml"))} {
		obj, _, err := strictDecoder(t).Decode([]byte(doc), nil, nil)
		require.NoError(t, err)
		job := obj.(*v1.TrainingJob)
		v1.SetObjectDefaults_TrainingJob(job)
		assert.Empty(t, v1.Validate(job), "job %s", job.Name)
	}
}

// TestValidateInvalidCorpus runs the corpus of invalid jobs that the API
// server must also reject (test/integration checks that side) through the
// Go path the controller uses for objects that bypassed the schema. A job
// either cannot be decoded at all (wrong types, unknown keys), or Validate
// names the same field the API server names.
func TestValidateInvalidCorpus(t *testing.T) {
	corpus, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(corpus), 20)
	for _, c := range corpus {
		t.Run(c.Name, func(t *testing.T) {
			obj, _, err := strictDecoder(t).Decode(c.YAML, nil, nil)
			if err != nil {
				return // the API server never stores such an object; decoding rejects it here too
			}
			job := obj.(*v1.TrainingJob)
			v1.SetObjectDefaults_TrainingJob(job)
			errs := v1.Validate(job)
			require.NotEmpty(t, errs, "Validate accepted an invalid job")
			assert.Contains(t, errs.ToAggregate().Error(), c.Field)
		})
	}
}

func TestValidateMessages(t *testing.T) {
	job := &v1.TrainingJob{Spec: v1.TrainingJobSpec{
		Image:   "paddle",
		Trainer: v1.TrainerSpec{MinInstance: 4, MaxInstance: 2},
		Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1},
	}}
	v1.SetObjectDefaults_TrainingJob(job)
	errs := v1.Validate(job)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.trainer.min-instance: Invalid value: 4: min-instance must be less than or equal to max-instance", errs[0].Error())
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
