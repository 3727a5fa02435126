package realnode

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

var (
	exampleEpochLine = regexp.MustCompile(`(?m)^epoch=(\d+) `)
	exampleStartLine = regexp.MustCompile(`(?m)^training world_size=\d+ rank=0 epoch=(\d+) step=\d+ time=([0-9.]+)$`)
)

// TestExampleKeepsItsProgress: example/torchjob.yaml, applied unchanged,
// its claim bound to the volume the local cluster gives it on the real
// node, grows (a resize: every worker restarts) and never trains from
// scratch again. Once it has trained a few epochs every trainer pod is
// lost at once, so the next run's rank 0 is in a pod that never held the
// checkpoint: it resumes from the last epoch, which only the shared volume
// kept.
func TestExampleKeepsItsProgress(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)
	dir, err := cp.SharedVolume(ctx, ns, "torch-checkpoints")
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.DeleteSharedVolume(context.Background(), ns, "torch-checkpoints") })

	root, err := framework.ModuleRoot()
	require.NoError(t, err)
	out, err := cp.Kubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(root, "example", "torchjob.yaml"))
	require.NoError(t, err, out)
	const name = "torch-example"
	trainLog := filepath.Join(dir, "train.log")

	// A few epochs trained.
	var before int
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		before = lastEpoch(readIfAny(trainLog))
		return before >= 3, nil
	})
	require.NoError(t, err, "three epochs in %s; it holds:\n%s", trainLog, tail(readIfAny(trainLog), 8))
	selector := metav1.ListOptions{LabelSelector: v1.LabelTrainer + "=" + name}
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, selector)
	require.NoError(t, err)
	lost := map[string]bool{}
	for _, p := range pods.Items {
		lost[p.Name] = true
	}
	cut := time.Now()
	before = lastEpoch(readIfAny(trainLog)) // the checkpoint holds at least this epoch
	require.NoError(t, cp.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, selector))

	final := waitEnd(t, tj, ns, name)
	log := readFile(t, trainLog)
	require.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s: %s; train.log ends:\n%s", final.Status.Reason, final.Status.Message, tail(log, 8))
	assert.GreaterOrEqual(t, final.Status.Resize.Count, int32(1), "it grew: a resize")
	starts := exampleStartLine.FindAllStringSubmatch(log, -1)
	require.NotEmpty(t, starts)
	resumedAfterCut := 0
	for i, s := range starts {
		epoch, _ := strconv.Atoi(s[1])
		at, _ := strconv.ParseFloat(s[2], 64)
		if i > 0 {
			assert.Greater(t, epoch, 1, "run %d (%s) resumed, not from scratch", i, s[0])
		}
		if time.Unix(0, int64(at*1e9)).After(cut) && resumedAfterCut == 0 {
			resumedAfterCut = epoch
		}
	}
	assert.Greater(t, resumedAfterCut, before, "the run after every trainer pod was lost resumed after epoch %d; train.log:\n%s", before, tail(log, 20))
	assert.Regexp(t, `(?m)^final_loss=`, log)
	// The last report's run names its pod: rank 0's at the end, a pod
	// made after the loss.
	require.NotNil(t, final.Status.Progress, "the training reported")
	pod, _, _ := strings.Cut(final.Status.Progress.Run, "/")
	assert.NotEmpty(t, pod)
	assert.False(t, lost[pod], "the last run's rank 0, in pod %s, is not in one of the pods lost: %v", pod, lost)
	t.Logf("trained to epoch %d, lost every trainer pod (%d), resumed at epoch %d; %d runs, %d resizes",
		before, len(lost), resumedAfterCut, len(starts), final.Status.Resize.Count)
}

// lastEpoch is the last epoch line's epoch in a train.log, 0 for none.
func lastEpoch(log string) int {
	m := exampleEpochLine.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// readIfAny is a file's text, "" while it does not exist.
func readIfAny(path string) string {
	data, err := os.ReadFile(path) // #nosec G304 -- the test's own file
	if err != nil {
		return ""
	}
	return string(data)
}
