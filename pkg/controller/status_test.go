package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// trainerPod, pserverPod and masterPod build pods of the job named "mnist",
// whatever its spec.
func trainerPod(name string, muts ...builders.PodOption) *corev1.Pod {
	return builders.RolePod(builders.Job("mnist", testNamespace), v1.RoleTrainer, name, muts...)
}

func pserverPod(name string, muts ...builders.PodOption) *corev1.Pod {
	return builders.RolePod(builders.Job("mnist", testNamespace), v1.RolePserver, name, muts...)
}

func masterPod(name string, muts ...builders.PodOption) *corev1.Pod {
	return builders.RolePod(builders.Job("mnist", testNamespace), v1.RoleMaster, name, muts...)
}

// observation builds what the listers would hold: the job's own ReplicaSets
// for the given roles (at their desired replicas) with their Services, and
// the pods by role as the informer caches them (cluster.TransformPod).
func observation(job *v1.TrainingJob, rsRoles []v1.Role, pods ...*corev1.Pod) observed {
	obs := observed{replicaSets: map[v1.Role]*appsv1.ReplicaSet{}, services: map[v1.Role]*corev1.Service{}, pods: map[v1.Role][]*cluster.Pod{}}
	for _, role := range rsRoles {
		obs.replicaSets[role] = ReplicaSet(job, role, desiredReplicas(job, role, nil, false), nil)
		if role != v1.RoleTrainer {
			obs.services[role] = Service(job, role)
		}
	}
	for _, p := range slim(pods...) {
		for _, role := range allRoles {
			if p.Labels[v1.LabelFor(role)] == job.Name {
				obs.pods[role] = append(obs.pods[role], p)
			}
		}
	}
	return obs
}

func withoutService(obs observed, role v1.Role) observed {
	delete(obs.services, role)
	return obs
}

func refusedBy(obs observed, refused ...refusal) observed {
	obs.refused = refused
	return obs
}

// exitedWith: the container terminated with code and the kubelet's reason,
// and the pod is not ready (kwok's pod-exit stage).
func exitedWith(code int32, reason string) builders.PodOption {
	return func(p *corev1.Pod) {
		builders.NotReady()(p)
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	}
}

// crashLooping: the container's last run terminated with code and reason,
// and the kubelet waits before it starts it again.
func crashLooping(code int32, reason string) builders.PodOption {
	return func(p *corev1.Pod) {
		builders.NotReady()(p)
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	}
}

func blockedBy(obs observed, objects ...string) observed {
	obs.blocked = objects
	return obs
}

