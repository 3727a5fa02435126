package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

var (
	grServices    = schema.GroupResource{Resource: "services"}
	grReplicaSets = schema.GroupResource{Group: "apps", Resource: "replicasets"}
)

// The API server's refusals, as it words them.
func invalidService(name string) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, name,
		field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, "must be no more than 63 characters")})
}

func quotaExceeded(gr schema.GroupResource, name string) error {
	return apierrors.NewForbidden(gr, name, errors.New("exceeded quota: objects, requested: count/"+gr.String()+"=1, used: count/"+gr.String()+"=0, limited: count/"+gr.String()+"=0"))
}

func policyDenied(gr schema.GroupResource, name string) error {
	return apierrors.NewForbidden(gr, name, errors.New("ValidatingAdmissionPolicy 'no-edl' with binding 'no-edl' denied request: no"))
}

// refuse makes the fake API server refuse the verb on the named object
// while *on holds, with err.
func refuse(f *fixture, verb, resource, name string, err error, on *bool) {
	f.kube.PrependReactor(verb, resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		var got string
		switch act := a.(type) {
		case clienttesting.CreateAction:
			got = act.GetObject().(metav1.Object).GetName()
		case clienttesting.PatchAction:
			got = act.GetName()
		}
		if *on && got == name {
			return true, nil, err
		}
		return false, nil, nil
	})
}

func TestRefusalOf(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantReason string // "" when it is no refusal
	}{
		{"invalid", invalidService("x"), v1.ReasonInvalid},
		{"quota", quotaExceeded(grServices, "x"), v1.ReasonQuotaExceeded},
		{"policy", policyDenied(grServices, "x"), v1.ReasonForbidden},
		{"webhook without a code", apierrors.NewBadRequest(`admission webhook "deny.example.com" denied the request: no`), v1.ReasonBadRequest},
		{"too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), v1.ReasonRefused},
		{"wrapped", errors.Join(errors.New("other"), quotaExceeded(grServices, "x")), v1.ReasonQuotaExceeded},
		{"conflict", apierrors.NewConflict(grServices, "x", errors.New("modified")), ""},
		{"timeout", apierrors.NewServerTimeout(grServices, "create", 1), ""},
		{"unavailable", apierrors.NewServiceUnavailable("etcd"), ""},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), ""},
		{"not an API error", errors.New("connection refused"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := refusalOf(tt.err)
			assert.Equal(t, tt.wantReason != "", ok)
			assert.Equal(t, tt.wantReason, r.reason)
		})
	}
}

