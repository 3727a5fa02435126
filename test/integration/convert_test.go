package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/paddlepaddle/edl/pkg/kubeflow"
	"github.com/paddlepaddle/edl/test/framework"
)

// TestConvertedKubeflowJobsAreAccepted converts each of Kubeflow's example
// PyTorchJobs in cmd/kubectl-edl/testdata/kubeflow with the function
// `kubectl edl convert` runs, and creates the YAML it prints on the real
// API server with strict field validation, as `kubectl apply` would, in
// the namespace the file names (created when missing) or one of the
// test's. Each is accepted and reads back as converted. (The job whose
// container has no command is accepted too: the controller is the one that
// refuses it, naming the field.)
func TestConvertedKubeflowJobsAreAccepted(t *testing.T) {
	installCRD(t)
	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "cmd", "kubectl-edl", "testdata", "kubeflow", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 4, "Kubeflow's four examples")
	client, err := dynamic.NewForConfig(cp.Config)
	require.NoError(t, err)

	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			jobs, err := kubeflow.ConvertYAML(data)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			out, err := jobs[0].YAML()
			require.NoError(t, err)
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(out, &obj.Object))

			ns := obj.GetNamespace()
			if ns == "" {
				ns = cp.NewNamespace(t)
			} else {
				ensureNamespace(t, ns)
			}
			ctx := testContext(t)
			_, err = client.Resource(trainingJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
			require.NoError(t, err, "the API server refuses what convert printed:\n%s", out)
			t.Cleanup(func() {
				err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
				assert.NoError(t, err)
			})

			stored, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
			require.NoError(t, err)
			want := jobs[0].TrainingJob.Spec
			assert.Equal(t, want.Image, stored.Spec.Image)
			assert.Equal(t, want.Trainer.MinInstance, stored.Spec.Trainer.MinInstance)
			assert.Equal(t, want.Trainer.MaxInstance, stored.Spec.Trainer.MaxInstance)
			require.NotNil(t, stored.Spec.Trainer.Template, "the schema kept the trainer's template")
			require.NotEmpty(t, stored.Spec.Trainer.Template.Spec.Containers)
			got := stored.Spec.Trainer.Template.Spec.Containers[0]
			assert.Equal(t, want.Trainer.Template.Spec.Containers[0].Command, got.Command, "the launch line")
			assert.Equal(t, want.Trainer.Template.Spec.Containers[0].Args, got.Args)
		})
	}
}

// ensureNamespace creates namespace ns unless it exists, and deletes it
// after the test when it created it.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := cp.Client.CoreV1().Namespaces().Create(testContext(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}))
	})
}