func TestJudge(t *testing.T) {
	plain := builders.Job("mnist", testNamespace)
	ft := builders.Job("mnist", testNamespace, builders.FaultTolerant())
	all := func(job *v1.TrainingJob) []v1.Role { return roles(job) }
	// healthy pods of a plain job: one ready pserver, two running trainers.
	healthy := []*corev1.Pod{pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running())}
	with := func(extra ...*corev1.Pod) []*corev1.Pod {
		return append(append([]*corev1.Pod(nil), healthy...), extra...)
	}

	tests := []struct {
		name       string
		job        *v1.TrainingJob
		obs        observed
		wantPhase  v1.TrainingJobPhase
		wantReason string
		wantMsg    []string
	}{
		// Creating
		{name: "no ReplicaSets yet", job: plain, obs: observation(plain, nil),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonCreating},
		{name: "trainer ReplicaSet missing", job: plain, obs: observation(plain, []v1.Role{v1.RolePserver}, healthy...),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonCreating},
		{name: "fault-tolerant job without its master ReplicaSet", job: ft, obs: observation(ft, []v1.Role{v1.RolePserver, v1.RoleTrainer}),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonCreating},
		{name: "ReplicaSets without pods", job: plain, obs: observation(plain, all(plain)),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting, wantMsg: []string{"0/2 trainers running", "0/1 pservers ready"}},
		{name: "pods pending", job: plain, obs: observation(plain, all(plain), pserverPod("mnist-pserver-a"), trainerPod("mnist-trainer-a"), trainerPod("mnist-trainer-b")),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting},
		{name: "pserver running but not ready", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.NotReady()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running())),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting, wantMsg: []string{"2/2 trainers running", "0/1 pservers ready"}},
		{name: "fewer trainers running than min-instance", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b")),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting, wantMsg: []string{"1/2 trainers running"}},
		{name: "running trainers being deleted do not count", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running(), builders.Terminating())),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting},
		{name: "fault-tolerant job with its master not ready", job: ft,
			obs:       observation(ft, all(ft), append(with(), masterPod("mnist-master-a", builders.NotReady()))...),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting},

		// Pending
		{name: "a trainer cannot be scheduled", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Unschedulable("0/3 nodes are available: 3 Insufficient cpu."))),
			wantPhase: v1.PhasePending, wantReason: v1.ReasonUnschedulable, wantMsg: []string{"1 pods", "mnist-trainer-b", "Insufficient cpu"}},
		{name: "a pserver cannot be scheduled", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Unschedulable("0/3 nodes are available: 3 Insufficient memory."))),
			wantPhase: v1.PhasePending, wantReason: v1.ReasonUnschedulable, wantMsg: []string{"mnist-pserver-a", "Insufficient memory"}},
		{name: "a scheduled pod with a stale Unschedulable condition is starting", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Unschedulable("old"), builders.OnNode("node-1"))),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPodsStarting},
		{name: "an object in the way", job: plain, obs: blockedBy(observation(plain, []v1.Role{v1.RolePserver}), "ReplicaSet mnist-trainer"),
			wantPhase: v1.PhasePending, wantReason: v1.ReasonBlocked, wantMsg: []string{"ReplicaSet mnist-trainer"}},

		// Running
		{name: "pservers ready and min-instance trainers running", job: plain, obs: observation(plain, all(plain), healthy...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning, wantMsg: []string{"2 trainers running (min 2, max 6)", "1 pservers ready"}},
		{name: "running with some trainers unschedulable above min", job: plain,
			obs:       observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Unschedulable("0/3 nodes are available")))...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},
		{name: "fault-tolerant job with its master ready", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", builders.Ready()))...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},

		// A failing master or pserver of a fault-tolerant job
		{name: "a fault-tolerant pserver exited non-zero", job: ft,
			obs:       observation(ft, all(ft), masterPod("mnist-master-a", builders.Ready()), pserverPod("mnist-pserver-a", exitedWith(1, "Error")), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running())),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonPserverFailing,
			wantMsg: []string{"pserver pod mnist-pserver-a container pserver exited with code 1 (Error)", "restarted 0 times", "trainer.max-restarts 5", "the autoscaler leaves the job alone"}},
		{name: "a fault-tolerant master crash-loops", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", crashLooping(137, "OOMKilled"), builders.Restarts(3)))...),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonMasterFailing,
			wantMsg: []string{"master pod mnist-master-a container master exited with code 137 (OOMKilled), CrashLoopBackOff", "restarted 3 times"}},

		// The API server refuses something
		{name: "a Service missing", job: plain, obs: withoutService(observation(plain, all(plain), healthy...), v1.RolePserver),
			wantPhase: v1.PhaseCreating, wantReason: v1.ReasonCreating},
		{name: "a Service refused", job: plain,
			obs:       refusedBy(withoutService(observation(plain, all(plain), healthy...), v1.RolePserver), refusal{reason: v1.ReasonInvalid, line: "the API server refused to create Service mnist-pserver: no"}),
			wantPhase: v1.PhasePending, wantReason: v1.ReasonChildRefused, wantMsg: []string{"create Service mnist-pserver: no"}},
		{name: "pods refused", job: plain,
			obs:       refusedBy(observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Ready())), refusal{reason: v1.ReasonQuotaExceeded, line: "quota", pods: true}),
			wantPhase: v1.PhasePending, wantReason: v1.ReasonChildRefused, wantMsg: []string{"quota"}},
		{name: "pods above min-instance refused", job: plain,
			obs:       refusedBy(observation(plain, all(plain), healthy...), refusal{reason: v1.ReasonQuotaExceeded, line: "quota", pods: true}),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},

		// Succeeded
		{name: "a trainer exited 0", job: plain, obs: observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Exited(0)))...),
			wantPhase: v1.PhaseSucceeded, wantReason: v1.ReasonSucceeded, wantMsg: []string{"mnist-trainer-c", "code 0"}},
		{name: "a trainer exited 0 and was restarted", job: plain, obs: observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Running(), builders.LastExited(0), builders.Restarts(1)))...),
			wantPhase: v1.PhaseSucceeded, wantReason: v1.ReasonSucceeded, wantMsg: []string{"mnist-trainer-c"}},
		{name: "a fault-tolerant trainer exited 0", job: ft, obs: observation(ft, all(ft), trainerPod("mnist-trainer-c", builders.Exited(0))),
			wantPhase: v1.PhaseSucceeded, wantReason: v1.ReasonSucceeded},
		{name: "success is judged before missing ReplicaSets", job: plain, obs: observation(plain, nil, trainerPod("mnist-trainer-c", builders.Exited(0))),
			wantPhase: v1.PhaseSucceeded, wantReason: v1.ReasonSucceeded},
		{name: "a trainer being deleted that exited 0 is no success", job: plain,
			obs:       observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Exited(0), builders.Terminating()))...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},
		{name: "a trainer being deleted that exited 143 is no failure", job: plain,
			obs:       observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Exited(143), builders.Terminating()))...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},
		{name: "a fault-tolerant trainer scaled down exits 143", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", builders.Ready()), trainerPod("mnist-trainer-c", builders.Exited(143), builders.Terminating()))...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},

		// Failed, plain job
		{name: "a plain trainer exited non-zero", job: plain, obs: observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Exited(1)))...),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTrainerFailed, wantMsg: []string{"mnist-trainer-c", "code 1"}},
		{name: "a plain trainer exited non-zero and was restarted", job: plain,
			obs:       observation(plain, all(plain), with(trainerPod("mnist-trainer-c", builders.Running(), builders.LastExited(137), builders.Restarts(1)))...),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTrainerFailed, wantMsg: []string{"mnist-trainer-c", "code 137"}},
		{name: "the first failed trainer by name is named", job: plain,
			obs:       observation(plain, all(plain), trainerPod("mnist-trainer-z", builders.Exited(2)), trainerPod("mnist-trainer-m", builders.Exited(3))),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTrainerFailed, wantMsg: []string{"mnist-trainer-m", "code 3"}},
		{name: "a plain pserver exited non-zero", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Exited(1)), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running())),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonPserverFailed, wantMsg: []string{"mnist-pserver-a", "code 1"}},
		// The pserver's last run failed with 2; it then ran again and
		// exited 0. The job fails for the 2, and the message must say 2.
		{name: "a plain pserver failure names the code that failed it", job: plain,
			obs:       observation(plain, all(plain), pserverPod("mnist-pserver-a", builders.Exited(0), builders.LastExited(2), builders.Restarts(1))),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonPserverFailed, wantMsg: []string{"mnist-pserver-a", "code 2"}},

		// Failed, fault-tolerant job
		{name: "a fault-tolerant trainer may fail and restart up to max-restarts", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", builders.Ready()), trainerPod("mnist-trainer-c", builders.Running(), builders.LastExited(1), builders.Restarts(5)))...),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},
		{name: "a fault-tolerant pserver may fail", job: ft,
			obs: observation(ft, all(ft), masterPod("mnist-master-a", builders.Ready()), pserverPod("mnist-pserver-a", builders.Ready(), builders.LastExited(1), builders.Restarts(1)),
				trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running())),
			wantPhase: v1.PhaseRunning, wantReason: v1.ReasonRunning},
		{name: "a fault-tolerant trainer restarted more than max-restarts (default 5)", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", builders.Ready()), trainerPod("mnist-trainer-c", builders.Running(), builders.LastExited(1), builders.Restarts(6)))...),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTooManyRestarts,
			wantMsg: []string{"mnist-trainer-c", "restarted 6 times", "max-restarts 5", "last exit code 1"}},
		{name: "max-restarts 0 fails on the first restart", job: builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.MaxRestarts(0)),
			obs:       observation(ft, all(ft), trainerPod("mnist-trainer-c", builders.Running(), builders.LastExited(3), builders.Restarts(1))),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTooManyRestarts, wantMsg: []string{"max-restarts 0", "last exit code 3"}},
		{name: "a fault-tolerant pserver restarted more than max-restarts", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", builders.Ready()), pserverPod("mnist-pserver-b", builders.Running(), builders.LastExited(2), builders.Restarts(6)))...),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTooManyRestarts,
			wantMsg: []string{"pserver pod mnist-pserver-b", "restarted 6 times", "max-restarts 5", "last exit code 2"}},
		{name: "a fault-tolerant master restarted more than max-restarts", job: ft,
			obs:       observation(ft, all(ft), with(masterPod("mnist-master-a", builders.Exited(1), builders.Restarts(6)))...),
			wantPhase: v1.PhaseFailed, wantReason: v1.ReasonTooManyRestarts, wantMsg: []string{"master pod mnist-master-a", "last exit code 1"}},
		{name: "success wins over too many restarts", job: ft,
			obs:       observation(ft, all(ft), trainerPod("mnist-trainer-c", builders.Running(), builders.LastExited(1), builders.Restarts(9)), trainerPod("mnist-trainer-d", builders.Exited(0))),
			wantPhase: v1.PhaseSucceeded, wantReason: v1.ReasonSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(tt.job, tt.obs, roles(tt.job))
			assert.Equal(t, tt.wantPhase, v.phase, v.message)
			assert.Equal(t, tt.wantReason, v.reason, v.message)
			for _, part := range tt.wantMsg {
				assert.Contains(t, v.message, part)
			}

			status := computeStatus(tt.job, tt.obs, roles(tt.job))
			assert.Equal(t, tt.wantPhase, status.Phase)
			assert.Equal(t, tt.wantReason, status.Reason)
			assert.Equal(t, v.message, status.Message)
		})
	}
}

