package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestPodsToKeep: which pods of a finished job each clean-pod policy
// keeps, a rule a case.
func TestPodsToKeep(t *testing.T) {
	healthy := trainerPod("healthy", builders.Ready())
	exited0 := trainerPod("exited-0", builders.Exited(0))
	crashed := trainerPod("crashed", builders.Exited(2))
	crashedBefore := trainerPod("crashed-before", builders.Ready(), builders.LastExited(1), builders.Restarts(1))
	goingCrashed := trainerPod("going-crashed", builders.Exited(2), builders.Terminating())
	all := []*corev1.Pod{healthy, exited0, crashed, crashedBefore, goingCrashed}
	for _, tc := range []struct {
		name   string
		policy v1.CleanPodPolicy
		failed bool
		want   []string
	}{
		{"Running: a failed job keeps the pods with a container that exited non-zero, now or in the run before", v1.CleanPodPolicyRunning, true, []string{"crashed", "crashed-before"}},
		{"Running: a job that succeeded keeps none", v1.CleanPodPolicyRunning, false, nil},
		{"None keeps every pod not being deleted", v1.CleanPodPolicyNone, true, []string{"healthy", "exited-0", "crashed", "crashed-before"}},
		{"None: of a job that succeeded too", v1.CleanPodPolicyNone, false, []string{"healthy", "exited-0", "crashed", "crashed-before"}},
		{"All keeps none", v1.CleanPodPolicyAll, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range podsToKeep(tc.policy, tc.failed, slim(all...)) {
				got = append(got, p.Name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, v1.CleanPodPolicyRunning, (&v1.TrainingJobSpec{}).CleanPods(), "the default")
}

// finishedJobFixture is a running plain job of three trainers whose pods
// the fake API server holds too (the controller patches and deletes a
// finished job's pods), then a trainer that exits 2 and fails it.
func finishedJobFixture(t *testing.T, policy v1.CleanPodPolicy) *fixture {
	t.Helper()
	job := builders.Job("mnist", testNamespace)
	if policy != "" {
		job.Spec.RunPolicy = &v1.RunPolicy{CleanPodPolicy: policy}
	}
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 3)
	pods := append(healthyPods(job, 3), trainerPod("mnist-trainer-z", builders.Exited(2)))
	for _, p := range pods {
		require.NoError(t, f.kube.Tracker().Add(p.DeepCopy()))
	}
	f.addPods(pods...)
	f.reset()
	require.NoError(t, f.sync("mnist"))
	require.Equal(t, v1.PhaseFailed, f.getJob("mnist").Status.Phase)
	return f
}

// TestSyncKeepsAFailedJobsFailedPods: by default a failed job keeps the
// trainer that failed, for its logs: its ReplicaSet is deleted leaving its
// pods, the failed one is taken out of it (labels), given to the job and
// stopped in one patch, the others are deleted, and an event names the pod
// kept. The roles with no failed pod scale to 0 as before. Later syncs
// change nothing and make no trainer ReplicaSet again.
func TestSyncKeepsAFailedJobsFailedPods(t *testing.T) {
	f := finishedJobFixture(t, "")

	var deletes []string
	for _, a := range f.writes() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			deletes = append(deletes, describe(a))
			if d.GetResource().Resource == "replicasets" {
				opts := d.GetDeleteOptions()
				require.NotNil(t, opts.PropagationPolicy)
				assert.Equal(t, metav1.DeletePropagationOrphan, *opts.PropagationPolicy, "the ReplicaSet's pods are left")
			}
		}
	}
	assert.ElementsMatch(t, []string{"delete replicasets mnist-trainer",
		"delete pods mnist-trainer-a", "delete pods mnist-trainer-b", "delete pods mnist-trainer-c"}, deletes)
	assert.Equal(t, []string{"patch pods mnist-trainer-z"}, f.writesOf("pods")[:1])
	assert.Equal(t, []string{"patch replicasets mnist-pserver", "delete replicasets mnist-trainer"}, f.writesOf("replicasets"))

	kept, err := f.kube.CoreV1().Pods(testNamespace).Get(f.ctx, "mnist-trainer-z", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, kept.Labels, v1.LabelTrainer, "no ReplicaSet of the job selects it")
	assert.Equal(t, "mnist", kept.Labels[v1.LabelKept])
	assert.Equal(t, "trainer", kept.Labels[v1.LabelKeptRole])
	require.Len(t, kept.OwnerReferences, 1)
	assert.Equal(t, "TrainingJob", kept.OwnerReferences[0].Kind, "it goes with the job")
	assert.Equal(t, ptr.To[int64](1), kept.Spec.ActiveDeadlineSeconds, "its kubelet stops it for good")
	assert.Contains(t, f.events(), "Normal PodsKept Kept trainer pods mnist-trainer-z, stopped, for their logs (spec.runPolicy.cleanPodPolicy Running)")

	// The informers catch up: the deleted pods go, the kept one is no
	// longer the job's, and the ReplicaSet is gone.
	for _, name := range []string{"mnist-trainer-a", "mnist-trainer-b", "mnist-trainer-c", "mnist-trainer-z"} {
		obj, ok, err := f.podIndexer().GetByKey(testNamespace + "/" + name)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, f.podIndexer().Delete(obj))
	}
	obj, ok, err := f.rsIndexer().GetByKey(testNamespace + "/mnist-trainer")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.rsIndexer().Delete(obj))
	f.feedBack()
	f.reset()
	require.NoError(t, f.sync("mnist"))
	assert.Empty(t, f.writesOf("replicasets"), "no trainer ReplicaSet again")
	assert.Empty(t, f.writesOf("pods"))
	assert.Equal(t, []string{"update trainingjobs/status mnist"}, f.writeStrings(), "the counts, the pods gone")
	f.feedBack()
	f.reset()
	require.NoError(t, f.sync("mnist"))
	assert.Empty(t, f.writeStrings())
	assert.Empty(t, f.events())
	assert.Equal(t, v1.PhaseFailed, f.getJob("mnist").Status.Phase)
}

