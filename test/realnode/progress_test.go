package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// The progress run's length: long enough for a while at 3, a burst that
// shrinks the job to 1, a growth through 2 back to 3 and a stretch at 3
// after it for the ETA.
const (
	progressEpochs = 1400
	progressSteps  = 20
	// The example's global batch: 16 chunks of 512 samples.
	progressBatch = 16 * 512
)

// TestTorchProgressForReal: example/torchjob.yaml's training reports its
// progress through edl_progress. EDL grows it to 3, a burst of
// higher-priority pods shrinks it to 1, and it grows back as the burst
// goes, one pod at a time: through 2 to 3. The throughput EDL measured at
// 1, 2 and 3 trainers is within 10% of what the training's own log lines
// give at each size, and once 25% is done, with no resize after, the ETA
// is within 15% of the time left until it really ends, taken once the
// run at 3 has been measured for a minute.
//
// It runs under the fulfillment policy: the measurements need the job at
// each size, and on the two-core node the goodput policy, having measured
// 3 trainers slower than 1, rightly keeps the job at 1 (NoGain).
// TestGoodputGivesTheRoomToTheJobThatScales is goodput's proof.
func TestTorchProgressForReal(t *testing.T) {
	cp := plane(t)
	installed(t, cp)
	configure(t, cp, map[string]string{"policy": "fulfillment"})
	ns := namespace(t, cp)
	ctx := t.Context()
	tj, err := tjclient.NewForConfig(cp.Config)
	require.NoError(t, err)

	ckpt := filepath.Join("/var/lib/edl-node", "checkpoints", ns)
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(ckpt) })
	trainLog := filepath.Join(ckpt, "train.log")
	job := torchJob(t, fmt.Sprintf("--epochs %d --steps-per-epoch %d", progressEpochs, progressSteps), ckpt)
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	waitTraining(t, trainLog, 3, time.Time{})
	time.Sleep(35 * time.Second)
	burst := time.Now()
	web := webBurst(t, cp, ns, 2)
	waitTraining(t, trainLog, 1, burst)
	// A minute at 1: its windows, EDL's and the log's, each leave out a
	// run's start, and 35 s left them 10% apart (CI).
	time.Sleep(60 * time.Second)
	one := time.Now()
	scaleDeployment(t, cp, ns, web, 1)
	waitTraining(t, trainLog, 2, one)
	time.Sleep(35 * time.Second)
	two := time.Now()
	scaleDeployment(t, cp, ns, web, 0)
	regrown := waitTraining(t, trainLog, 3, two)

	// Once 25% is done, and the training at 3 has reported twice, the ETA.
	var predicted *v1.ProgressStatus
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil || got.Status.Progress == nil {
			return false, nil
		}
		p := got.Status.Progress
		// At 3 since regrown, its run measured for a minute: at
		// RunMeasured (20 s) the run's throughput, its trainers starting
		// beside the burst's pods going, came out 17% below its rest (CI).
		if p.Trainers == 3 && p.Reported.After(regrown) && p.RunMillis >= time.Minute.Milliseconds() &&
			p.Percent != nil && *p.Percent >= 25 && p.FinishesAt != nil {
			predicted = p.DeepCopy()
			return true, nil
		}
		return false, nil
	})
	require.NoError(t, err, "an ETA at 3 trainers once 25%% is done")
	final := waitEnd(t, tj, ns, job.Name)
	require.Equal(t, v1.PhaseSucceeded, final.Status.Phase, "%s: %s", final.Status.Reason, final.Status.Message)

	log := readFile(t, trainLog)
	ended := lastTime(t, log)
	left := ended.Sub(predicted.Reported.Time)
	off := predicted.FinishesAt.Sub(ended)
	t.Logf("at %d%% (%s) the ETA was %s, finishing at %s; it ended at %s: %s off of %s left",
		*predicted.Percent, predicted.Reported.Format(time.RFC3339), predicted.ETA, predicted.FinishesAt.Format(time.RFC3339), ended.Format(time.RFC3339), off, left)
	assert.LessOrEqual(t, off.Abs().Seconds(), 0.15*left.Seconds(), "the ETA within 15%% of the time left")

	fromLog := logThroughput(log)
	measured := map[int32]float64{}
	for _, m := range final.Status.Progress.Measured {
		measured[m.Trainers] += float64(m.Work) * 1000 / float64(m.Millis)
	}
	for _, n := range []int32{1, 2, 3} {
		require.Contains(t, measured, n, "measured at %d; measured %v", n, final.Status.Progress.Measured)
		require.Contains(t, fromLog, n, "the log at %d", n)
		t.Logf("%d trainers: EDL measured %.0f samples/s, the log gives %.0f", n, measured[n], fromLog[n])
		assert.InEpsilon(t, fromLog[n], measured[n], 0.10, "EDL's throughput at %d within 10%% of the log's", n)
	}
	assert.Empty(t, final.Status.Progress.Error)
	assert.NotNil(t, final.Status.Progress.Model, "a model fitted")
}

