package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework"
	"github.com/paddlepaddle/edl/pkg/framework/pytorch"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// TestTorchExits: how the controller judges each exit of a PyTorch
// trainer, a rule a case.
func TestTorchExits(t *testing.T) {
	resize := metav1.NewTime(at(10 * time.Minute))
	master := at(20 * time.Minute) // the master's current run, e.g. after its pod was deleted
	for _, tc := range []struct {
		name     string
		code     int32
		run, end time.Duration // the run's start and end, from t0
		master   time.Time
		want     framework.Judgement
	}{
		{"an exit 0 is the training's end, never a failure", 0, 21 * time.Minute, 22 * time.Minute, master, framework.Excused},
		{"a run that fails on its own is a failure", 1, 21 * time.Minute, 22 * time.Minute, master, framework.Failed},
		{"a run a scale-down ended (it began before the resize, ended within the window)", 1, 5 * time.Minute, 11 * time.Minute, time.Time{}, framework.Excused},
		{"a run that began before a resize and failed long after it is a failure", 1, 5 * time.Minute, 10*time.Minute + pytorch.ResizeWindow + time.Second, at(0), framework.Failed},
		{"a run that began after the resize is not the resize's", 1, 10*time.Minute + time.Second, 11 * time.Minute, at(0), framework.Failed},
		{"a run that lost its master (it began before the master's current run)", 1, 15 * time.Minute, 19 * time.Minute, master, framework.Excused},
		{"a run that began before the master and failed long after the master came back", 1, 15 * time.Minute, 20*time.Minute + pytorch.MasterLossWindow + time.Second, master, framework.Failed},
		{"while no master runs, an exit waits", 1, 15 * time.Minute, 19 * time.Minute, time.Time{}, framework.Later},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term := &cluster.Termination{ExitCode: tc.code, StartedAt: metav1.NewTime(at(tc.run)), FinishedAt: metav1.NewTime(at(tc.end))}
			assert.Equal(t, tc.want, pytorch.Judge(term, &resize, tc.master))
		})
	}
}

// failing is a trainer pod whose last run began at run and failed with code
// at end, restarts times in all.
func failing(job *v1.TrainingJob, name string, restarts, code int32, run, end time.Duration) *corev1.Pod {
	return builders.RolePod(job, v1.RoleTrainer, name, builders.Ready(), builders.Restarts(restarts),
		builders.LastRun(code, at(run), at(end), "Traceback (most recent call last):\nValueError: bad flag"))
}

func runningMaster(job *v1.TrainingJob, name string, since time.Duration) *corev1.Pod {
	return builders.RolePod(job, v1.RoleMaster, name, builders.Ready(), builders.RunningSince(at(since)))
}

// TestTorchFailureBudget: a trainer EDL removes is never counted; a failure
// is counted once however often the status is computed; a pod that goes
// keeps its count; past maxRestarts the job fails, saying how its last
// failure ended.
func TestTorchFailureBudget(t *testing.T) {
	job := torchJob(builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](1)}))
	roles := roles(job)
	master := runningMaster(job, "mnist-master-0", 0)

	removed := builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-b", builders.Terminating(), builders.Exited(143))
	marked := failing(job, "mnist-trainer-c", 1, 1, time.Minute, 2*time.Minute)
	marked.Annotations = map[string]string{v1.AnnotationDeletionCost: v1.DeletionCostRemove}
	status := computeStatus(job, observation(job, roles, master, removed, marked), roles)
	assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
	assert.Zero(t, status.Resize.Failures, "the trainers EDL removes")

	first := failing(job, "mnist-trainer-d", 1, 1, time.Minute, 2*time.Minute)
	status = computeStatus(job, observation(job, roles, master, first), roles)
	assert.Equal(t, int32(1), status.Resize.Failures)
	assert.Equal(t, []v1.PodRestarts{{Pod: "mnist-trainer-d", Restarts: 1}}, status.Resize.Counted)
	require.NotNil(t, status.Resize.LastFailure)
	assert.Equal(t, v1.Failure{Time: metav1.NewTime(at(2 * time.Minute)), Pod: "mnist-trainer-d", ExitCode: 1,
		Message: "Traceback (most recent call last):\nValueError: bad flag"}, *status.Resize.LastFailure)
	assert.Equal(t, v1.PhaseRunning, status.Phase, "within the budget of 1")
	job.Status = status
	status = computeStatus(job, observation(job, roles, master, first), roles)
	assert.Equal(t, int32(1), status.Resize.Failures, "counted once")

	job.Status = status
	again := failing(job, "mnist-trainer-e", 1, 137, 3*time.Minute, 5*time.Minute)
	status = computeStatus(job, observation(job, roles, master, again), roles)
	assert.Equal(t, int32(2), status.Resize.Failures, "the pod that went keeps its count")
	assert.Equal(t, v1.PhaseFailed, status.Phase)
	assert.Equal(t, v1.ReasonTooManyFailures, status.Reason)
	assert.Equal(t, "the training failed 2 times, more than spec.elasticPolicy.maxRestarts 1; the last: pod mnist-trainer-e exited with code 137: Traceback (most recent call last): | ValueError: bad flag", status.Message)
}

