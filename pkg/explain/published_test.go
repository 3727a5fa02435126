package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjfake "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned/fake"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// TestCannotPlanLiveNamesTheFirstReadDenied: planning live needs every
// cluster-wide read; the first the API server denies is named.
func TestCannotPlanLiveNamesTheFirstReadDenied(t *testing.T) {
	review := func(denied string) *fake.Clientset {
		c := fake.NewClientset()
		c.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			r.Status.Allowed = r.Spec.ResourceAttributes.Resource != denied
			return true, r, nil
		})
		return c
	}
	why, err := CannotPlanLive(context.Background(), review("").AuthorizationV1())
	require.NoError(t, err)
	assert.Empty(t, why)
	why, err = CannotPlanLive(context.Background(), review("nodes").AuthorizationV1())
	require.NoError(t, err)
	assert.Equal(t, "list nodes in every namespace", why)
	why, err = CannotPlanLive(context.Background(), review("replicasets").AuthorizationV1())
	require.NoError(t, err)
	assert.Equal(t, "list replicasets.apps in every namespace", why)
}

// TestPublishedExplainsFromTheStatus: without planning, each job is what
// the controller wrote: its Scaling condition, its place in the queue, its
// last scaling.
func TestPublishedExplainsFromTheStatus(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	running := builders.Job("mnist", "team", builders.Trainers(2, 8), builders.JobPhase(v1.PhaseRunning, v1.ReasonRunning, "running"))
	running.Status.Trainers = v1.ReplicaStatus{Desired: 5, Current: 5, Ready: 4}
	running.Status.Conditions = append(running.Status.Conditions, metav1.Condition{Type: v1.ConditionScaling, Status: metav1.ConditionFalse,
		Reason: "Load", Message: "one more trainer (1 CPU) would take CPU requests past max_load_desired 0.97", LastTransitionTime: at})
	running.Status.LastScale = &v1.ScaleRecord{Time: at, From: 8, To: 5, Reason: "scale down by 3: CPU load 1 above max_load_desired 0.97"}
	queued := builders.Job("bert", "team", builders.Trainers(4, 4), builders.JobPhase(v1.PhaseQueued, v1.ReasonWaitingForQuota, "position 1 of 1"))
	queued.Status.Conditions = []metav1.Condition{{Type: v1.ConditionQueued, Status: metav1.ConditionTrue, Reason: v1.ReasonWaitingForQuota,
		Message: "position 1 of 1 in the queue: namespace team quota requests.cpu: 2 CPU left, the minimum needs 5 CPU", LastTransitionTime: at}}
	other := builders.Job("x", "other")
	tj := tjfake.NewClientset(running, queued, other)

	res, err := Published(context.Background(), tj, "team", "", "list nodes in every namespace")
	require.NoError(t, err)
	require.Len(t, res.Jobs, 2)
	assert.Equal(t, "bert", res.Jobs[0].Name)
	assert.Equal(t, v1.ReasonWaitingForQuota, res.Jobs[0].Queued)
	assert.Equal(t, "Load", res.Jobs[1].Limit)

	var b strings.Builder
	require.NoError(t, PrintPublished(&b, res, "", "team"))
	assert.Equal(t, `team/bert (Queued)
  trainers     0 asked for (0 ready), min 4, max 4
  queue        WaitingForQuota: position 1 of 1 in the queue: namespace team quota requests.cpu: 2 CPU left, the minimum needs 5 CPU
  progress     not reported: every trainer is taken to help equally

team/mnist (Running)
  trainers     5 asked for (4 ready), min 2, max 8
  limited by   Load: one more trainer (1 CPU) would take CPU requests past max_load_desired 0.97 (since 2026-11-21T12:00:00Z)
  last scaling 8 -> 5 at 2026-11-21T12:00:00Z: scale down by 3: CPU load 1 above max_load_desired 0.97
  progress     not reported: every trainer is taken to help equally

from each job's status, as the controller last wrote it: planning live needs the right to list nodes in every namespace
`, b.String())

	_, err = Published(context.Background(), tj, "team", "gone", "")
	var notFound *JobNotFoundError
	assert.ErrorAs(t, err, &notFound)
	one, err := Published(context.Background(), tj, "team", "mnist", "")
	require.NoError(t, err)
	require.Len(t, one.Jobs, 1)
	assert.Equal(t, int32(5), one.Jobs[0].Trainers.Desired)
}