// TestSyncReportsARefusedObject: a ReplicaSet or Service the API server
// refuses puts the job in Pending with the ChildrenAccepted condition False
// and one Warning event naming the object and the server's message; the
// retries of the same refusal write and record nothing; the job never runs
// without the object; once the object is created the condition turns True.
func TestSyncReportsARefusedObject(t *testing.T) {
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		resource   string
		object     string
		err        error
		wantReason string
		wantLine   string
	}{
		{"an invalid Service", builders.Job("mnist", testNamespace), "services", "mnist-pserver", invalidService("mnist-pserver"), v1.ReasonInvalid,
			`the API server refused to create Service mnist-pserver: Service "mnist-pserver" is invalid: metadata.name: Invalid value: "mnist-pserver": must be no more than 63 characters`},
		{"a quota on Services", builders.Job("mnist", testNamespace, builders.FaultTolerant()), "services", "mnist-master", quotaExceeded(grServices, "mnist-master"), v1.ReasonQuotaExceeded,
			`the API server refused to create Service mnist-master: services "mnist-master" is forbidden: exceeded quota`},
		{"a policy on ReplicaSets", builders.Job("mnist", testNamespace), "replicasets", "mnist-trainer", policyDenied(grReplicaSets, "mnist-trainer"), v1.ReasonForbidden,
			`the API server refused to create ReplicaSet mnist-trainer: replicasets.apps "mnist-trainer" is forbidden: ValidatingAdmissionPolicy 'no-edl'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(tt.job)
			on := true
			refuse(f, "create", tt.resource, tt.object, tt.err, &on)

			err := f.sync("mnist")
			require.Error(t, err, "a refusal is retried")
			assert.True(t, onlyRefusals(err), "%v", err)
			f.feedBack()
			// The job's other objects exist and its pods are healthy: still,
			// no Running without the refused object.
			f.addPods(healthyPods(tt.job, 2)...)
			require.Error(t, f.sync("mnist"))
			f.feedBack()

			status := f.getJob("mnist").Status
			assert.Equal(t, v1.PhasePending, status.Phase)
			assert.Equal(t, v1.ReasonChildRefused, status.Reason)
			assert.Contains(t, status.Message, tt.wantLine)
			accepted := condition(status, v1.ConditionChildrenAccepted)
			require.NotNil(t, accepted)
			assert.Equal(t, metav1.ConditionFalse, accepted.Status)
			assert.Equal(t, tt.wantReason, accepted.Reason)
			assert.Contains(t, accepted.Message, tt.wantLine)
			var refused []string
			for _, e := range f.events() {
				if strings.HasPrefix(e, "Warning Refused ") {
					refused = append(refused, e)
				}
			}
			require.Len(t, refused, 1, "one event per refusal")
			assert.Contains(t, refused[0], tt.wantLine)

			f.reset()
			for i := 0; i < 3; i++ {
				require.Error(t, f.sync("mnist"))
			}
			assert.Empty(t, f.tj.Actions(), "the same refusal again writes no status")
			assert.Empty(t, f.events(), "and records no event")

			on = false
			f.settle("mnist")
			status = f.getJob("mnist").Status
			assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
			accepted = condition(status, v1.ConditionChildrenAccepted)
			require.NotNil(t, accepted)
			assert.Equal(t, metav1.ConditionTrue, accepted.Status)
			assert.Equal(t, v1.ReasonAccepted, accepted.Reason)
		})
	}
}

// TestSyncReportsARefusedPatch: a patch the API server refuses is reported
// on the job too, without taking the job out of Running.
func TestSyncReportsARefusedPatch(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.Trainers(2, 6))
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	rs := f.getReplicaSet("mnist-trainer")
	rs.Spec.Replicas = ptr.To[int32](9) // above max-instance: the controller clamps it
	f.updateReplicaSet(rs)
	on := true
	refuse(f, "patch", "replicasets", "mnist-trainer", policyDenied(grReplicaSets, "mnist-trainer"), &on)

	require.Error(t, f.sync("mnist"))
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseRunning, status.Phase)
	accepted := condition(status, v1.ConditionChildrenAccepted)
	require.NotNil(t, accepted)
	assert.Equal(t, v1.ReasonForbidden, accepted.Reason)
	assert.Contains(t, accepted.Message, "the API server refused to patch ReplicaSet mnist-trainer")
	assert.Contains(t, eventPrefixes(f.events()), "Warning Refused")
}

// withReplicaFailure: the ReplicaSet controller could not create a pod.
func withReplicaFailure(message string) builders.ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: message,
		}}
	}
}

// TestSyncReportsRefusedPods: pods are the ReplicaSet controller's to
// create; when a ResourceQuota refuses them, the trainer ReplicaSet's
// ReplicaFailure condition says so, and the job reports it with one event.
func TestSyncReportsRefusedPods(t *testing.T) {
	const quota = `pods "mnist-trainer-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`
	job := builders.Job("mnist", testNamespace, builders.Trainers(2, 6))
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.addPods(builders.RolePod(job, v1.RolePserver, "mnist-pserver-a", builders.Ready()))
	rs := f.getReplicaSet("mnist-trainer")
	withReplicaFailure(quota)(rs)
	f.updateReplicaSet(rs)

	events := f.settle("mnist")
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhasePending, status.Phase)
	assert.Equal(t, v1.ReasonChildRefused, status.Reason)
	accepted := condition(status, v1.ConditionChildrenAccepted)
	require.NotNil(t, accepted)
	assert.Equal(t, metav1.ConditionFalse, accepted.Status)
	assert.Equal(t, v1.ReasonQuotaExceeded, accepted.Reason)
	want := "Warning Refused the API server refused to create a pod of ReplicaSet mnist-trainer: " + quota
	assert.Equal(t, []string{want}, events)
	require.NoError(t, f.sync("mnist"), "nothing of the job's own was refused: no retry")
	assert.Empty(t, f.events())

	// The quota grows: the ReplicaSet controller creates the pods and
	// clears its condition.
	rs = f.getReplicaSet("mnist-trainer")
	rs.Status.Conditions = nil
	f.updateReplicaSet(rs)
	f.addPods(healthyPods(job, 2)[1:]...)
	f.settle("mnist")
	status = f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseRunning, status.Phase)
	assert.Equal(t, metav1.ConditionTrue, condition(status, v1.ConditionChildrenAccepted).Status)
}

