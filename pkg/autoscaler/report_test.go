package autoscaler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
)

// TestExplainReportsEveryJobAndWritesNothing: the report covers every
// TrainingJob — the plan's explanation and next action for the elastic
// Running ones, not running or not elastic for the others — with the
// cluster line, and writes nothing.
func TestExplainReportsEveryJobAndWritesNothing(t *testing.T) {
	foreign := elasticJob("d", 1, 4, 1)
	foreign[1].(*appsv1.ReplicaSet).OwnerReferences = nil
	objs := objects(
		elasticJob("a", 1, 4, 1),
		elasticJob("b", 1, 4, 1, func(j *v1.TrainingJob) {
			j.Status.Phase, j.Status.Message = v1.PhasePending, "1 pods cannot be scheduled yet"
		}),
		elasticJob("c", 3, 3, 3),
		foreign,
		[]runtime.Object{node("n1", "10", "64Gi")},
	)
	f := newActuatorFixture(t, Config{MaxLoadDesired: 0.97, Interval: time.Second, CoolDown: 3 * time.Second}, objs...)
	r := f.scaler.Explain()
	assert.Empty(t, f.writes())

	assert.True(t, r.Time.Equal(f.clock.Now()))
	assert.Equal(t, 0.97, r.Options.MaxLoadDesired)
	assert.Equal(t, 3*time.Second, r.Options.CoolDown)
	assert.Equal(t, ClusterLine{Nodes: 1, Allocatable: planner.Resources{CPUMilli: 10000, MemoryMega: 65536},
		Requested: planner.Resources{CPUMilli: 6000, MemoryMega: 6144}, Load: map[string]float64{"CPU": 0.6, "memory": 0.09375}}, r.Cluster, "the 6 trainers of the four jobs")

	require.Len(t, r.Jobs, 4)
	a := r.Jobs[0]
	assert.Equal(t, "a", a.Name)
	assert.Equal(t, "Running", a.Phase)
	assert.Equal(t, 1, a.Running)
	require.NotNil(t, a.Next, "the next cycle grows it")
	assert.Equal(t, int32(4), a.Next.To)
	assert.Equal(t, planner.LimitAtMax, a.Limit)

	assert.Equal(t, planner.LimitNotRunning, r.Jobs[1].Limit)
	assert.Equal(t, "the job is Pending, and only Running jobs are scaled (0 of 1..4 trainers): 1 pods cannot be scheduled yet", r.Jobs[1].Message)
	assert.Nil(t, r.Jobs[1].Next)
	assert.Equal(t, planner.LimitNotElastic, r.Jobs[2].Limit)
	assert.Equal(t, "min-instance equals max-instance (3): the autoscaler does not scale it", r.Jobs[2].Message)
	assert.Equal(t, planner.LimitNotElastic, r.Jobs[3].Limit)
	assert.Contains(t, r.Jobs[3].Message, "its trainer ReplicaSet d-trainer is missing or not controlled by the job")
}

// TestTeamReportsBorrowAndLend: a team above its share borrows the
// difference, one below it lends it, resource by resource; the default team
// names no namespace.
func TestTeamReportsBorrowAndLend(t *testing.T) {
	got := teamReports([]planner.TeamShare{
		{Team: "default", Deserved: planner.Resources{CPUMilli: 2000}, Used: planner.Resources{CPUMilli: 2000}},
		{Team: "nlp", Deserved: planner.Resources{CPUMilli: 4000, GPU: 2}, Used: planner.Resources{CPUMilli: 6000, GPU: 1}},
	}, []planner.Team{{Name: "nlp", Namespaces: []string{"nlp"}}})
	require.Equal(t, []TeamReport{
		{Team: "default", Deserved: planner.Resources{CPUMilli: 2000}, Used: planner.Resources{CPUMilli: 2000}},
		{Team: "nlp", Namespaces: []string{"nlp"}, Deserved: planner.Resources{CPUMilli: 4000, GPU: 2}, Used: planner.Resources{CPUMilli: 6000, GPU: 1},
			Borrowed: planner.Resources{CPUMilli: 2000}, Lent: planner.Resources{GPU: 1}},
	}, got)
}