func TestComputeStatusFinalPhases(t *testing.T) {
	plain := builders.Job("mnist", testNamespace)
	allRunning := observation(plain, roles(plain), pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running()))
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		obs        observed
		wantPhase  v1.TrainingJobPhase
		wantReason string
		wantMsg    string
	}{
		{"succeeded stays succeeded when a trainer later fails",
			builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseSucceeded, v1.ReasonSucceeded, "trainer pod x exited with code 0")),
			observation(plain, roles(plain), trainerPod("mnist-trainer-a", builders.Exited(1))),
			v1.PhaseSucceeded, v1.ReasonSucceeded, "trainer pod x exited with code 0"},
		{"succeeded stays succeeded when every pod is gone",
			builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseSucceeded, v1.ReasonSucceeded, "done")),
			observation(plain, nil),
			v1.PhaseSucceeded, v1.ReasonSucceeded, "done"},
		{"failed stays failed while pods run",
			builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseFailed, v1.ReasonTrainerFailed, "trainer pod y exited with code 1")),
			allRunning, v1.PhaseFailed, v1.ReasonTrainerFailed, "trainer pod y exited with code 1"},
		{"failed stays failed when a trainer later exits 0",
			builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseFailed, v1.ReasonInvalid, "spec.trainer.min-instance: bad")),
			observation(plain, roles(plain), trainerPod("mnist-trainer-a", builders.Exited(0))),
			v1.PhaseFailed, v1.ReasonInvalid, "spec.trainer.min-instance: bad"},
		{"running is not final",
			builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseRunning, v1.ReasonRunning, "2 trainers running")),
			observation(plain, roles(plain)),
			v1.PhaseCreating, v1.ReasonPodsStarting, "waiting for pods: 0/2 trainers running, 0/1 pservers ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := computeStatus(tt.job, tt.obs, roles(tt.job))
			assert.Equal(t, tt.wantPhase, status.Phase)
			assert.Equal(t, tt.wantReason, status.Reason)
			assert.Equal(t, tt.wantMsg, status.Message)
		})
	}
}