// scaleDeployment sets a Deployment's replicas.
func scaleDeployment(t *testing.T, cp *framework.ControlPlane, ns, name string, n int32) {
	t.Helper()
	_, err := cp.Client.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n), metav1.PatchOptions{})
	require.NoError(t, err)
}

var (
	progressEpochLine = regexp.MustCompile(`(?m)^epoch=(\d+) loss=\S+ world_size=(\d+) rank=0 time=([0-9.]+)$`)
	progressStartLine = regexp.MustCompile(`(?m)^training world_size=(\d+) rank=0 epoch=(\d+) step=(\d+) time=([0-9.]+)$`)
	progressEndLine   = regexp.MustCompile(`(?m)^final_loss=\S+ time=([0-9.]+)$`)
)

// logThroughput is the throughput at each world size that train.log's
// lines give: in each run (from one "training" line to the next), from its
// first epoch line to its last, the samples of the epochs between them over
// the time between them. Like EDL's, it leaves out a run's start, up to its
// first whole epoch.
func logThroughput(log string) map[int32]float64 {
	type run struct {
		world               int32
		first, last         float64 // times of the first and last epoch lines
		firstEpoch, lastEpo int
	}
	var runs []*run
	for _, line := range regexp.MustCompile(`(?m)^.*$`).FindAllString(log, -1) {
		if m := progressStartLine.FindStringSubmatch(line); m != nil {
			w, _ := strconv.Atoi(m[1])
			runs = append(runs, &run{world: int32(w)})
			continue
		}
		if m := progressEpochLine.FindStringSubmatch(line); m != nil && len(runs) > 0 {
			epoch, _ := strconv.Atoi(m[1])
			at, _ := strconv.ParseFloat(m[3], 64)
			r := runs[len(runs)-1]
			if r.first == 0 {
				r.first, r.firstEpoch = at, epoch
			}
			r.last, r.lastEpo = at, epoch
		}
	}
	samples, seconds := map[int32]float64{}, map[int32]float64{}
	for _, r := range runs {
		if r.last > r.first {
			samples[r.world] += float64((r.lastEpo-r.firstEpoch)*progressSteps) * progressBatch
			seconds[r.world] += r.last - r.first
		}
	}
	out := map[int32]float64{}
	for w := range samples {
		out[w] = samples[w] / seconds[w]
	}
	return out
}

// lastTime is when train.log says the training ended.
func lastTime(t *testing.T, log string) time.Time {
	t.Helper()
	m := progressEndLine.FindStringSubmatch(log)
	require.NotNil(t, m, "train.log ends with final_loss; it ends:\n%s", tail(log, 5))
	return unixTime(m[1])
}

// waitEnd waits until the job is Succeeded or Failed.
func waitEnd(t *testing.T, tj tjclient.Interface, ns, name string) *v1.TrainingJob {
	t.Helper()
	return waitEndWithin(t, tj, ns, name, 10*time.Minute)
}

// waitEndWithin is waitEnd for a job that may run up to timeout.
func waitEndWithin(t *testing.T, tj tjclient.Interface, ns, name string, timeout time.Duration) *v1.TrainingJob {
	t.Helper()
	var final *v1.TrainingJob
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		final, err = tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && (final.Status.Phase == v1.PhaseSucceeded || final.Status.Phase == v1.PhaseFailed), nil
	})
	require.NoError(t, err, "the job ends")
	return final
}