// TestSyncFinishesAKeepItStoppedHalfWay: edl stopped part-way through
// keeping a failed job's pods (a restart, a failed write). The next sync
// finds the job's pods still labelled and no trainer ReplicaSet; it
// finishes the work and makes no ReplicaSet.
func TestSyncFinishesAKeepItStoppedHalfWay(t *testing.T) {
	for _, tc := range []struct {
		name string
		kept bool // the failed pod was patched before edl stopped
		want []string
	}{
		{"after the ReplicaSet's deletion", false, []string{"patch pods mnist-trainer-z",
			"delete pods mnist-trainer-a", "delete pods mnist-trainer-b", "delete pods mnist-trainer-c"}},
		{"after the failed pod's patch", true, []string{
			"delete pods mnist-trainer-a", "delete pods mnist-trainer-b", "delete pods mnist-trainer-c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := finishedJobFixture(t, "")
			rs, ok, err := f.rsIndexer().GetByKey(testNamespace + "/mnist-trainer")
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, f.rsIndexer().Delete(rs))
			// The pods as edl left them: the healthy trainers still there.
			for _, p := range healthyPods(f.getJob("mnist"), 3) {
				if p.Labels[v1.LabelTrainer] != "" {
					require.NoError(t, f.kube.Tracker().Add(p.DeepCopy()))
				}
			}
			if tc.kept {
				obj, ok, err := f.podIndexer().GetByKey(testNamespace + "/mnist-trainer-z")
				require.NoError(t, err)
				require.True(t, ok)
				require.NoError(t, f.podIndexer().Delete(obj)) // no longer the job's
			} else {
				require.NoError(t, f.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), testNamespace, "mnist-trainer-z"))
				require.NoError(t, f.kube.Tracker().Add(trainerPod("mnist-trainer-z", builders.Exited(2))))
			}
			f.feedBack()
			f.reset()

			require.NoError(t, f.sync("mnist"))
			assert.Empty(t, f.writesOf("replicasets"), "no trainer ReplicaSet again, the pserver's already at 0")
			assert.ElementsMatch(t, tc.want, f.writesOf("pods"))
			kept, err := f.kube.CoreV1().Pods(testNamespace).Get(f.ctx, "mnist-trainer-z", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "mnist", kept.Labels[v1.LabelKept])
		})
	}
}