func TestComputeStatusCounts(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.Trainers(2, 6))
	obs := observation(job, roles(job),
		pserverPod("mnist-pserver-a", builders.Ready()),
		trainerPod("mnist-trainer-a", builders.Ready()),
		trainerPod("mnist-trainer-b", builders.Running()),
		trainerPod("mnist-trainer-c"),
		trainerPod("mnist-trainer-d", builders.Phase(corev1.PodSucceeded)),
		trainerPod("mnist-trainer-e", builders.Phase(corev1.PodFailed)),
		trainerPod("mnist-trainer-f", builders.Ready(), builders.Terminating()),
	)
	three := int32(3)
	obs.replicaSets[v1.RoleTrainer].Spec.Replicas = &three

	status := computeStatus(job, obs, roles(job))
	assert.Equal(t, v1.ReplicaStatus{Desired: 3, Current: 3, Ready: 1, Summary: "1/3"}, status.Trainers,
		"current: a, b, c (not the finished d, e nor the deleted f); ready: a")
	assert.Equal(t, v1.ReplicaStatus{Desired: 1, Current: 1, Ready: 1, Summary: "1/1"}, status.Pservers)
	assert.Equal(t, v1.ReplicaStatus{Desired: 0, Current: 0, Ready: 0, Summary: "0/0"}, status.Master, "a plain job has no master")
}