// TestTorchGroupFailureCountsOnce: when a worker fails, its peers'
// collectives fail with it and every trainer's agent exits: one failure of
// the worker group, not one a trainer. The same trainer failing again is
// another failure.
func TestTorchGroupFailureCountsOnce(t *testing.T) {
	job := torchJob(builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](3)}))
	roles := roles(job)
	master := runningMaster(job, "mnist-master-0", 0)
	pods := func(restarts int32, end time.Duration) []*corev1.Pod {
		return []*corev1.Pod{master,
			failing(job, "mnist-trainer-a", restarts, 1, end-time.Minute, end),
			failing(job, "mnist-trainer-b", restarts, 1, end-time.Minute, end+2*time.Second),
			failing(job, "mnist-trainer-c", restarts, 1, end-time.Minute, end+5*time.Second)}
	}
	status := computeStatus(job, observation(job, roles, pods(1, 5*time.Minute)...), roles)
	assert.Equal(t, int32(1), status.Resize.Failures, "three trainers, one worker group")
	assert.Len(t, status.Resize.Counted, 3, "every exit is judged")
	job.Status = status
	status = computeStatus(job, observation(job, roles, pods(2, 10*time.Minute)...), roles)
	assert.Equal(t, int32(2), status.Resize.Failures, "the group failed again")
}

// TestTorchMasterLossIsNoFailure: the master pod holds the rendezvous
// store; when it goes, every trainer's agent exits. While no master runs
// those exits wait; once one runs, the runs that began before it are its
// loss's, not failures — at any number of trainers.
func TestTorchMasterLossIsNoFailure(t *testing.T) {
	job := torchJob(builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](0)}))
	roles := roles(job)
	lost := func(restarts int32) []*corev1.Pod {
		var pods []*corev1.Pod
		for i, name := range []string{"mnist-trainer-a", "mnist-trainer-b", "mnist-trainer-c"} {
			pods = append(pods, failing(job, name, restarts, 1, time.Minute, 10*time.Minute+time.Duration(i)*20*time.Second))
		}
		return pods
	}
	// The old master is gone, the new one not running yet.
	pending := builders.RolePod(job, v1.RoleMaster, "mnist-master-1")
	status := computeStatus(job, observation(job, roles, append(lost(1), pending)...), roles)
	assert.Zero(t, status.Resize.Failures)
	assert.Empty(t, status.Resize.Counted, "judged once the master runs")

	job.Status = status
	status = computeStatus(job, observation(job, roles, append(lost(2), runningMaster(job, "mnist-master-1", 11*time.Minute))...), roles)
	assert.Zero(t, status.Resize.Failures, "the master's loss costs a restart, not the job")
	assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
	assert.Len(t, status.Resize.Counted, 3)
}

