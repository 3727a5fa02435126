package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
	"github.com/paddlepaddle/edl/test/framework"
)

// refuseLastScale stores a ValidatingAdmissionPolicy, bound to namespace
// ns, that refuses every write of a TrainingJob's status that sets or
// changes status.lastScale — the autoscaler's record of a scaling, and
// nothing the controller writes — and waits until the API server applies
// it. It returns the function that deletes the binding and waits until
// the API server no longer applies it.
func refuseLastScale(t *testing.T, ctx context.Context, plane *framework.ControlPlane, tj tjclient.Interface, ns, job string) func() {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-last-scale"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{v1.SchemeGroupVersion.Group}, APIVersions: []string{"v1"},
						Resources: []string{"trainingjobs/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.status) || !has(object.status.lastScale) || " +
					"(has(oldObject.status) && has(oldObject.status.lastScale) && object.status.lastScale == oldObject.status.lastScale)",
				Message: "status.lastScale is frozen", Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
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
	admission := plane.Client.AdmissionregistrationV1()
	_, err := admission.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	// The API server loads a policy a moment after it is stored; a dry
	// run of the write it refuses tells when.
	probe := fmt.Appendf(nil, `{"status":{"lastScale":{"time":%q,"from":1,"to":2,"reason":"probe"}}}`, time.Now().UTC().Format(time.RFC3339))
	refused := func(ctx context.Context) bool {
		_, err := tj.PaddlepaddleV1().TrainingJobs(ns).Patch(ctx, job, types.MergePatchType, probe,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
		return apierrors.IsForbidden(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return refused(ctx), nil
	})
	require.NoError(t, err, "the policy never refused a write of status.lastScale")
	return func() {
		t.Helper()
		require.NoError(t, admission.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}))
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			return !refused(ctx), nil
		})
		require.NoError(t, err, "the API server still refuses writes of status.lastScale")
	}
}

// TestResizeSurvivesALeaderChange stops edl's leader between the two
// writes of a resize: the trainer ReplicaSet's patch, applied, and the
// job's status.lastScale, which a ValidatingAdmissionPolicy refuses until
// the leader is killed (SIGKILL). The next leader must take the resize
// from the ReplicaSet: the job's status records it, the controller counts
// it once (status.resize.count 1), and its cool-down holds the PyTorch job
// — spec.elasticPolicy.resizeCooldownSeconds 600 — though the room it
// could grow into is freed as the new leader takes over.
func TestResizeSurvivesALeaderChange(t *testing.T) {
	const ns = "training"
	ctx, plane, tj := startFleetPlane(t, framework.NodeSpec{Name: "restart", CPU: "8", Memory: "32Gi"}, 5*time.Minute, ns)

	// A pod of 4 CPU leaves the job room for 3 trainers of 1 CPU on the
	// node of 8 (0.96 of it, by the default max_load_desired and margin,
	// less the master's 100m).
	filler := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app", Resources: requests("4", "1Gi")}}}}
	_, err := plane.Client.CoreV1().Pods(ns).Create(ctx, filler, metav1.CreateOptions{})
	require.NoError(t, err)
	job := builders.Job("torch", ns, builders.PyTorch("python3 train.py"), builders.Trainers(1, 6),
		builders.TrainerResources(requests("1", "1Gi")), builders.Elastic(v1.ElasticPolicy{ResizeCooldownSeconds: ptr.To(int32(600))}),
		builders.Spec(func(s *v1.TrainingJobSpec) {
			s.PriorityClassName, s.Master.Resources = "training", requests("100m", "256Mi")
		}))
	job.UID, job.Generation = "", 0
	_, err = tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	allowLastScale := refuseLastScale(t, ctx, plane, tj, ns, job.Name)

	edl := newFleet(t, plane)
	first := edl.start("a")
	var grown int32
	trainers := v1.ReplicaSetName(job.Name, v1.RoleTrainer)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		rs, err := plane.Client.AppsV1().ReplicaSets(ns).Get(ctx, trainers, metav1.GetOptions{})
		if err != nil || rs.Spec.Replicas == nil {
			return false, nil
		}
		grown = *rs.Spec.Replicas
		return grown > job.Spec.Trainer.MinInstance, nil
	})
	require.NoError(t, err, "the job was never grown; edl's last lines:\n%s", first.Tail(20))
	first.Kill()
	t.Logf("the first leader grew the job from 1 to %d trainers and was killed", grown)

	got, err := tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, got.Status.LastScale, "the policy refused the status write")
	rs, err := plane.Client.AppsV1().ReplicaSets(ns).Get(ctx, trainers, metav1.GetOptions{})
	require.NoError(t, err)
	generation := rs.Generation
	annotated := v1.LastScaleOf(rs.Annotations)
	if assert.NotNil(t, annotated, "the patch of the replicas records the resize on the ReplicaSet: %v", rs.Annotations) {
		assert.Equal(t, [2]int32{1, grown}, [2]int32{annotated.From, annotated.To})
	}

	// The room to grow into comes free as the next leader starts.
	allowLastScale()
	require.NoError(t, plane.Client.CoreV1().Pods(ns).Delete(ctx, filler.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}))
	next := edl.start("b")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return next.Identity() != "" && leaseHolder(ctx, plane, leaderLeaseNamespace) == next.Identity(), nil
	})
	require.NoError(t, err, "the next replica never led; its last lines:\n%s", next.Tail(20))

	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = fmt.Sprintf("lastScale %+v, resize %+v", got.Status.LastScale, got.Status.Resize)
		return got.Status.LastScale != nil && got.Status.Resize.Count > 0, nil
	})
	require.NoError(t, err, "the resize never reached the status: %s", last)
	assert.Equal(t, [2]int32{1, grown}, [2]int32{got.Status.LastScale.From, got.Status.LastScale.To},
		"status.lastScale is the first leader's resize, not a second one; edl's last lines:\n%s", next.Tail(20))
	if annotated != nil {
		assert.True(t, v1.SameScale(*annotated, *got.Status.LastScale), "status.lastScale %+v is the resize the ReplicaSet records, %+v", got.Status.LastScale, annotated)
	}
	assert.Equal(t, int32(1), got.Status.Resize.Count, "the resize is counted once")
	recorded := *got.Status.LastScale

	// Ten plans of the new leader with room for 3 more trainers: the
	// cool-down of the resize holds the job.
	held := time.Now().Add(10 * time.Second)
	for time.Now().Before(held) {
		rs, err := plane.Client.AppsV1().ReplicaSets(ns).Get(ctx, trainers, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, grown, *rs.Spec.Replicas, "a second resize within the cool-down; edl's last lines:\n%s", next.Tail(20))
		require.Equal(t, generation, rs.Generation, "the trainer ReplicaSet's spec was written again")
		got, err = tj.PaddlepaddleV1().TrainingJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, got.Status.LastScale)
		require.True(t, v1.SameScale(recorded, *got.Status.LastScale), "status.lastScale became %+v", got.Status.LastScale)
		require.Equal(t, int32(1), got.Status.Resize.Count, "the resize is counted once")
		time.Sleep(500 * time.Millisecond)
	}
	scaling := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionScaling)
	require.NotNil(t, scaling, "the new leader explains the job")
	assert.Equal(t, v1.ScalingCoolDown, scaling.Reason)
	assert.Contains(t, scaling.Message, "spec.elasticPolicy.resizeCooldownSeconds")
}
