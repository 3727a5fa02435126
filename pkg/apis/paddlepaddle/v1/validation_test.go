package v1_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// names the same field the API server names. For the jobs the schema admits
// (rules beyond its CEL cost budget), Validate is the only check, and its
// message is the corpus's.
func TestValidateInvalidCorpus(t *testing.T) {
	corpus, err := testcorpus.InvalidJobs()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(corpus), 50)
	for _, c := range corpus {
		t.Run(c.Name, func(t *testing.T) {
			obj, _, err := strictDecoder(t).Decode(c.YAML, nil, nil)
			if err != nil {
				require.False(t, c.SchemaAdmits, "a job the schema admits must decode: %v", err)
				return // the API server never stores such an object; decoding rejects it here too
			}
			job := obj.(*v1.TrainingJob)
			v1.SetObjectDefaults_TrainingJob(job)
			errs := v1.Validate(job)
			require.NotEmpty(t, errs, "Validate accepted an invalid job")
			msg := errs.ToAggregate().Error()
			assert.Contains(t, msg, c.Field)
			if c.SchemaAdmits {
				assert.Contains(t, msg, c.Message)
			}
		})
	}
}

// TestValidateValidCorpus: the edge-valid jobs pass, so the controller runs
// what the API server accepts.
func TestValidateValidCorpus(t *testing.T) {
	corpus, err := testcorpus.ValidJobs()
	require.NoError(t, err)
	require.NotEmpty(t, corpus)
	for _, c := range corpus {
		t.Run(c.Name, func(t *testing.T) {
			obj, _, err := strictDecoder(t).Decode(c.YAML, nil, nil)
			require.NoError(t, err)
			job := obj.(*v1.TrainingJob)
			v1.SetObjectDefaults_TrainingJob(job)
			assert.Empty(t, v1.Validate(job))
		})
	}
}

// TestValidateNames pins the job-name rules at their edges: the name goes
// into the Services <name>-master and <name>-pserver, DNS-1035 labels of at
// most 63 characters.
func TestValidateNames(t *testing.T) {
	assert.Equal(t, 55, v1.MaxNameLength)
	for name, valid := range map[string]bool{
		strings.Repeat("a", 55): true,
		strings.Repeat("a", 56): false,
		"a":                     true,
		"a-1":                   true,
		"a.b":                   false,
		"1a":                    false,
		"A":                     false,
		"a_b":                   false,
		"":                      false,
	} {
		job := validJob()
		job.Name = name
		errs := v1.Validate(job)
		if valid {
			assert.Empty(t, errs, "%q", name)
			continue
		}
		require.Len(t, errs, 1, "%q", name)
		assert.Equal(t, "metadata.name", errs[0].Field, "%q", name)
	}
}

