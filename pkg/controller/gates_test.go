package controller

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func withGang(on bool) func(*Config) { return func(c *Config) { c.GangAdmission = on } }

func gated() builders.PodOption {
	return func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "other.example/gate"}, {Name: v1.SchedulingGateAdmission}}
	}
}

// addGatedJobObjects seeds the objects the controller creates for a queued
// job: ReplicaSets of 0 replicas whose templates carry the admission gate.
func (f *fixture) addGatedJobObjects(job *v1.TrainingJob) {
	f.t.Helper()
	for _, role := range roles(job) {
		f.addReplicaSet(gate(ReplicaSet(job, role, 0, nil)))
		if role != v1.RoleTrainer {
			f.addService(Service(job, role))
		}
	}
}

// addServerPods stores pods server-side too, for the controller's patches.
func (f *fixture) addServerPods(pods ...*corev1.Pod) {
	f.t.Helper()
	for _, p := range pods {
		require.NoError(f.t, f.kube.Tracker().Add(p))
	}
	f.addPods(pods...)
}

func templateGated(rs *appsv1.ReplicaSet) bool { return gateIndex(&rs.Spec.Template.Spec) >= 0 }

func TestSyncGatesANewJobAndQueuesIt(t *testing.T) {
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.FaultTolerant()))
	require.NoError(t, f.sync("mnist"))

	for _, name := range []string{"mnist-master", "mnist-pserver", "mnist-trainer"} {
		rs := f.getReplicaSet(name)
		assert.True(t, templateGated(rs), "%s's template carries the admission gate", name)
		assert.Equal(t, int32(0), *rs.Spec.Replicas, "%s: a queued job holds no pod, so no node and no quota", name)
		want := gate(ReplicaSet(job, map[string]v1.Role{"mnist-master": v1.RoleMaster, "mnist-pserver": v1.RolePserver,
			"mnist-trainer": v1.RoleTrainer}[name], *rs.Spec.Replicas, nil))
		assert.Equal(t, want.Annotations[AnnotationTemplateHash], rs.Annotations[AnnotationTemplateHash], "the hash covers the gate")
	}
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseQueued, status.Phase)
	assert.Equal(t, v1.ReasonWaitingForAdmission, status.Reason)
	c := condition(status, v1.ConditionQueued)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, waitingMessage, c.Message)

	// Gated pods are no reason to write: the steady state writes nothing,
	// and a message the autoscaler wrote is the phase's.
	f.addPods(builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", gated()))
	f.settle("mnist")
	stored := f.getJob("mnist")
	for i := range stored.Status.Conditions {
		if stored.Status.Conditions[i].Type == v1.ConditionQueued {
			stored.Status.Conditions[i].Message = "position 2 of 3 in the queue: ..."
		}
	}
	f.updateJob(stored)
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, "position 2 of 3 in the queue: ...", f.getJob("mnist").Status.Message)
	f.settle("mnist")
	require.NoError(t, f.sync("mnist"))
	assert.Empty(t, f.writeStrings())
}

func TestSyncReleasesAnAdmittedJob(t *testing.T) {
	f := newFixture(t, withGang(true))
	job := builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForAdmission, "x"),
		builders.Condition(v1.ConditionQueued, metav1.ConditionFalse, v1.ReasonAdmitted))
	job = f.addJob(job)
	f.addGatedJobObjects(job)
	f.addServerPods(
		builders.RolePod(job, v1.RolePserver, "mnist-pserver-a", gated()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", gated()),
		builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-b"), // created after the template lost its gate
	)
	require.NoError(t, f.sync("mnist"))

	assert.ElementsMatch(t, []string{"patch pods mnist-pserver-a", "patch pods mnist-trainer-a"}, f.writesOf("pods"),
		"exactly the pods that carry the gate")
	var ops []map[string]any
	require.NoError(t, json.Unmarshal(f.patchOf("pods", "mnist-trainer-a"), &ops))
	assert.Equal(t, []map[string]any{
		{"op": "test", "path": "/spec/schedulingGates/1/name", "value": v1.SchedulingGateAdmission},
		{"op": "remove", "path": "/spec/schedulingGates/1", "value": nil},
	}, ops)
	for _, name := range []string{"mnist-pserver-a", "mnist-trainer-a"} {
		obj, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), testNamespace, name)
		require.NoError(t, err)
		assert.Equal(t, []corev1.PodSchedulingGate{{Name: "other.example/gate"}}, obj.(*corev1.Pod).Spec.SchedulingGates,
			"only EDL's gate goes")
	}
	for _, name := range []string{"mnist-pserver", "mnist-trainer"} {
		assert.False(t, templateGated(f.getReplicaSet(name)), "%s: trainers added later carry no gate", name)
	}
	assert.Equal(t, job.Spec.Pserver.MinInstance, *f.getReplicaSet("mnist-pserver").Spec.Replicas, "admitted: scaled up whole")
	assert.Equal(t, job.Spec.Trainer.MinInstance, *f.getReplicaSet("mnist-trainer").Spec.Replicas, "admitted: scaled up whole")
	assert.NotEqual(t, v1.PhaseQueued, f.getJob("mnist").Status.Phase)
	assert.Equal(t, metav1.ConditionFalse, condition(f.getJob("mnist").Status, v1.ConditionQueued).Status)
}