func TestComputeStatusConditions(t *testing.T) {
	plain := builders.Job("mnist", testNamespace, builders.Generation(7))
	runningObs := observation(plain, roles(plain), pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running()))
	type want struct {
		kind   string
		status metav1.ConditionStatus // "" means absent
		reason string
	}
	tests := []struct {
		name string
		job  *v1.TrainingJob
		obs  observed
		want []want
	}{
		{"running is ready", plain, runningObs, []want{
			{v1.ConditionReady, metav1.ConditionTrue, v1.ReasonRunning},
			{v1.ConditionBlocked, "", ""}, {v1.ConditionComplete, "", ""}, {v1.ConditionFailed, "", ""},
		}},
		{"starting is not ready", plain, observation(plain, roles(plain)), []want{
			{v1.ConditionReady, metav1.ConditionFalse, v1.ReasonPodsStarting},
			{v1.ConditionComplete, "", ""}, {v1.ConditionFailed, "", ""},
		}},
		{"succeeded is complete", plain, observation(plain, roles(plain), trainerPod("mnist-trainer-a", builders.Exited(0))), []want{
			{v1.ConditionReady, metav1.ConditionFalse, v1.ReasonSucceeded},
			{v1.ConditionComplete, metav1.ConditionTrue, v1.ReasonSucceeded},
			{v1.ConditionFailed, "", ""},
		}},
		{"failed", plain, observation(plain, roles(plain), trainerPod("mnist-trainer-a", builders.Exited(1))), []want{
			{v1.ConditionReady, metav1.ConditionFalse, v1.ReasonTrainerFailed},
			{v1.ConditionFailed, metav1.ConditionTrue, v1.ReasonTrainerFailed},
			{v1.ConditionComplete, "", ""},
		}},
		{"blocked", plain, blockedBy(observation(plain, nil), "Service mnist-pserver"), []want{
			{v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBlocked},
			{v1.ConditionBlocked, metav1.ConditionTrue, v1.ReasonBlocked},
		}},
		{"no longer blocked", builders.Job("mnist", testNamespace, builders.Generation(7), builders.Condition(v1.ConditionBlocked, metav1.ConditionTrue, v1.ReasonBlocked)), runningObs, []want{
			{v1.ConditionReady, metav1.ConditionTrue, v1.ReasonRunning},
			{v1.ConditionBlocked, metav1.ConditionFalse, "NothingInTheWay"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := computeStatus(tt.job, tt.obs, roles(tt.job))
			assert.Equal(t, int64(7), status.ObservedGeneration)
			for _, w := range tt.want {
				c := condition(status, w.kind)
				if w.status == "" {
					assert.Nil(t, c, "condition %s", w.kind)
					continue
				}
				require.NotNil(t, c, "condition %s", w.kind)
				assert.Equal(t, w.status, c.Status, w.kind)
				assert.Equal(t, w.reason, c.Reason, w.kind)
				assert.Equal(t, int64(7), c.ObservedGeneration, w.kind)
				assert.False(t, c.LastTransitionTime.IsZero(), w.kind)
			}
			if c := condition(status, v1.ConditionBlocked); c != nil && c.Status == metav1.ConditionTrue {
				assert.Contains(t, c.Message, "Service mnist-pserver")
			}
		})
	}
}