// TestValidateResources pins the API server's container resource rules,
// which Validate applies to every resource name, case by case.
func TestValidateResources(t *testing.T) {
	cases := []struct {
		name             string
		requests, limits map[string]string
		field, message   string // "" when valid
	}{
		{name: "cpu request below limit", requests: map[string]string{"cpu": "1"}, limits: map[string]string{"cpu": "2"}},
		{name: "cpu request without limit", requests: map[string]string{"cpu": "1"}},
		{name: "cpu request above limit", requests: map[string]string{"cpu": "3"}, limits: map[string]string{"cpu": "2"},
			field: "requests[cpu]", message: "a request must not exceed its limit"},
		{name: "negative memory", requests: map[string]string{"memory": "-1"},
			field: "requests[memory]", message: "requests must be non-negative quantities"},
		{name: "gpu limit alone", limits: map[string]string{"nvidia.com/gpu": "1"}},
		{name: "gpu request equal to limit", requests: map[string]string{"nvidia.com/gpu": "2"}, limits: map[string]string{"nvidia.com/gpu": "2"}},
		{name: "gpu 1000m is whole", requests: map[string]string{"nvidia.com/gpu": "1000m"}, limits: map[string]string{"nvidia.com/gpu": "1"}},
		{name: "gpu half", limits: map[string]string{"nvidia.com/gpu": "0.5"},
			field: "limits[nvidia.com/gpu]", message: "nvidia.com/gpu must be a whole number"},
		{name: "gpu request without limit", requests: map[string]string{"nvidia.com/gpu": "1"},
			field: "limits[nvidia.com/gpu]", message: "request needs a limit equal to it"},
		{name: "gpu request above limit", requests: map[string]string{"nvidia.com/gpu": "2"}, limits: map[string]string{"nvidia.com/gpu": "1"},
			field: "requests[nvidia.com/gpu]", message: "request must equal its limit"},
		{name: "kubernetes.io resource overcommits", requests: map[string]string{"example.kubernetes.io/widget": "500m"}},
		{name: "requests. prefix", limits: map[string]string{"requests.example.com/widget": "1"},
			field: "limits[requests.example.com/widget]", message: "extended resource name standard"},
		{name: "unqualified", limits: map[string]string{"fpga": "1"},
			field: "limits[fpga]", message: "must be a standard resource for containers"},
		{name: "pods is not a container resource", limits: map[string]string{"pods": "1"},
			field: "limits[pods]", message: "must be a standard resource for containers"},
		{name: "hugepages with memory", requests: map[string]string{"memory": "1Gi", "hugepages-1Gi": "2Gi"}, limits: map[string]string{"hugepages-1Gi": "2Gi"}},
		{name: "hugepages request without limit", requests: map[string]string{"memory": "1Gi", "hugepages-2Mi": "2Mi"},
			field: "limits[hugepages-2Mi]", message: "request needs a limit equal to it"},
		{name: "hugepages of no size", limits: map[string]string{"memory": "1Gi", "hugepages-big": "2Mi"},
			field: "limits[hugepages-big]", message: "not a positive integer multiple"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := validJob()
			job.Spec.Trainer.Resources = corev1.ResourceRequirements{Requests: quantities(c.requests), Limits: quantities(c.limits)}
			errs := v1.Validate(job)
			if c.field == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Equal(t, "spec.trainer.resources."+c.field, errs[0].Field)
			assert.Contains(t, errs.ToAggregate().Error(), c.message)
		})
	}
}

func quantities(m map[string]string) corev1.ResourceList {
	if m == nil {
		return nil
	}
	list := corev1.ResourceList{}
	for k, v := range m {
		list[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return list
}

// validJob is a small defaulted job that Validate accepts.
func validJob() *v1.TrainingJob {
	job := &v1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: v1.TrainingJobSpec{
			Image:   "paddle",
			Trainer: v1.TrainerSpec{MinInstance: 1, MaxInstance: 2},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1},
		},
	}
	v1.SetObjectDefaults_TrainingJob(job)
	return job
}

func TestValidateMessages(t *testing.T) {
	job := validJob()
	job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance = 4, 2
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

// TestValidateCountsVolumes: more volumes or mounts than the CRD's maxItems
// are refused naming the list, as the API server refuses them.
func TestValidateCountsVolumes(t *testing.T) {
	job := &v1.TrainingJob{Spec: v1.TrainingJobSpec{Image: "paddlepaddle/paddlecloud-job",
		Trainer: v1.TrainerSpec{MinInstance: 1, MaxInstance: 1}, Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1}}}
	job.Name = "many-volumes"
	for i := range v1.MaxVolumes + 1 {
		name := fmt.Sprintf("v%d", i)
		job.Spec.Volumes = append(job.Spec.Volumes, corev1.Volume{Name: name})
		job.Spec.VolumeMounts = append(job.Spec.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + name})
	}
	v1.SetObjectDefaults_TrainingJob(job)
	msg := v1.Validate(job).ToAggregate().Error()
	assert.Contains(t, msg, "spec.volumes: Too many: 129: must have at most 128 items")
	assert.Contains(t, msg, "spec.volumeMounts: Too many: 129: must have at most 128 items")

	job.Spec.Volumes, job.Spec.VolumeMounts = job.Spec.Volumes[:v1.MaxVolumes], job.Spec.VolumeMounts[:v1.MaxVolumes]
	assert.Empty(t, v1.Validate(job))
}
