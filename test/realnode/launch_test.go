package realnode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
)

// TestTorchLaunchLinesAsWritten: a trainer's entrypoint is the user's own
// launch line. Four copies of the example job, each launched its own way —
// torchrun, python3 -m torch.distributed.run, python3 -u and python3 —
// start at one trainer, grow to two (a resize: every worker restarts),
// train at two and end Succeeded with their final loss. They run together,
// each trainer asking for 100m CPU, so that the four jobs at two trainers
// fit the room growth may fill beside their four masters (100m each).
func TestTorchLaunchLinesAsWritten(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	lines := map[string]string{
		"torchrun":   "torchrun /workspace/train.py",
		"module":     "python3 -m torch.distributed.run /workspace/train.py",
		"unbuffered": "python3 -u /workspace/train.py",
		"python":     "python3 /workspace/train.py",
	}
	trainerCPU := resource.MustParse("100m")
	master := torchJob(t, "", t.TempDir()).Spec.Master.Resources.Requests.Cpu().MilliValue()
	need := int64(len(lines)) * (master + 2*trainerCPU.MilliValue())
	require.GreaterOrEqual(t, trainerRoom(t, cp), need, "the node's room for %d jobs of a master and two trainers", len(lines))
	logs := map[string]string{}
	for name, line := range lines {
		ckpt := filepath.Join("/var/lib/edl-node", "checkpoints", ns, name)
		require.NoError(t, os.MkdirAll(ckpt, 0o755))
		t.Cleanup(func() { _ = os.RemoveAll(ckpt) })
		job := torchJob(t, "", ckpt)
		job.Name = name
		job.Spec.Trainer.Entrypoint = line + " --epochs 200 --steps-per-epoch 20"
		job.Spec.Trainer.MaxInstance = 2
		job.Spec.Trainer.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: trainerCPU, corev1.ResourceMemory: resource.MustParse("512Mi")}
		_, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
		require.NoError(t, err, "%s: %s", name, line)
		logs[name] = filepath.Join(ckpt, "train.log")
	}
	for name, line := range lines {
		final := waitEnd(t, tj, ns, name) // they run together: the first wait is most of the others'
		log := readFile(t, logs[name])
		assert.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s (%s): %s: %s; train.log ends:\n%s", name, line, final.Status.Reason, final.Status.Message, tail(log, 8))
		worlds := map[string]bool{}
		for _, m := range trainingLine.FindAllStringSubmatch(log, -1) {
			worlds[m[1]] = true
		}
		// Admitted at 1, grown to 2: a resize, after which it trained at 2.
		// (Its run at 1 may end before the script's first line.)
		assert.GreaterOrEqual(t, final.Status.Resize.Count, int32(1), "%s (%s) resized", name, line)
		assert.True(t, worlds["2"], "%s (%s) trained at 2 trainers; its runs: %v", name, line, worlds)
		assert.Regexp(t, `(?m)^final_loss=`, log, "%s (%s) wrote its final loss", name, line)
		t.Logf("%s: %s: %s, %d resizes, trained at %v", name, line, final.Status.Phase, final.Status.Resize.Count, worlds)
	}
}
