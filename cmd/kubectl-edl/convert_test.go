package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// runPluginIn runs the plugin with stdin.
func runPluginIn(stdin string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &stdout, ErrOut: &stderr})
	return code, stdout.String(), stderr.String()
}

// decodeJobs reads convert's output strictly, as kubectl apply's strict
// field validation would.
func decodeJobs(t *testing.T, stdout string) []*v1.TrainingJob {
	t.Helper()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stdout)))
	var jobs []*v1.TrainingJob
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return jobs
		}
		require.NoError(t, err)
		job := &v1.TrainingJob{}
		require.NoError(t, yaml.UnmarshalStrict(doc, job), "%s", doc)
		jobs = append(jobs, job)
	}
}

// noted is a stderr line of convert: the path it names and a part of what
// it says.
type noted struct{ path, says string }

// assertNotes asserts that stderr is exactly the lines want, in order, each
// "convert: <prefix><path>: ..." saying what want says.
func assertNotes(t *testing.T, stderr, prefix string, want []noted) {
	t.Helper()
	var lines []string
	if stderr != "" {
		lines = strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	}
	var paths, messages, wantPaths []string
	for _, line := range lines {
		rest, ok := strings.CutPrefix(line, "convert: "+prefix)
		assert.True(t, ok, "%q starts with convert: %s", line, prefix)
		path, message, _ := strings.Cut(rest, ": ")
		paths, messages = append(paths, path), append(messages, message)
	}
	for _, w := range want {
		wantPaths = append(wantPaths, w.path)
	}
	require.Equal(t, wantPaths, paths, "the fields noted:\n%s", stderr)
	for i, w := range want {
		if why, ok := strings.CutPrefix(w.says, notCarried); ok {
			assert.True(t, strings.HasPrefix(messages[i], notCarried), lines[i])
			assert.Contains(t, messages[i], why)
		} else {
			assert.Contains(t, messages[i], w.says)
		}
	}
}

// notCarried opens the note on a field that is not carried; a noted's
// says that starts with it asks for it, and for the rest anywhere after.
const notCarried = "not carried: "

// validated is v1.Validate of the job after defaulting, on a copy.
func validated(job *v1.TrainingJob) []string {
	defaulted := job.DeepCopy()
	v1.SetObjectDefaults_TrainingJob(defaulted)
	var fields []string
	for _, e := range v1.Validate(defaulted) {
		fields = append(fields, e.Field)
	}
	return fields
}

const restartsAlways = "not carried: EDL's trainers restart always, and a failure counts against spec.elasticPolicy.maxRestarts"

// TestConvertKubeflowExamples converts Kubeflow's own examples: each runs
// the same image and launch line, on all its replicas (or its elastic
// range), says on stderr exactly which fields it does not carry, and
// passes EDL's validation, but for the one whose container has no command.
func TestConvertKubeflowExamples(t *testing.T) {
	cases := []struct {
		file          string
		namespace     string
		image         string
		min, max      int32
		command, args []string
		env           []corev1.EnvVar
		policy        *v1.ElasticPolicy
		notes         []noted
		invalid       []string
	}{{
		file:  "cpu-demo_demo.yaml",
		image: "pytorch-cpu:py3.8", min: 2, max: 2,
		command: []string{"torchrun", "demo.py"},
		policy:  &v1.ElasticPolicy{NProcPerNode: ptr.To(int32(2))},
		notes: []noted{
			{"spec.pytorchReplicaSpecs.Master.restartPolicy", restartsAlways},
			{"spec.pytorchReplicaSpecs.Worker.restartPolicy", restartsAlways},
		},
	}, {
		file:  "elastic_echo_echo.yaml",
		image: "kubeflow/pytorch-elastic-example-echo:latest", min: 1, max: 2,
		command: []string{"python", "-m", "torch.distributed.run", "./echo.py"},
		env:     []corev1.EnvVar{{Name: "LOGLEVEL", Value: "DEBUG"}},
		policy:  &v1.ElasticPolicy{MaxRestarts: ptr.To(int32(100))},
		notes: []noted{
			{"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command[3]", "not carried: torchrun's --rdzv-backend is EDL's"},
		},
	}, {
		file:  "mnist_v1_pytorch_job_mnist_gloo.yaml",
		image: "kubeflow/pytorch-dist-mnist:latest", min: 2, max: 2,
		args: []string{"--backend", "gloo"},
		notes: []noted{
			{"spec.pytorchReplicaSpecs.Master.restartPolicy", restartsAlways},
			{"spec.pytorchReplicaSpecs.Worker.restartPolicy", restartsAlways},
			{"spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].command", "must be set before applying"},
		},
		invalid: []string{"spec.trainer.template.spec.containers[0].command"},
	}, {
		file: "simple.yaml", namespace: "kubeflow",
		image: "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727", min: 2, max: 2,
		command: []string{"python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"},
		notes: []noted{
			{"spec.pytorchReplicaSpecs.Master.restartPolicy", restartsAlways},
			{"spec.pytorchReplicaSpecs.Worker.restartPolicy", restartsAlways},
		},
	}}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			code, stdout, stderr := runPlugin("convert", "-f", filepath.Join("testdata", "kubeflow", c.file))
			require.Equal(t, 0, code, stderr)
			jobs := decodeJobs(t, stdout)
			require.Len(t, jobs, 1)
			job := jobs[0]
			assert.Equal(t, c.namespace, job.Namespace)
			assert.Equal(t, v1.FrameworkPyTorch, job.Spec.Framework)
			assert.Equal(t, c.image, job.Spec.Image)
			assert.Equal(t, c.min, job.Spec.Trainer.MinInstance, "min-instance")
			assert.Equal(t, c.max, job.Spec.Trainer.MaxInstance, "max-instance")
			assert.Equal(t, c.policy, job.Spec.ElasticPolicy)
			require.NotNil(t, job.Spec.Trainer.Template)
			containers := job.Spec.Trainer.Template.Spec.Containers
			require.Len(t, containers, 1)
			assert.Equal(t, "pytorch", containers[0].Name)
			assert.Empty(t, containers[0].Image, "the image is spec.image")
			assert.Equal(t, c.command, containers[0].Command, "the launch line")
			assert.Equal(t, c.args, containers[0].Args)
			assert.Equal(t, c.env, containers[0].Env)
			assert.Empty(t, job.Spec.Trainer.Template.Spec.RestartPolicy)
			assertNotes(t, stderr, "", c.notes)
			assert.Equal(t, c.invalid, validated(job), "what v1.Validate refuses")
		})
	}
}