// TestRefusalsAreNotFailedSyncs: the job reports a refusal; it is retried
// but not counted, nor logged, as a failing sync.
func TestRefusalsAreNotFailedSyncs(t *testing.T) {
	rec := &countingMetrics{}
	f := newFixture(t, withMetrics(rec))
	f.addJob(builders.Job("mnist", testNamespace))
	on := true
	refuse(f, "create", "services", "mnist-pserver", invalidService("mnist-pserver"), &on)

	f.c.queue.Add(testNamespace + "/mnist")
	require.True(t, f.c.processNextItem(context.Background()))
	assert.Equal(t, int32(0), rec.failed.Load())
	assert.Equal(t, 1, f.c.queue.NumRequeues(testNamespace+"/mnist"), "retried")
}

// TestSyncReportsAFailingPserver: in a fault-tolerant job, a pserver whose
// container exits non-zero sets RoleFailing with one Warning event naming
// the pod and its exit; its restarts update the condition without more
// events; it clears once the pserver is ready again; and restarts beyond
// trainer.max-restarts fail the job.
func TestSyncReportsAFailingPserver(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Trainers(2, 6), builders.CleanPods(v1.CleanPodPolicyAll))
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	f.settle("mnist")
	require.Equal(t, v1.PhaseRunning, f.getJob("mnist").Status.Phase)
	pserver := func(rv string, muts ...builders.PodOption) {
		f.addPods(builders.RolePod(job, v1.RolePserver, "mnist-pserver-a", append(muts, builders.PodRV(rv))...))
	}

	pserver("2", exitedWith(1, "Error"))
	events := f.settle("mnist")
	want := "pserver pod mnist-pserver-a container pserver exited with code 1 (Error); restarted 0 times, the job fails after more than trainer.max-restarts 5"
	assert.Equal(t, []string{"Warning RoleFailing " + want}, events)
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseCreating, status.Phase)
	assert.Equal(t, v1.ReasonPserverFailing, status.Reason)
	failing := condition(status, v1.ConditionRoleFailing)
	require.NotNil(t, failing)
	assert.Equal(t, metav1.ConditionTrue, failing.Status)
	assert.Equal(t, v1.ReasonPserverFailing, failing.Reason)
	assert.Equal(t, want, failing.Message)

	pserver("3", crashLooping(1, "Error"), builders.Restarts(2))
	assert.Empty(t, f.settle("mnist"), "a restart of a failing pserver is no new edge")
	assert.Contains(t, condition(f.getJob("mnist").Status, v1.ConditionRoleFailing).Message, "restarted 2 times")

	pserver("4", builders.Ready(), builders.LastExited(1), builders.Restarts(2))
	assert.Equal(t, []string{"Normal Running"}, eventPrefixes(f.settle("mnist")))
	status = f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseRunning, status.Phase)
	assert.Equal(t, metav1.ConditionFalse, condition(status, v1.ConditionRoleFailing).Status)

	pserver("5", crashLooping(1, "Error"), builders.Restarts(6))
	events = f.settle("mnist")
	assert.Subset(t, eventPrefixes(events), []string{"Warning Failed", "Warning RoleFailing"}, "%v", events)
	status = f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseFailed, status.Phase)
	assert.Equal(t, v1.ReasonTooManyRestarts, status.Reason)
	assert.Contains(t, status.Message, "pserver pod mnist-pserver-a container pserver restarted 6 times, more than max-restarts 5")
}
