package realnode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// TestTrainerTemplateForReal: a trainer given, by its pod template, a
// variable from a Secret and a service account of its own sees both. Its
// launch line, the template's command, writes the variable where the test
// reads it, then trains; its progress reports reach EDL, which they can
// only under the account EDL bound its progress Role to: the template's.
func TestTrainerTemplateForReal(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	_, err = cp.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "wandb"}, StringData: map[string]string{"key": "s3cret"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "vision"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	ckpt := filepath.Join("/var/lib/edl-node", "checkpoints", ns)
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(ckpt) })
	job := torchJob(t, "", ckpt)
	job.Spec.Trainer.Entrypoint = ""
	job.Spec.Trainer.MaxInstance = 1
	job.Spec.Trainer.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		ServiceAccountName: "vision",
		Containers: []corev1.Container{{
			Name:    "pytorch",
			Command: []string{"sh", "-c", `echo "key=$WANDB_API_KEY" > /checkpoint/seen && exec python3 /workspace/train.py "$@"`, "train"},
			Args:    []string{"--epochs", "300", "--steps-per-epoch", "20"},
			Env: []corev1.EnvVar{{Name: "WANDB_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "wandb"}, Key: "key"}}}},
		}},
	}}
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	final := waitEnd(t, tj, ns, job.Name)
	log := readFile(t, filepath.Join(ckpt, "train.log"))
	require.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s: %s; train.log ends:\n%s", final.Status.Reason, final.Status.Message, tail(log, 8))
	assert.Equal(t, "key=s3cret\n", readFile(t, filepath.Join(ckpt, "seen")), "the trainer saw the Secret's value")
	rs, err := cp.Client.AppsV1().ReplicaSets(ns).Get(ctx, v1.ReplicaSetName(job.Name, v1.RoleTrainer), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "vision", rs.Spec.Template.Spec.ServiceAccountName, "the trainers run as the template's account")
	require.NotNil(t, final.Status.Progress, "the training's reports reached EDL under the template's account")
	assert.Positive(t, final.Status.Progress.Done, "the training's reports reached EDL under the template's account; train.log ends:\n%s", tail(log, 8))
	assert.Empty(t, final.Status.Progress.Error)
	assert.Regexp(t, `(?m)^final_loss=`, log)
}