// TestSyncKeepsWhatThePolicySays: None keeps every pod of every role,
// All none (every ReplicaSet scales to 0, as before runPolicy).
func TestSyncKeepsWhatThePolicySays(t *testing.T) {
	t.Run("None", func(t *testing.T) {
		f := finishedJobFixture(t, v1.CleanPodPolicyNone)
		assert.Equal(t, []string{"delete replicasets mnist-pserver", "delete replicasets mnist-trainer"}, f.writesOf("replicasets"))
		assert.ElementsMatch(t, []string{"patch pods mnist-pserver-a", "patch pods mnist-trainer-a", "patch pods mnist-trainer-b",
			"patch pods mnist-trainer-c", "patch pods mnist-trainer-z"}, f.writesOf("pods"))
	})
	t.Run("All", func(t *testing.T) {
		f := finishedJobFixture(t, v1.CleanPodPolicyAll)
		assert.Equal(t, []string{"patch replicasets mnist-pserver", "patch replicasets mnist-trainer"}, f.writesOf("replicasets"))
		assert.JSONEq(t, `[{"op":"replace","path":"/spec/replicas","value":0}]`, string(f.patchOf("replicasets", "mnist-trainer")))
		assert.Empty(t, f.writesOf("pods"))
	})
}

// TestKeepPatch: one merge patch drops the role's label, adds the kept
// labels, replaces the owner (the ReplicaSet) with the job and stops the
// pod.
func TestKeepPatch(t *testing.T) {
	job := builders.Job("mnist", testNamespace)
	patch, err := keepPatch(job, v1.RoleMaster)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(patch, &got))
	meta := got["metadata"].(map[string]any)
	assert.Equal(t, map[string]any{v1.LabelMaster: nil, v1.LabelKept: "mnist", v1.LabelKeptRole: "master"}, meta["labels"])
	owners := meta["ownerReferences"].([]any)
	require.Len(t, owners, 1)
	assert.Equal(t, "mnist", owners[0].(map[string]any)["name"])
	assert.Equal(t, map[string]any{"activeDeadlineSeconds": float64(1)}, got["spec"])
}

// TestSyncDeletesAJobPastItsTTL: a finished job with
// ttlSecondsAfterFinished is synced again when it is due, and deleted then;
// before, nothing is.
func TestSyncDeletesAJobPastItsTTL(t *testing.T) {
	clk := testingclock.NewFakeClock(builders.T0.Add(10 * time.Second))
	job := builders.Job("mnist", testNamespace,
		builders.JobPhase(v1.PhaseFailed, v1.ReasonTrainerFailed, "trainer pod mnist-trainer-z exited with code 2"),
		builders.Condition(v1.ConditionFailed, metav1.ConditionTrue, v1.ReasonTrainerFailed))
	job.Spec.RunPolicy = &v1.RunPolicy{TTLSecondsAfterFinished: ptr.To[int32](60)}
	f := newFixture(t, withStatusInterval(0, clk))
	f.addJob(job)
	f.addJobObjects(job, 0)
	f.reset()

	require.NoError(t, f.sync("mnist"))
	assert.NotContains(t, f.writeStrings(), "delete trainingjobs mnist", "50 s left")
	assert.Empty(t, f.queued(), "not before it is due")
	clk.Step(50 * time.Second)
	require.Eventually(t, func() bool { return f.c.queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond, "synced again when due")
	assert.Equal(t, []string{testNamespace + "/mnist"}, f.queued())

	f.reset()
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{"delete trainingjobs mnist"}, f.writeStrings(), "deleted, and nothing else written")
	_, err := f.tj.PaddlepaddleV1().TrainingJobs(testNamespace).Get(f.ctx, "mnist", metav1.GetOptions{})
	assert.True(t, err != nil, "the job is gone")
}
