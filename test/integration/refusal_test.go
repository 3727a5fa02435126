package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// conditionIs: the job has the condition with that status and reason.
func conditionIs(kind string, status metav1.ConditionStatus, reason string) func(*v1.TrainingJob) bool {
	return func(job *v1.TrainingJob) bool {
		c := meta.FindStatusCondition(job.Status.Conditions, kind)
		return c != nil && c.Status == status && c.Reason == reason
	}
}

// eventMessages lists the messages of the job's events of one reason.
func eventMessages(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	events, err := cp.Client.CoreV1().Events(ns).List(testContext(t), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + reason,
	})
	require.NoError(t, err)
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Message)
	}
	return out
}

// TestQuotaRefusingTrainersShowsOnTheJob: a ResourceQuota refuses the
// trainers' pods (the ReplicaSet controller's creates, not EDL's). The job
// says so with the ChildrenAccepted condition and one Refused event, stays
// out of Running, and runs once the quota lets the pods in.
func TestQuotaRefusingTrainersShowsOnTheJob(t *testing.T) {
	ns := cp.NewNamespace(t)
	// Only the trainers ask for a GPU, so only their pods are refused.
	quota := builders.Quota("gpus", ns, []string{"requests.nvidia.com/gpu", "0"})
	_, err := cp.Client.CoreV1().ResourceQuotas(ns).Create(testContext(t), quota, metav1.CreateOptions{})
	require.NoError(t, err)
	// Until kube-controller-manager has computed its usage, the quota
	// refuses everything it covers as "status unknown".
	err = wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		q, err := cp.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "gpus", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil, nil
	})
	require.NoError(t, err, "the quota's status was never computed")

	startController(t, ns)
	job := exampleJob(t, ns, func(job *v1.TrainingJob) {
		job.Spec.Trainer.Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
	})
	_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), job, metav1.CreateOptions{})
	require.NoError(t, err)

	got := waitForJob(t, ns, "example", "refused by the quota", conditionIs(v1.ConditionChildrenAccepted, metav1.ConditionFalse, v1.ReasonQuotaExceeded))
	accepted := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionChildrenAccepted)
	assert.Contains(t, accepted.Message, "the API server refused to create a pod of ReplicaSet example-trainer: ")
	assert.Contains(t, accepted.Message, "exceeded quota: gpus")
	assert.NotContains(t, accepted.Message, "example-pserver", "the pservers ask for no GPU")
	// The master and pservers run; the job waits for its trainers.
	got = waitForJob(t, ns, "example", "Pending for the quota", phaseIs(v1.PhasePending))
	assert.Equal(t, v1.ReasonChildRefused, got.Status.Reason)

	// The ReplicaSet controller retries with its backoff; the job reports
	// the refusal once.
	time.Sleep(3 * time.Second)
	refused := eventMessages(t, ns, "example", v1.EventRefused)
	require.Len(t, refused, 1, "%v", refused)
	assert.Contains(t, refused[0], "ReplicaSet example-trainer")
	assert.Equal(t, 1, count(eventReasons(t, ns, "example"), v1.EventRefused), "one event, not one per retry")

	quota.Spec.Hard["requests.nvidia.com/gpu"] = resource.MustParse("4")
	_, err = cp.Client.CoreV1().ResourceQuotas(ns).Update(testContext(t), quota, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running once the quota allows", phaseIs(v1.PhaseRunning))
	waitForJob(t, ns, "example", "accepted", conditionIs(v1.ConditionChildrenAccepted, metav1.ConditionTrue, v1.ReasonAccepted))
}