// TestConvertSeveralDocuments converts every PyTorchJob of a file read
// from stdin, the documents separated by ---, each stderr line naming its
// job.
func TestConvertSeveralDocuments(t *testing.T) {
	input := pytorchJob(t, "a", nil) + "---\n# a comment only\n---\n" + pytorchJob(t, "b", map[string]string{
		"spec.runPolicy": "{activeDeadlineSeconds: 600}",
	})
	code, stdout, stderr := runPluginIn(input, "convert", "-f", "-")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, strings.Count(stdout, "\n---\n"), "two documents:\n%s", stdout)
	jobs := decodeJobs(t, stdout)
	require.Len(t, jobs, 2)
	assert.Equal(t, "a", jobs[0].Name)
	assert.Equal(t, "b", jobs[1].Name)
	assertNotes(t, stderr, "b: ", []noted{{"spec.runPolicy.activeDeadlineSeconds", "not carried: EDL sets no deadline on a running job"}})
}

// TestConvertRefusesWhatIsNotAPyTorchJob: anything but a file of
// PyTorchJobs is one line on stderr, a non-zero exit, and nothing on
// stdout, even when an earlier document converted.
func TestConvertRefusesWhatIsNotAPyTorchJob(t *testing.T) {
	cases := []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"a Pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", nil, 1,
			"convert -: document 1: a v1 Pod, not a kubeflow.org/v1 PyTorchJob"},
		{"a v1beta1 PyTorchJob", pytorchJob(t, "a", map[string]string{"apiVersion": "kubeflow.org/v1beta1"}), nil, 1,
			"a kubeflow.org/v1beta1 PyTorchJob, not a kubeflow.org/v1 PyTorchJob"},
		{"the second document", pytorchJob(t, "a", nil) + "---\nkind: TFJob\napiVersion: kubeflow.org/v1\n", nil, 1,
			"document 2: a kubeflow.org/v1 TFJob, not a kubeflow.org/v1 PyTorchJob"},
		{"no kind", "metadata: {name: x}\n", nil, 1, "document 1: no apiVersion and kind"},
		{"a list", "- a\n- b\n", nil, 1, "document 1 is not an object"},
		{"nothing", "# empty\n", nil, 1, "no kubeflow.org/v1 PyTorchJob in it"},
		{"a wrong type", pytorchJob(t, "a", map[string]string{"spec.pytorchReplicaSpecs.Worker.replicas": "two"}), nil, 1,
			`spec.pytorchReplicaSpecs.Worker.replicas: want an integer, not "two"`},
		{"a key twice", pytorchJob(t, "a", nil) + "metadata: {name: b}\n", nil, 1, `key "metadata" already set in map`},
		{"no -f", "", []string{"convert"}, 2, "name the file: -f FILE, or -f - for stdin"},
		{"no such file", "", []string{"convert", "-f", "nowhere.yaml"}, 2, "nowhere.yaml: no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if args == nil {
				args = []string{"convert", "-f", "-"}
			}
			code, stdout, stderr := runPluginIn(c.stdin, args...)
			assert.Equal(t, c.code, code)
			assert.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
			assert.True(t, strings.HasPrefix(stderr, "kubectl edl: "), stderr)
			assert.Contains(t, stderr, c.want)
		})
	}
}