func TestSyncKeepsAJobStoredBeforeGangAdmission(t *testing.T) {
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseRunning, v1.ReasonRunning, "running")))
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	f.settle("mnist")
	require.NoError(t, f.sync("mnist"))
	assert.Empty(t, f.writeStrings(), "an ungated job that runs is left as it is")
	for _, name := range []string{"mnist-pserver", "mnist-trainer"} {
		assert.False(t, templateGated(f.getReplicaSet(name)))
	}
	assert.Nil(t, condition(f.getJob("mnist").Status, v1.ConditionQueued))
	assert.Equal(t, v1.PhaseRunning, f.getJob("mnist").Status.Phase)
}

func TestSyncHoldsAQueuedJobOfAnEarlierVersionAtZero(t *testing.T) {
	// Queued jobs used to get their pods, gated: such a job's ReplicaSets
	// are scaled to 0, so that it holds no quota while it waits.
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForAdmission, "x"),
		builders.Condition(v1.ConditionQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission)))
	for _, role := range roles(job) {
		f.addReplicaSet(gate(ReplicaSet(job, role, desiredReplicas(job, role, nil, false), nil)))
		if role != v1.RoleTrainer {
			f.addService(Service(job, role))
		}
	}
	f.addServerPods(builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", gated()))
	require.NoError(t, f.sync("mnist"))
	assert.ElementsMatch(t, []string{"patch replicasets mnist-pserver", "patch replicasets mnist-trainer"}, f.writesOf("replicasets"))
	assert.Empty(t, f.writesOf("pods"), "a queued job's gates stay")
	assert.Equal(t, int32(0), *f.getReplicaSet("mnist-trainer").Spec.Replicas)
	assert.Equal(t, int32(0), *f.getReplicaSet("mnist-pserver").Spec.Replicas)
	assert.Equal(t, v1.PhaseQueued, f.getJob("mnist").Status.Phase)
}

func TestSyncQueuesAJobWhoseStatusWriteWasLost(t *testing.T) {
	// The ReplicaSets were created gated, and edl stopped before the
	// status write: the gates say the job is queued.
	f := newFixture(t, withGang(true))
	job := f.addJob(builders.Job("mnist", testNamespace))
	f.addGatedJobObjects(job)
	require.NoError(t, f.sync("mnist"))
	assert.Empty(t, f.writesOf("replicasets"))
	assert.Empty(t, f.writesOf("pods"))
	assert.Equal(t, v1.PhaseQueued, f.getJob("mnist").Status.Phase)
}

func TestSyncReleasesQueuedJobsWhenGangAdmissionIsOff(t *testing.T) {
	f := newFixture(t, withGang(false))
	job := f.addJob(builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForAdmission, "x"),
		builders.Condition(v1.ConditionQueued, metav1.ConditionTrue, v1.ReasonWaitingForAdmission)))
	f.addGatedJobObjects(job)
	f.addServerPods(builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-a", gated()))
	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, []string{"patch pods mnist-trainer-a"}, f.writesOf("pods"))
	assert.False(t, templateGated(f.getReplicaSet("mnist-trainer")))
	c := condition(f.getJob("mnist").Status, v1.ConditionQueued)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1.ReasonAdmissionOff, c.Reason)
}

func TestSyncWithGangAdmissionOffCreatesUngatedJobs(t *testing.T) {
	f := newFixture(t)
	f.addJob(builders.Job("mnist", testNamespace))
	require.NoError(t, f.sync("mnist"))
	for _, a := range f.writes() {
		if create, ok := a.(clienttesting.CreateAction); ok {
			if rs, ok := create.GetObject().(*appsv1.ReplicaSet); ok {
				assert.False(t, templateGated(rs), rs.Name)
			}
		}
	}
	assert.Nil(t, condition(f.getJob("mnist").Status, v1.ConditionQueued))
}