func TestComputeStatusIsPure(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.Generation(3),
		builders.JobPhase(v1.PhaseCreating, v1.ReasonPodsStarting, "waiting"),
		builders.Condition(v1.ConditionReady, metav1.ConditionFalse, v1.ReasonPodsStarting))
	before := job.DeepCopy()
	obs := observation(job, roles(job), pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running()))

	first := computeStatus(job, obs, roles(job))
	assert.Equal(t, before, job, "computeStatus must not change the job it is given")
	assert.Equal(t, v1.PhaseRunning, first.Phase)
	second := computeStatus(job, obs, roles(job))
	assert.Equal(t, first.Phase, second.Phase)
	assert.Equal(t, first.Message, second.Message)

	t.Run("an unchanged condition keeps its transition time", func(t *testing.T) {
		idle := computeStatus(job, observation(job, roles(job)), roles(job))
		c := condition(idle, v1.ConditionReady)
		require.NotNil(t, c)
		assert.Equal(t, builders.T0, c.LastTransitionTime.UTC())
	})
}

// TestComputeStatusKeepsTheAutoscalersCondition: the Scaling condition is
// the autoscaler's; the controller's status keeps it as it is, whatever
// phase the job is in.
func TestComputeStatusKeepsTheAutoscalersCondition(t *testing.T) {
	scaling := metav1.Condition{Type: v1.ConditionScaling, Status: metav1.ConditionFalse, Reason: v1.ScalingLoad,
		Message:            "one more trainer (1 CPU) would take CPU requests past max_load_desired 0.97",
		LastTransitionTime: metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))}
	for _, phase := range []v1.TrainingJobPhase{v1.PhaseRunning, v1.PhaseCreating} {
		job := builders.Job("mnist", testNamespace, builders.JobPhase(phase, "", ""))
		job.Status.Conditions = append(job.Status.Conditions, scaling)
		pods := []*corev1.Pod{pserverPod("mnist-pserver-a", builders.Ready()), trainerPod("mnist-trainer-a", builders.Running()), trainerPod("mnist-trainer-b", builders.Running())}
		if phase == v1.PhaseCreating {
			pods = nil
		}
		status := computeStatus(job, observation(job, roles(job), pods...), roles(job))
		c := condition(status, v1.ConditionScaling)
		require.NotNil(t, c, "phase %s", phase)
		assert.Equal(t, scaling, *c, "phase %s", phase)
	}
}

// TestComputeStatusKeepsTheRequeuesUntilSuspended: status.requeues and
// retryAfter are the autoscaler's; the controller keeps them, and clears
// them when the job is suspended, so that a resumed job tries afresh.
func TestComputeStatusKeepsTheRequeuesUntilSuspended(t *testing.T) {
	retry := metav1.NewTime(time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC))
	job := builders.Job("mnist", testNamespace, builders.JobPhase(v1.PhaseQueued, v1.ReasonNotStarted, "requeued"))
	job.Status.Requeues, job.Status.RetryAfter = 2, &retry
	status := computeStatus(job, observation(job, roles(job)), roles(job))
	assert.Equal(t, int32(2), status.Requeues)
	assert.Equal(t, &retry, status.RetryAfter)

	job.Spec.Suspend = true
	status = computeStatus(job, observation(job, roles(job)), roles(job))
	assert.Zero(t, status.Requeues)
	assert.Nil(t, status.RetryAfter)
}