// TestPolicyRefusingServicesShowsOnTheJob: a ValidatingAdmissionPolicy
// refuses the job's Services. The job never reports Running without them:
// it is Pending with the ChildrenAccepted condition (Forbidden) and one
// Refused event per Service, however often the controller retries; once
// the policy goes, the Services are created and the job runs.
func TestPolicyRefusingServicesShowsOnTheJob(t *testing.T) {
	ns := cp.NewNamespace(t)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-services-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			// Forbidden, as an organisation's policy would say; the default
			// reason is Invalid.
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no Services in this namespace",
				Reason: ptr.To(metav1.StatusReasonForbidden)}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	policies := cp.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := cp.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	_, err := policies.Create(testContext(t), policy, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = policies.Delete(context.Background(), policy.Name, metav1.DeleteOptions{}) })
	_, err = bindings.Create(testContext(t), binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}) })
	// The API server loads a policy a moment after it is stored.
	probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	err = wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().Services(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !apierrors.IsForbidden(err) {
			t.Logf("probe Service: %v", err)
		}
		return apierrors.IsForbidden(err), nil
	})
	require.NoError(t, err, "the policy never refused a Service")

	startController(t, ns)
	_, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)

	got := waitForJob(t, ns, "example", "refused by the policy", conditionIs(v1.ConditionChildrenAccepted, metav1.ConditionFalse, v1.ReasonForbidden))
	accepted := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionChildrenAccepted)
	for _, svc := range []string{"example-master", "example-pserver"} {
		assert.Contains(t, accepted.Message, "the API server refused to create Service "+svc+": ")
	}
	assert.Contains(t, accepted.Message, "no Services in this namespace")

	// The ReplicaSets and their pods exist; without its Services the job
	// does not run, and the retries add no event.
	waitForJob(t, ns, "example", "Pending with its pods up", func(job *v1.TrainingJob) bool {
		return job.Status.Phase == v1.PhasePending && job.Status.Trainers.Ready == 2 && job.Status.Pservers.Ready == 2
	})
	time.Sleep(3 * time.Second)
	got, err = jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Get(testContext(t), "example", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PhasePending, got.Status.Phase)
	assert.Equal(t, v1.ReasonChildRefused, got.Status.Reason)
	refused := eventMessages(t, ns, "example", v1.EventRefused)
	assert.Len(t, refused, 2, "one event per refused Service: %v", refused)
	assert.Equal(t, 2, count(eventReasons(t, ns, "example"), v1.EventRefused), "no event per retry")
	assert.Equal(t, 0, count(eventReasons(t, ns, "example"), v1.EventRunning))

	require.NoError(t, bindings.Delete(testContext(t), binding.Name, metav1.DeleteOptions{}))
	waitForJob(t, ns, "example", "Running with its Services", phaseIs(v1.PhaseRunning))
	waitForJob(t, ns, "example", "accepted", conditionIs(v1.ConditionChildrenAccepted, metav1.ConditionTrue, v1.ReasonAccepted))
}

// TestCrashingPserverOfAFaultTolerantJobShows: a pserver of a fault-tolerant
// job whose container exits non-zero (kwok's pod-exit stage) sets the
// RoleFailing condition and one Warning event naming the pod and its exit.
func TestCrashingPserverOfAFaultTolerantJobShows(t *testing.T) {
	ns := cp.NewNamespace(t)
	startController(t, ns)
	_, err := jobClient(t).PaddlepaddleV1().TrainingJobs(ns).Create(testContext(t), exampleJob(t, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForJob(t, ns, "example", "Running", phaseIs(v1.PhaseRunning))

	pservers := podsOf(t, ns, v1.LabelPserver, "example")
	require.NotEmpty(t, pservers)
	annotateExit(t, ns, pservers[0].Name, 1)
	got := waitForJob(t, ns, "example", "reporting the failing pserver", conditionIs(v1.ConditionRoleFailing, metav1.ConditionTrue, v1.ReasonPserverFailing))
	failing := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionRoleFailing)
	assert.Contains(t, failing.Message, "pserver pod "+pservers[0].Name+" container pserver exited with code 1 (Error)")
	assert.Equal(t, v1.PhaseCreating, got.Status.Phase, "a fault-tolerant job tolerates the exit up to max-restarts")
	assert.Equal(t, v1.ReasonPserverFailing, got.Status.Reason)
	assert.Contains(t, got.Status.Message, "the autoscaler leaves the job alone until it is Running again")

	time.Sleep(2 * time.Second)
	events := eventMessages(t, ns, "example", v1.EventRoleFailing)
	require.Len(t, events, 1, "%v", events)
	assert.True(t, strings.HasPrefix(events[0], "pserver pod "+pservers[0].Name+" container pserver exited with code 1 (Error)"), events[0])
	assert.Equal(t, 1, count(eventReasons(t, ns, "example"), v1.EventRoleFailing))
}
