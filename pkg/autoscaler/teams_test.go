package autoscaler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// queue is a TrainingQueue of weight over namespaces.
func queue(name string, weight int32, namespaces ...string) *v1.TrainingQueue {
	return &v1.TrainingQueue{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1.TrainingQueueSpec{Namespaces: namespaces, Weight: &weight}}
}

// queueStatuses are the TrainingQueue status updates the fixture sent, by
// queue.
func queueStatuses(f *actuatorFixture) map[string][]v1.TrainingQueueStatus {
	out := map[string][]v1.TrainingQueueStatus{}
	for _, a := range f.writes() {
		if a.GetResource().Resource == "trainingqueues" && a.GetSubresource() == "status" {
			if u, ok := a.(interface{ GetObject() runtime.Object }); ok {
				q := u.GetObject().(*v1.TrainingQueue)
				out[q.Name] = append(out[q.Name], q.Status)
			}
		}
	}
	return out
}

// TestRunOnceRecordsEachTeamsShare: with TrainingQueues, a cycle writes
// each queue's deserved and used share, its running jobs and no conflict,
// and the next cycle, with nothing changed, writes nothing.
func TestRunOnceRecordsEachTeamsShare(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "8", "64Gi"), queue("team-a", 2, "ns"), queue("idle", 1, "elsewhere")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	f.scaler.RunOnce(context.Background())
	got := queueStatuses(f)
	require.Len(t, got["team-a"], 1)
	a := got["team-a"][0]
	assert.Equal(t, int32(1), a.RunningJobs)
	assert.Equal(t, "4", a.Used.Cpu().String(), "after the plan: its trainer and the 3 it grows by")
	assert.Equal(t, "4", a.Deserved.Cpu().String(), "trainers of 1 CPU up to max 4: its demand, all of it deserved")
	assert.Empty(t, a.Lent)
	assert.Empty(t, a.Borrowed)
	assert.False(t, meta.IsStatusConditionTrue(a.Conditions, v1.ConditionConflict))
	require.Len(t, got["idle"], 1, "an idle team's status says so too")
	assert.Empty(t, got["idle"][0].Deserved)

	// The fixture's ReplicaSet patch creates no pods: nothing changes, and
	// nothing is written again.
	for _, q := range []string{"team-a", "idle"} {
		stored, err := f.tj.PaddlepaddleV1().TrainingQueues().Get(context.Background(), q, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, f.tjInf.Paddlepaddle().V1().TrainingQueues().Informer().GetStore().Update(stored))
	}
	f.tj.ClearActions()
	f.kube.ClearActions()
	f.scaler.RunOnce(context.Background())
	assert.Empty(t, queueStatuses(f))
}

// TestANamespaceInTwoQueuesIsReportedNotSplit: a namespace named by two
// TrainingQueues belongs to neither — its jobs are the default team's — and
// both queues say so in their Conflict condition, naming it.
func TestANamespaceInTwoQueuesIsReportedNotSplit(t *testing.T) {
	objs := objects(elasticJob("a", 1, 4, 1), []runtime.Object{node("n1", "8", "64Gi"), queue("one", 1, "ns", "x"), queue("two", 1, "ns")})
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second}, objs...)
	teams := f.scaler.readTeams()
	require.Len(t, teams.planned, 2)
	assert.Equal(t, []string{"x"}, teams.planned[0].Namespaces, "queue one keeps only x")
	assert.Empty(t, teams.planned[1].Namespaces)
	f.scaler.RunOnce(context.Background())
	got := queueStatuses(f)
	for _, q := range []string{"one", "two"} {
		require.Len(t, got[q], 1, q)
		c := meta.FindStatusCondition(got[q][0].Conditions, v1.ConditionConflict)
		require.NotNil(t, c, q)
		assert.Equal(t, metav1.ConditionTrue, c.Status, q)
		assert.Contains(t, c.Message, "ns", q)
		assert.Equal(t, int32(0), got[q][0].RunningJobs, "%s: the job of ns is the default team's", q)
	}
}
