package v1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// repoFile returns the path of a file relative to the repository root.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "..", rel)
}

// strictDecoder decodes like the API server with strict field validation:
// unknown and duplicate keys are errors.
func strictDecoder(t *testing.T) k8sruntime.Decoder {
	t.Helper()
	scheme := k8sruntime.NewScheme()
	require.NoError(t, v1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// originalJob is written the way the original EDL's users wrote jobs:
// hyphenated instance counts, snake_case ports, passes under trainer.
const originalJob = `
apiVersion: paddlepaddle.org/v1
kind: TrainingJob
metadata:
  name: mnist
  namespace: team-a
spec:
  image: paddlepaddle/paddlecloud-job
  port: 7164
  ports_num: 2
  ports_num_for_sparse: 3
  fault_tolerant: true
  hostNetwork: true
  nodeSelector:
    pool: gpu
  imagePullSecrets:
  - name: registry
  volumes:
  - name: data
    hostPath:
      path: /home/work
  volumeMounts:
  - name: data
    mountPath: /mnt/data
  trainer:
    entrypoint: python train.py
    workspace: /workspace
    passes: 10
    min-instance: 2
    max-instance: 6
    resources:
      requests:
        cpu: 500m
        memory: 600Mi
      limits:
        cpu: "1"
        memory: 1Gi
        nvidia.com/gpu: "1"
  pserver:
    min-instance: 2
    max-instance: 2
    resources:
      requests:
        cpu: 500m
  master:
    etcd-endpoint: 10.0.0.1:2379
    resources:
      requests:
        memory: 100Mi
`

func TestRoundTripOriginalKeys(t *testing.T) {
	example, err := os.ReadFile(repoFile(t, "example/examplejob.yaml"))
	require.NoError(t, err)

	cases := map[string]string{
		"inline job with every original key": originalJob,
		"example/examplejob.yaml":            string(example),
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, _, err := strictDecoder(t).Decode([]byte(doc), nil, nil)
			require.NoError(t, err)
			job, ok := obj.(*v1.TrainingJob)
			require.True(t, ok, "decoded a %T", obj)

			encoded, err := json.Marshal(job)
			require.NoError(t, err)
			var got, want map[string]any
			require.NoError(t, json.Unmarshal(encoded, &got))
			require.NoError(t, yaml.Unmarshal([]byte(doc), &want))
			delete(got, "status") // the status subresource is not part of a job file
			assert.Equal(t, want, got, "decoding and encoding again must give the same document")
		})
	}

	obj, _, err := strictDecoder(t).Decode([]byte(originalJob), nil, nil)
	require.NoError(t, err)
	job := obj.(*v1.TrainingJob)
	assert.Equal(t, int32(2), job.Spec.Trainer.MinInstance)
	assert.Equal(t, int32(6), job.Spec.Trainer.MaxInstance)
	assert.Equal(t, int32(10), job.Spec.TrainerPasses())
	assert.Equal(t, int32(2), job.Spec.DensePorts())
	assert.Equal(t, int32(3), job.Spec.SparsePorts())
	assert.Equal(t, "10.0.0.1:2379", job.Spec.Master.EtcdEndpoint)
	assert.Equal(t, "1", job.Spec.Trainer.Resources.Limits.Name("nvidia.com/gpu", "").String())
	assert.True(t, job.Spec.FaultTolerant)
	assert.True(t, job.Spec.HostNetwork)
}

func TestStrictDecodingNamesTheUnknownField(t *testing.T) {
	doc := `
apiVersion: paddlepaddle.org/v1
kind: TrainingJob
metadata: {name: typo}
spec:
  image: paddlepaddle/paddlecloud-job
  trainer: {min_instance: 1, max-instance: 2}
  pserver: {min-instance: 1, max-instance: 1}
`
	_, _, err := strictDecoder(t).Decode([]byte(doc), nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "spec.trainer.min_instance"`)
}

func TestDefaults(t *testing.T) {
	job := &v1.TrainingJob{Spec: v1.TrainingJobSpec{Passes: 7}}
	v1.SetObjectDefaults_TrainingJob(job)
	assert.Equal(t, v1.DefaultPort, job.Spec.FirstPort())
	assert.Equal(t, v1.DefaultPortsNum, job.Spec.DensePorts())
	assert.Equal(t, v1.DefaultPortsNumForSparse, job.Spec.SparsePorts())
	assert.Equal(t, v1.DefaultMaxRestarts, job.Spec.TrainerMaxRestarts())
	assert.Equal(t, int32(7), job.Spec.TrainerPasses(), "job-level passes apply when trainer.passes is unset")

	zero, port := int32(0), int32(8000)
	job = &v1.TrainingJob{Spec: v1.TrainingJobSpec{Port: &port, PortsNumForSparse: &zero}}
	job.Spec.Trainer.MaxRestarts = &zero
	v1.SetObjectDefaults_TrainingJob(job)
	assert.Equal(t, int32(8000), job.Spec.FirstPort(), "a set port is kept")
	assert.Equal(t, int32(0), job.Spec.SparsePorts(), "an explicit 0 sparse ports is kept")
	assert.Equal(t, int32(0), job.Spec.TrainerMaxRestarts(), "an explicit 0 restarts is kept")
}
