package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/scaling"
)

// The interfaces Metrics is wired to.
var (
	_ autoscaler.Metrics        = (*Metrics)(nil)
	_ workqueue.MetricsProvider = (*workqueueProvider)(nil)
)

func trainers(phases ...corev1.PodPhase) []snapshot.TrainerPod {
	out := make([]snapshot.TrainerPod, len(phases))
	for i, p := range phases {
		out[i] = snapshot.TrainerPod{Name: "t" + string(rune('a'+i)), Phase: p}
	}
	return out
}

var snap = snapshot.Snapshot{
	CPUTotalMilli: 24000, CPURequestMilli: 26500,
	MemoryTotalMega: 4096, MemoryRequestMega: 1024,
	GPUTotal: 4, GPURequest: 1,
}

func TestPlannedReportsTheClusterAndTheJobs(t *testing.T) {
	m := New("v1.2.3")
	m.Planned(30*time.Millisecond, snap, []planner.Job{
		{Key: "team-a/mnist", Min: 2, Max: 6, Current: 5, Trainers: trainers(corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodPending)},
		{Key: "team-b/starved", Min: 2, Max: 4, Current: 2, Trainers: trainers(corev1.PodPending)},
		{Key: "team-b/fixed", Min: 3, Max: 3, Current: 3},
	})
	want := `
# HELP edl_cluster_allocatable Allocatable of the Ready, schedulable nodes at the last autoscaling cycle, in cores, bytes or GPUs.
# TYPE edl_cluster_allocatable gauge
edl_cluster_allocatable{resource="cpu"} 24
edl_cluster_allocatable{resource="gpu"} 4
edl_cluster_allocatable{resource="memory"} 4.294967296e+09
# HELP edl_cluster_idle Allocatable minus requested at the last autoscaling cycle; negative when pending work asks for more than there is.
# TYPE edl_cluster_idle gauge
edl_cluster_idle{resource="cpu"} -2.5
edl_cluster_idle{resource="gpu"} 3
edl_cluster_idle{resource="memory"} 3.221225472e+09
# HELP edl_cluster_requested Requests of the pods that are neither Succeeded nor Failed, pending ones included, at the last autoscaling cycle.
# TYPE edl_cluster_requested gauge
edl_cluster_requested{resource="cpu"} 26.5
edl_cluster_requested{resource="gpu"} 1
edl_cluster_requested{resource="memory"} 1.073741824e+09
# HELP edl_job_fulfillment (running trainers - min-instance) / (max-instance - min-instance) of each Running elastic job; below 0 while fewer than min-instance run.
# TYPE edl_job_fulfillment gauge
edl_job_fulfillment{trainingjob="fixed",trainingjob_namespace="team-b"} 1
edl_job_fulfillment{trainingjob="mnist",trainingjob_namespace="team-a"} 0.25
edl_job_fulfillment{trainingjob="starved",trainingjob_namespace="team-b"} -1
# HELP edl_job_trainers Trainers of each Running elastic job: desired is the trainer ReplicaSet's replicas, running the trainer pods in phase Running.
# TYPE edl_job_trainers gauge
edl_job_trainers{state="desired",trainingjob="fixed",trainingjob_namespace="team-b"} 3
edl_job_trainers{state="desired",trainingjob="mnist",trainingjob_namespace="team-a"} 5
edl_job_trainers{state="desired",trainingjob="starved",trainingjob_namespace="team-b"} 2
edl_job_trainers{state="running",trainingjob="fixed",trainingjob_namespace="team-b"} 0
edl_job_trainers{state="running",trainingjob="mnist",trainingjob_namespace="team-a"} 3
edl_job_trainers{state="running",trainingjob="starved",trainingjob_namespace="team-b"} 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want),
		"edl_cluster_allocatable", "edl_cluster_requested", "edl_cluster_idle", "edl_job_fulfillment", "edl_job_trainers"))

	count, err := testutil.GatherAndCount(m.Gatherer(), "edl_autoscaler_plan_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, count)
	assert.Contains(t, scrape(t, m), "edl_autoscaler_plan_duration_seconds_sum 0.03\n")
}

// TestJobSeriesGoWithTheJob: a job that is no longer in the cycle loses its
// series, so that a deleted job does not report its last numbers forever.
func TestJobSeriesGoWithTheJob(t *testing.T) {
	m := New("dev")
	m.Planned(time.Millisecond, snap, []planner.Job{
		{Key: "ns/a", Min: 1, Max: 3, Current: 1}, {Key: "ns/b", Min: 1, Max: 3, Current: 1},
	})
	count, err := testutil.GatherAndCount(m.Gatherer(), "edl_job_fulfillment", "edl_job_trainers")
	require.NoError(t, err)
	assert.Equal(t, 2+4, count)

	m.Planned(time.Millisecond, snap, []planner.Job{{Key: "ns/b", Min: 1, Max: 3, Current: 2}})
	out := scrape(t, m)
	assert.NotContains(t, out, `trainingjob="a"`)
	assert.Contains(t, out, `edl_job_trainers{state="desired",trainingjob="b",trainingjob_namespace="ns"} 2`)
}

// TestNoClusterBeforeTheFirstCycle: a standby replica, which never plans,
// reports no cluster rather than a cluster of zeros.
func TestNoClusterBeforeTheFirstCycle(t *testing.T) {
	m := New("dev")
	count, err := testutil.GatherAndCount(m.Gatherer(), "edl_cluster_allocatable", "edl_job_trainers")
	require.NoError(t, err)
	assert.Zero(t, count)
}

func TestScaledCountsByDirectionAndReason(t *testing.T) {
	m := New("dev")
	m.Scaled(planner.ScaleAction{From: 2, To: 6, Cause: planner.CauseIdle})
	m.Scaled(planner.ScaleAction{From: 6, To: 4, Cause: planner.CausePriority})
	m.Scaled(planner.ScaleAction{From: 4, To: 3, Cause: planner.CausePriority})
	want := `
# HELP edl_autoscaler_scale_actions_total Trainer ReplicaSet scalings applied, by direction (up, down) and reason (idle, priority, minimum, rebalance, load, unschedulable, slower).
# TYPE edl_autoscaler_scale_actions_total counter
edl_autoscaler_scale_actions_total{direction="down",reason="load"} 0
edl_autoscaler_scale_actions_total{direction="down",reason="minimum"} 0
edl_autoscaler_scale_actions_total{direction="down",reason="priority"} 2
edl_autoscaler_scale_actions_total{direction="down",reason="rebalance"} 0
edl_autoscaler_scale_actions_total{direction="down",reason="slower"} 0
edl_autoscaler_scale_actions_total{direction="down",reason="unschedulable"} 0
edl_autoscaler_scale_actions_total{direction="up",reason="idle"} 1
edl_autoscaler_scale_actions_total{direction="up",reason="rebalance"} 0
`
	require.NoError(t, testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want), "edl_autoscaler_scale_actions_total"))
}

// TestJobsByCause: the gauge counts the last cycle's jobs by what limits
// them, every cause from the start, and a cause no job has any more goes
// back to 0.
func TestJobsByCause(t *testing.T) {
	m := New("dev")
	count, err := testutil.GatherAndCount(m.Gatherer(), "edl_autoscaler_jobs")
	require.NoError(t, err)
	assert.Equal(t, len(planner.Limits), count, "a series per cause before any cycle")

	m.Explained([]planner.Explanation{{Job: "ns/a", Limit: planner.LimitLoad}, {Job: "ns/b", Limit: planner.LimitLoad},
		{Job: "ns/c", Limit: planner.LimitNoRoom}})
	assert.Equal(t, 2.0, testutil.ToFloat64(m.jobsByCause.WithLabelValues("Load")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.jobsByCause.WithLabelValues("NoRoom")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.jobsByCause.WithLabelValues("AtMax")))

	m.Explained([]planner.Explanation{{Job: "ns/a", Limit: planner.LimitAtMax}})
	assert.Equal(t, 0.0, testutil.ToFloat64(m.jobsByCause.WithLabelValues("Load")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.jobsByCause.WithLabelValues("AtMax")))
}

func TestLeaderSyncErrorsRequestsAndBuildInfo(t *testing.T) {
	m := New("v1.2.3")
	assert.Equal(t, 0.0, testutil.ToFloat64(m.leader))
	m.SetLeader(true)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.leader))
	m.SetLeader(false)
	assert.Equal(t, 0.0, testutil.ToFloat64(m.leader))

	m.SyncFailed()
	m.SyncFailed()
	assert.Equal(t, 2.0, testutil.ToFloat64(m.syncErrors))

	m.Increment(context.Background(), "403", "GET", "api:6443")
	m.Increment(context.Background(), "200", "GET", "api:6443")
	m.Increment(context.Background(), "403", "GET", "api:6443")
	assert.Equal(t, 2.0, testutil.ToFloat64(m.requests.WithLabelValues("403", "GET")))

	out := scrape(t, m)
	assert.Contains(t, out, `edl_build_info{version="v1.2.3"} 1`)
	assert.Contains(t, out, "edl_leader 0")
	assert.Contains(t, out, "process_start_time_seconds", "the process collector is registered")
	assert.Contains(t, out, "go_goroutines", "the Go collector is registered")
}

// TestWorkqueueMetrics drives a real client-go queue through the provider.
func TestWorkqueueMetrics(t *testing.T) {
	m := New("dev")
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "trainingjobs", MetricsProvider: m.WorkqueueProvider()})
	defer q.ShutDown()
	q.Add("ns/a")
	q.Add("ns/b")
	assert.Equal(t, 2.0, testutil.ToFloat64(m.workqueue.depth.WithLabelValues("trainingjobs")))
	key, _ := q.Get()
	q.AddRateLimited(key)
	q.Done(key)
	assert.Equal(t, 2.0, testutil.ToFloat64(m.workqueue.adds.WithLabelValues("trainingjobs")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.workqueue.retries.WithLabelValues("trainingjobs")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.workqueue.depth.WithLabelValues("trainingjobs")))

	out := scrape(t, m)
	for _, name := range []string{"workqueue_queue_duration_seconds_count", "workqueue_work_duration_seconds_count",
		"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"} {
		assert.Contains(t, out, name+`{name="trainingjobs"}`)
	}
}

// scrape reads the handler the way Prometheus does.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	server := httptest.NewServer(m.Handler())
	defer server.Close()
	resp, err := server.Client().Get(server.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// TestQueueFailuresAndOptions: the queue gauges follow the last cycle, the
// admitted jobs' waits are observed, failed scalings count by direction and
// result from 0, and the options are exposed.
func TestQueueFailuresAndOptions(t *testing.T) {
	m := New("dev")
	m.Queued([]time.Duration{30 * time.Second, 5 * time.Minute})
	assert.Equal(t, 2.0, testutil.ToFloat64(m.queued))
	assert.Equal(t, 300.0, testutil.ToFloat64(m.oldestWait))
	m.Queued(nil)
	assert.Equal(t, 0.0, testutil.ToFloat64(m.queued))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.oldestWait), "none waits")

	m.Admitted(90 * time.Second)
	assert.Contains(t, scrape(t, m), "edl_admission_wait_seconds_sum 90\n")

	m.ScaleFailed(planner.ScaleAction{From: 2, To: 4}, true)
	m.ScaleFailed(planner.ScaleAction{From: 4, To: 2}, false)
	want := `
# HELP edl_autoscaler_scale_failures_total Trainer ReplicaSet scalings whose patch failed, by direction and result: lost_race (a concurrent writer changed the count first; the next plan starts from it) or error (the API server failed or refused the patch).
# TYPE edl_autoscaler_scale_failures_total counter
edl_autoscaler_scale_failures_total{direction="down",result="error"} 1
edl_autoscaler_scale_failures_total{direction="down",result="lost_race"} 0
edl_autoscaler_scale_failures_total{direction="up",result="error"} 0
edl_autoscaler_scale_failures_total{direction="up",result="lost_race"} 1
`
	require.NoError(t, testutil.GatherAndCompare(m.Gatherer(), strings.NewReader(want), "edl_autoscaler_scale_failures_total"))

	m.SetOptions(5*time.Second, 0.9)
	assert.Equal(t, 5.0, testutil.ToFloat64(m.interval))
	assert.Equal(t, 0.9, testutil.ToFloat64(m.loadTarget))
}

// TestNamesListsMetricsWithoutSeries: the cluster gauges, the request
// counter and the work queue's metrics have no series before a cycle, a
// request or a queue, and are listed all the same.
func TestNamesListsMetricsWithoutSeries(t *testing.T) {
	names := New("dev").Names()
	for _, n := range []string{"edl_cluster_requested", "edl_job_trainers", "edl_rest_client_requests_total",
		"workqueue_depth", "edl_autoscaler_plan_duration_seconds", "edl_admission_oldest_wait_seconds", "edl_leader"} {
		assert.Contains(t, names, n)
	}
	assert.NotContains(t, names, "edl_no_such_metric")
	assert.IsNonDecreasing(t, names)
}

// TestLabelsNameEveryMetricsLabels: Labels gives each metric its constant
// and variable labels, which test/monitoring checks the queries against.
func TestLabelsNameEveryMetricsLabels(t *testing.T) {
	labels := New("dev").Labels()
	assert.Equal(t, []string{"version"}, labels["edl_build_info"])
	assert.Equal(t, []string{LabelTrainingJobNamespace, LabelTrainingJob, "state"}, labels["edl_job_trainers"])
	assert.Equal(t, []string{"name"}, labels["workqueue_depth"])
	assert.Empty(t, labels["edl_leader"])
	assert.Contains(t, labels, "edl_leader")
	assert.Len(t, labels, len(New("dev").Names()))
}

// TestProgressSeries: a job whose training reports its progress has a
// throughput, a speedup (at its desired trainers, as its model predicts)
// and, once known, an ETA; a job that reports nothing has none of them.
func TestProgressSeries(t *testing.T) {
	m := New("dev")
	model := scaling.Model{Params: scaling.Params{GradBase: 0.1, GradPerSample: 0.001, SyncLocalBase: 0.05, SyncNetBase: 0.05, Overlap: 1}, MaxTrainers: 2}
	m.Planned(time.Millisecond, snap, []planner.Job{
		{Key: "ns/reports", Min: 1, Max: 4, Current: 2, Progress: &planner.Progress{Model: model, Batch: 1000, Nodes: 1, Throughput: 812.5, Left: 90 * time.Second}},
		{Key: "ns/starting", Min: 1, Max: 4, Current: 1, Progress: &planner.Progress{Batch: 1}},
		{Key: "ns/silent", Min: 1, Max: 4, Current: 3},
	})
	out := scrape(t, m)
	assert.Contains(t, out, `edl_job_throughput{trainingjob="reports",trainingjob_namespace="ns"} 812.5`)
	want := model.Predict(2, 1, 1000).Speedup
	require.Greater(t, want, 1.0)
	assert.Contains(t, out, fmt.Sprintf(`edl_job_speedup{trainingjob="reports",trainingjob_namespace="ns"} %g`, want))
	assert.Contains(t, out, `edl_job_eta_seconds{trainingjob="reports",trainingjob_namespace="ns"} 90`)
	assert.Contains(t, out, `edl_job_speedup{trainingjob="starting",trainingjob_namespace="ns"} 1`, "unmeasured: every trainer helps")
	assert.NotContains(t, out, `edl_job_eta_seconds{trainingjob="starting"`, "no ETA yet")
	for _, name := range []string{"edl_job_throughput", "edl_job_speedup", "edl_job_eta_seconds"} {
		assert.NotContains(t, out, name+`{trainingjob="silent"`, "a job that reports nothing")
	}
}