// TestTorchScaleDownIsNoFailure: a scale-down's survivors lose their peers
// and restart; those runs began before the resize and are its own.
func TestTorchScaleDownIsNoFailure(t *testing.T) {
	job := torchJob(builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](0)}))
	job.Status.LastScale = &v1.ScaleRecord{Time: metav1.NewTime(at(10 * time.Minute)), From: 3, To: 2}
	roles := roles(job)
	status := computeStatus(job, observation(job, roles, runningMaster(job, "mnist-master-0", 0),
		failing(job, "mnist-trainer-a", 1, 1, time.Minute, 10*time.Minute+20*time.Second),
		failing(job, "mnist-trainer-b", 1, 1, time.Minute, 10*time.Minute+21*time.Second)), roles)
	assert.Zero(t, status.Resize.Failures)
	assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
}

// TestTorchSuccessIsNoFailure: a trainer whose training ended exits 0: the
// job's success. Its restart (the ReplicaSet's restartPolicy Always) is
// judged by that exit, not subtracted; once the job finished, its
// trainers' ends count no more.
func TestTorchSuccessIsNoFailure(t *testing.T) {
	job := torchJob(builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](0)}))
	roles := roles(job)
	master := runningMaster(job, "mnist-master-0", 0)
	done := builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", builders.Ready(), builders.Restarts(1),
		builders.LastRun(0, at(time.Minute), at(9*time.Minute), ""))
	status := computeStatus(job, observation(job, roles, master, done), roles)
	assert.Equal(t, v1.PhaseSucceeded, status.Phase, status.Message)
	assert.Zero(t, status.Resize.Failures, "the restart after an exit 0")

	job.Status = status
	torn := failing(job, "mnist-trainer-b", 1, 1, time.Minute, 10*time.Minute)
	status = computeStatus(job, observation(job, roles, master, done, torn), roles)
	assert.Equal(t, v1.PhaseSucceeded, status.Phase)
	assert.Zero(t, status.Resize.Failures, "a finished job's teardown")
}

// TestHorovodEndsWithItsLauncher: a Horovod job's end is horovodrun's: it
// succeeds when the launcher exits 0 (a trainer's sshd exiting 0 says
// nothing), and each non-zero exit of the launcher is a failure.
func TestHorovodEndsWithItsLauncher(t *testing.T) {
	job := builders.Job("hvd", testNamespace, builders.Horovod("python3 train.py"), builders.Trainers(2, 4),
		builders.Elastic(v1.ElasticPolicy{MaxRestarts: ptr.To[int32](1)}))
	roles := roles(job)
	launcher := func(restarts, code int32) *corev1.Pod {
		return builders.RolePod(job, v1.RoleMaster, "hvd-master-0", builders.Ready(), builders.RunningSince(at(time.Hour)),
			builders.Restarts(restarts), builders.LastRun(code, at(time.Minute), at(time.Hour), "horovodrun: training failed"))
	}
	sshd := builders.RolePod(job, v1.RoleTrainer, "hvd-trainer-a", builders.Ready(), builders.Restarts(3),
		builders.LastRun(0, at(time.Minute), at(2*time.Minute), ""))
	trainer := builders.RolePod(job, v1.RoleTrainer, "hvd-trainer-b", builders.Ready())

	status := computeStatus(job, observation(job, roles, builders.RolePod(job, v1.RoleMaster, "hvd-master-0", builders.Ready()), sshd, trainer), roles)
	assert.Equal(t, v1.PhaseRunning, status.Phase, "a trainer's exit 0 is not the job's end: %s", status.Message)
	assert.Zero(t, status.Resize.Failures, "a trainer's restarts are horovodrun's to judge")

	status = computeStatus(job, observation(job, roles, launcher(1, 1), sshd, trainer), roles)
	assert.Equal(t, int32(1), status.Resize.Failures)
	assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
	job.Status = status
	status = computeStatus(job, observation(job, roles, launcher(2, 1), sshd, trainer), roles)
	assert.Equal(t, v1.PhaseFailed, status.Phase)
	assert.Contains(t, status.Message, "pod hvd-master-0 exited with code 1: horovodrun: training failed")

	job.Status = v1.TrainingJobStatus{}
	status = computeStatus(job, observation(job, roles, launcher(1, 0), sshd, trainer), roles)
	assert.Equal(t, v1.PhaseSucceeded, status.Phase, status.Message)
	assert.Equal(t, "master pod hvd-master-0 container master exited with code 0", status.Message)
}
