package autoscaler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/controller"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// queuedJob returns a queued job (condition Queued True, phase Queued) with
// its gated pserver and trainer ReplicaSets: one pserver and min trainers,
// each of 1 CPU and 1 GiB.
func queuedJob(name string, minInstance int32, created time.Time) []runtime.Object {
	req := corev1.ResourceRequirements{Requests: builders.CPUMemory("1", "1Gi")}
	job := builders.Job(name, "ns", builders.Trainers(minInstance, minInstance+2), builders.TrainerResources(req),
		builders.Spec(func(s *v1.TrainingJobSpec) { s.Pserver.Resources = req }),
		builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForAdmission, "waiting"))
	job.UID, job.CreationTimestamp = types.UID(name+"-uid"), metav1.NewTime(created)
	job.Status.Conditions = []metav1.Condition{{Type: v1.ConditionQueued, Status: metav1.ConditionTrue,
		Reason: v1.ReasonWaitingForAdmission, Message: "waiting", LastTransitionTime: metav1.NewTime(created)}}
	out := []runtime.Object{job}
	for _, role := range []v1.Role{v1.RolePserver, v1.RoleTrainer} {
		replicas := job.Spec.Pserver.MinInstance
		if role == v1.RoleTrainer {
			replicas = minInstance
		}
		rs := controller.ReplicaSet(job, role, replicas, nil)
		rs = builders.ReplicaSet(rs, builders.ReplicaSetUID(types.UID(rs.Name+"-uid")), builders.Gated(v1.SchedulingGateAdmission))
		out = append(out, rs)
		for i := range replicas {
			out = append(out, builders.TemplatePod(rs, fmt.Sprintf("%s-%d", rs.Name, i), builders.CreatedAt(metav1.NewTime(created)),
				builders.Phase(corev1.PodPending), func(p *corev1.Pod) {
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled,
						Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
				}))
		}
	}
	return out
}

func statusUpdates(f *actuatorFixture) []*v1.TrainingJob {
	var out []*v1.TrainingJob
	for _, a := range f.writes() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*v1.TrainingJob))
		}
	}
	return out
}

func TestRunOnceAdmitsTheFirstQueuedJobThatFits(t *testing.T) {
	// 4 CPU: room for one of the two 3-CPU minimums. The older is admitted.
	created := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	objs := objects(queuedJob("young", 2, created.Add(time.Minute)), queuedJob("old", 2, created),
		[]runtime.Object{node("n1", "4", "64Gi")})
	rec := &fakeMetrics{}
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, GangAdmission: true, Metrics: rec}, objs...)
	f.scaler.RunOnce(context.Background())
	// The clock reads 12:00: old waited an hour, young 59 minutes.
	assert.Equal(t, []time.Duration{time.Hour}, rec.admitted, "the admitted job's wait since it entered the queue")
	assert.Equal(t, [][]time.Duration{{59 * time.Minute}}, rec.queued, "the waiting job's wait")

	updates := statusUpdates(f)
	require.Len(t, updates, 2)
	byName := map[string]*v1.TrainingJob{}
	for _, u := range updates {
		byName[u.Name] = u
	}
	admitted := meta.FindStatusCondition(byName["old"].Status.Conditions, v1.ConditionQueued)
	require.NotNil(t, admitted)
	assert.Equal(t, metav1.ConditionFalse, admitted.Status)
	assert.Equal(t, v1.ReasonAdmitted, admitted.Reason)
	assert.Equal(t, "admitted: its minimum, 1 pserver, 2 trainers, needs 3 CPU, 3072 MiB memory, 0 GPU and fits on 1 node", admitted.Message)
	assert.Equal(t, []string{"Normal Admitted Admitted: its minimum, 1 pserver, 2 trainers, needs 3 CPU, 3072 MiB memory, 0 GPU and fits on 1 node"},
		drain(f.recorder))

	waiting := meta.FindStatusCondition(byName["young"].Status.Conditions, v1.ConditionQueued)
	require.NotNil(t, waiting)
	assert.Equal(t, metav1.ConditionTrue, waiting.Status)
	assert.Contains(t, waiting.Message, "position 1 of 1 in the queue: its minimum, 1 pserver, 2 trainers, needs 3 CPU")
	assert.Equal(t, waiting.Message, byName["young"].Status.Message, "the Queued phase says the same")

	// The next plan, once the informer saw the writes, writes nothing new
	// for the waiting job: the admitted job's pods, still gated until the
	// controller removes the gates, keep their room.
	require.Eventually(t, func() bool {
		j, err := f.scaler.jobs.TrainingJobs("ns").Get("young")
		return err == nil && j.Status.Message == waiting.Message
	}, 5*time.Second, time.Millisecond)
	f.kube.ClearActions()
	f.tj.ClearActions()
	f.scaler.RunOnce(context.Background())
	for _, u := range statusUpdates(f) {
		assert.NotEqual(t, "young", u.Name, "an unchanged place in the queue is not written again")
	}
}

func TestRunOnceWithGangAdmissionOffAdmitsNothing(t *testing.T) {
	objs := objects(queuedJob("a", 2, time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)), []runtime.Object{node("n1", "4", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	f.scaler.RunOnce(context.Background())
	assert.Empty(t, f.writes())
}

func TestRunOnceDryRunAdmitsNothing(t *testing.T) {
	objs := objects(queuedJob("a", 2, time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)), []runtime.Object{node("n1", "4", "64Gi")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, GangAdmission: true, DryRun: true}, objs...)
	f.scaler.RunOnce(context.Background())
	assert.Empty(t, f.writes())
}

// TestAdmissionWaitCountsFromTheLastEntryIntoTheQueue: a job created a week
// ago and resumed ten minutes ago waited ten minutes, for the metrics as
// for the queue's order.
func TestAdmissionWaitCountsFromTheLastEntryIntoTheQueue(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) // the fixture's clock
	objs := queuedJob("resumed", 2, now.Add(-7*24*time.Hour))
	objs[0].(*v1.TrainingJob).Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Minute))
	rec := &fakeMetrics{}
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, GangAdmission: true, Metrics: rec},
		objects(objs, []runtime.Object{node("n1", "64", "64Gi")})...)
	f.scaler.RunOnce(context.Background())
	assert.Equal(t, []time.Duration{10 * time.Minute}, rec.admitted)
}
