package metrics

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// Resource label values of the cluster metrics, in base units: CPU cores,
// memory bytes and GPU devices (the -gpu_resources, summed).
const (
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
	ResourceGPU    = "gpu"
)

const mebi = 1 << 20

// The labels that name a TrainingJob on the per-job series. They are not
// "namespace" and "job": Prometheus sets those on every series it scrapes
// (the target's), and with honor_labels: false — its default, and the
// ServiceMonitor's — it would rename EDL's to exported_namespace and
// exported_job, merging every job into one series named after the
// controller.
const (
	LabelTrainingJobNamespace = "trainingjob_namespace"
	LabelTrainingJob          = "trainingjob"
)

// LabelTeam names a team (its TrainingQueue) on edl_team_share.
const LabelTeam = "team"

// The kind label values of edl_team_share.
const (
	KindDeserved = "deserved"
	KindUsed     = "used"
	KindBorrowed = "borrowed"
)

// Metrics is EDL's metrics registry. Its methods are safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	planDuration prometheus.Histogram
	scaleActions *prometheus.CounterVec
	scaleFails   *prometheus.CounterVec
	interval     prometheus.Gauge
	loadTarget   prometheus.Gauge
	queued       prometheus.Gauge
	oldestWait   prometheus.Gauge
	admitWait    prometheus.Histogram
	requeues     *prometheus.CounterVec
	jobsByCause  *prometheus.GaugeVec
	teamShare    *teamCollector
	leader       prometheus.Gauge
	syncErrors   prometheus.Counter
	requests     *prometheus.CounterVec
	workqueue    *workqueueProvider
	state        *stateCollector
}

// New returns a Metrics whose registry also holds the process and Go runtime
// collectors and edl_build_info for version.
func New(version string) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		planDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "edl_autoscaler_plan_duration_seconds",
			Help: "Time one autoscaling cycle takes to snapshot the cluster and plan.",
			// 100µs to about 26s: small clusters plan in microseconds, the
			// largest benchmarked in hundreds of milliseconds.
			Buckets: prometheus.ExponentialBuckets(1e-4, 2, 19),
		}),
		scaleActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edl_autoscaler_scale_actions_total",
			Help: "Trainer ReplicaSet scalings applied, by direction (up, down) and reason (idle, priority, minimum, rebalance, load, unschedulable, slower).",
		}, []string{"direction", "reason"}),
		scaleFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edl_autoscaler_scale_failures_total",
			Help: "Trainer ReplicaSet scalings whose patch failed, by direction and result: lost_race (a concurrent writer changed the count first; the next plan starts from it) or error (the API server failed or refused the patch).",
		}, []string{"direction", "result"}),
		interval: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edl_autoscaler_interval_seconds",
			Help: "The configured time between two autoscaling plans (autoscaler.interval): the budget of one plan.",
		}),
		loadTarget: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edl_autoscaler_max_load_desired",
			Help: "The configured load target (autoscaler.maxLoadDesired): the share of allocatable that requests may reach.",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edl_admission_queued_jobs",
			Help: "TrainingJobs that wait for admission after the last autoscaling cycle.",
		}),
		oldestWait: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edl_admission_oldest_wait_seconds",
			Help: "How long the job that has waited longest for admission has waited since it last entered the queue (created, resumed, preempted or requeued), at the last autoscaling cycle; 0 when none waits.",
		}),
		admitWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "edl_admission_wait_seconds",
			Help: "How long each admitted TrainingJob waited in the queue since it last entered it (created, resumed, preempted or requeued).",
			// 1 s to about 4.5 hours.
			Buckets: prometheus.ExponentialBuckets(1, 2, 15),
		}),
		requeues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edl_admission_requeues_total",
			Help: "Admitted TrainingJobs sent back to the queue because their minimum was not all running within the start deadline, by outcome: retry (admitted again after a backoff) or final (the last try: it stays queued).",
		}, []string{"outcome"}),
		jobsByCause: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "edl_autoscaler_jobs",
			Help: "Elastic jobs at the last autoscaling cycle, by what limits their trainers (the reason of their Scaling condition: AtMax, Load, NoRoom, FairShare, CoolDown, Quota, …).",
		}, []string{"cause"}),
		teamShare: newTeamCollector(),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edl_leader",
			Help: "1 while this replica holds the leader lease and runs the controller and the autoscaler, else 0.",
		}),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "edl_controller_sync_errors_total",
			Help: "TrainingJob syncs that failed and were requeued.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edl_rest_client_requests_total",
			Help: "Requests to the API server, by HTTP status code and method.",
		}, []string{"code", "method"}),
		workqueue: newWorkqueueProvider(),
		state:     newStateCollector(),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "edl_build_info",
		Help:        "Always 1; the version label is the edl binary's.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	buildInfo.Set(1)
	m.registry.MustRegister(
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		buildInfo, m.planDuration, m.scaleActions, m.scaleFails, m.interval, m.loadTarget, m.queued, m.oldestWait, m.admitWait, m.requeues, m.jobsByCause, m.teamShare, m.leader, m.syncErrors, m.requests, m.state,
	)
	m.workqueue.register(m.registry)
	// Every direction and reason exists from the start, so that rate() and
	// alerts see a 0 rather than no series.
	m.scaleActions.WithLabelValues("up", string(planner.CauseIdle))
	m.scaleActions.WithLabelValues("up", string(planner.CauseRebalance))
	m.scaleActions.WithLabelValues("down", string(planner.CausePriority))
	m.scaleActions.WithLabelValues("down", string(planner.CauseMinimum))
	m.scaleActions.WithLabelValues("down", string(planner.CauseRebalance))
	m.scaleActions.WithLabelValues("down", string(planner.CauseLoad))
	m.scaleActions.WithLabelValues("down", string(planner.CauseUnschedulable))
	m.scaleActions.WithLabelValues("down", string(planner.CauseSlower))
	for _, dir := range []string{"up", "down"} {
		for _, result := range []string{resultLostRace, resultError} {
			m.scaleFails.WithLabelValues(dir, result)
		}
	}
	for _, l := range planner.Limits {
		m.jobsByCause.WithLabelValues(string(l))
	}
	return m
}

// The result label values of edl_autoscaler_scale_failures_total.
const (
	resultLostRace = "lost_race"
	resultError    = "error"
)

// SetOptions records the autoscaler's configured interval and load target,
// which dashboards and alerts compare the plan duration and the cluster's
// load with.
func (m *Metrics) SetOptions(interval time.Duration, maxLoadDesired float64) {
	m.interval.Set(interval.Seconds())
	m.loadTarget.Set(maxLoadDesired)
}

// ScaleFailed counts a scaling whose patch failed; it implements
// autoscaler.Metrics.
func (m *Metrics) ScaleFailed(act planner.ScaleAction, lost bool) {
	result := resultError
	if lost {
		result = resultLostRace
	}
	m.scaleFails.WithLabelValues(direction(act), result).Inc()
}

// Queued records the queue after a cycle; it implements autoscaler.Metrics.
func (m *Metrics) Queued(waits []time.Duration) {
	var oldest time.Duration
	for _, w := range waits {
		oldest = max(oldest, w)
	}
	m.queued.Set(float64(len(waits)))
	m.oldestWait.Set(oldest.Seconds())
}

// Admitted observes an admitted job's wait; it implements
// autoscaler.Metrics.
func (m *Metrics) Admitted(wait time.Duration) { m.admitWait.Observe(wait.Seconds()) }

// Requeued counts a job requeued because it did not start in time.
func (m *Metrics) Requeued(final bool) {
	outcome := "retry"
	if final {
		outcome = "final"
	}
	m.requeues.WithLabelValues(outcome).Inc()
}

// Gatherer is the registry, for tests and for serving it elsewhere.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Planned records one autoscaling cycle; it implements autoscaler.Metrics.
// The cluster and job series are replaced by this cycle's: a job that is no
// longer Running and elastic loses its series.
func (m *Metrics) Planned(took time.Duration, snap snapshot.Snapshot, jobs []planner.Job) {
	m.planDuration.Observe(took.Seconds())
	m.state.set(snap, jobs)
}

// Explained counts the jobs of the last cycle by what limits them; it
// implements autoscaler.Metrics. Every cause has a series, 0 when no job has
// it.
func (m *Metrics) Explained(jobs []planner.Explanation) {
	counts := make(map[planner.Limit]int, len(planner.Limits))
	for _, e := range jobs {
		counts[e.Limit]++
	}
	for _, l := range planner.Limits {
		m.jobsByCause.WithLabelValues(string(l)).Set(float64(counts[l]))
	}
}

// Scaled counts an applied scaling; it implements autoscaler.Metrics.
func (m *Metrics) Scaled(act planner.ScaleAction) {
	m.scaleActions.WithLabelValues(direction(act), string(act.Cause)).Inc()
}

func direction(act planner.ScaleAction) string {
	if act.To < act.From {
		return "down"
	}
	return "up"
}

// SyncFailed counts a failed sync; it implements controller.Metrics.
func (m *Metrics) SyncFailed() { m.syncErrors.Inc() }

// SetLeader records whether this replica leads.
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// Increment counts one API request; it implements client-go's
// tools/metrics.ResultMetric, for metrics.Register's RequestResult.
func (m *Metrics) Increment(_ context.Context, code, method, _ string) {
	m.requests.WithLabelValues(code, method).Inc()
}

// stateCollector reports the last cycle's cluster and jobs as they were:
// series exist exactly for what the last snapshot held.
type stateCollector struct {
	allocatable, requested, idle *prometheus.Desc
	fulfillment, trainers        *prometheus.Desc
	resizeCost                   *prometheus.Desc
	throughput, speedup, eta     *prometheus.Desc

	mu   sync.Mutex
	seen bool
	snap snapshot.Snapshot
	jobs []jobState
}

type jobState struct {
	namespace, name  string
	fulfillment      float64
	desired, running int
	// resizeCost is the measured cost of the last resize of a job that
	// restarts on resize; priced says it is one.
	resizeCost float64
	priced     bool
	// progress is what the job's training reports; nil for nothing.
	progress *planner.Progress
	speedup  float64
}

func newStateCollector() *stateCollector {
	return &stateCollector{
		allocatable: prometheus.NewDesc("edl_cluster_allocatable",
			"Allocatable of the Ready, schedulable nodes at the last autoscaling cycle, in cores, bytes or GPUs.", []string{"resource"}, nil),
		requested: prometheus.NewDesc("edl_cluster_requested",
			"Requests of the pods that are neither Succeeded nor Failed, pending ones included, at the last autoscaling cycle.", []string{"resource"}, nil),
		idle: prometheus.NewDesc("edl_cluster_idle",
			"Allocatable minus requested at the last autoscaling cycle; negative when pending work asks for more than there is.", []string{"resource"}, nil),
		fulfillment: prometheus.NewDesc("edl_job_fulfillment",
			"(running trainers - min-instance) / (max-instance - min-instance) of each Running elastic job; below 0 while fewer than min-instance run.", []string{LabelTrainingJobNamespace, LabelTrainingJob}, nil),
		trainers: prometheus.NewDesc("edl_job_trainers",
			"Trainers of each Running elastic job: desired is the trainer ReplicaSet's replicas, running the trainer pods in phase Running.", []string{LabelTrainingJobNamespace, LabelTrainingJob, "state"}, nil),
		throughput: prometheus.NewDesc("edl_job_throughput",
			"Work a second (samples or steps, as the job reports it) of each Running elastic job whose training reports its progress, at the size of its last report: measured there, else predicted.", []string{LabelTrainingJobNamespace, LabelTrainingJob}, nil),
		speedup: prometheus.NewDesc("edl_job_speedup",
			"Throughput at the job's desired trainers relative to one trainer's, as its scaling model predicts, for each Running elastic job whose training reports its progress.", []string{LabelTrainingJobNamespace, LabelTrainingJob}, nil),
		eta: prometheus.NewDesc("edl_job_eta_seconds",
			"Time each Running elastic job had left at its training's last report (work left at its throughput); no series while it is unknown.", []string{LabelTrainingJobNamespace, LabelTrainingJob}, nil),
		resizeCost: prometheus.NewDesc("edl_job_resize_cost_seconds",
			"Measured cost of the last resize of each Running elastic job whose trainers all restart on a resize (PyTorch, Horovod): from the resize until every trainer pod was Ready again; 0 before one was measured.", []string{LabelTrainingJobNamespace, LabelTrainingJob}, nil),
	}
}

func (c *stateCollector) set(snap snapshot.Snapshot, jobs []planner.Job) {
	states := make([]jobState, 0, len(jobs))
	for _, j := range jobs {
		running := 0
		for _, t := range j.Trainers {
			if t.Running() {
				running++
			}
		}
		fulfillment := 1.0
		if j.Max > j.Min {
			fulfillment = float64(int32(running)-j.Min) / float64(j.Max-j.Min)
		}
		ns, name, _ := strings.Cut(j.Key, "/")
		states = append(states, jobState{namespace: ns, name: name, fulfillment: fulfillment, desired: int(j.Current), running: running,
			resizeCost: j.ResizeCost.Seconds(), priced: j.RestartsOnResize, progress: j.Progress, speedup: j.Progress.Speedup(j.Current)})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen, c.snap, c.jobs = true, snap, states
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.allocatable, c.requested, c.idle, c.fulfillment, c.trainers, c.resizeCost, c.throughput, c.speedup, c.eta} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seen {
		return // no cycle yet: a standby replica reports no cluster
	}
	s := c.snap
	idle := s.Idle()
	for _, r := range []struct {
		name                   string
		alloc, requested, idle float64
	}{
		{ResourceCPU, float64(s.CPUTotalMilli) / 1000, float64(s.CPURequestMilli) / 1000, float64(idle.CPUMilli) / 1000},
		{ResourceMemory, float64(s.MemoryTotalMega) * mebi, float64(s.MemoryRequestMega) * mebi, float64(idle.MemoryMega) * mebi},
		{ResourceGPU, float64(s.GPUTotal), float64(s.GPURequest), float64(idle.GPU)},
	} {
		ch <- prometheus.MustNewConstMetric(c.allocatable, prometheus.GaugeValue, r.alloc, r.name)
		ch <- prometheus.MustNewConstMetric(c.requested, prometheus.GaugeValue, r.requested, r.name)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, r.idle, r.name)
	}
	for _, j := range c.jobs {
		ch <- prometheus.MustNewConstMetric(c.fulfillment, prometheus.GaugeValue, j.fulfillment, j.namespace, j.name)
		ch <- prometheus.MustNewConstMetric(c.trainers, prometheus.GaugeValue, float64(j.desired), j.namespace, j.name, "desired")
		ch <- prometheus.MustNewConstMetric(c.trainers, prometheus.GaugeValue, float64(j.running), j.namespace, j.name, "running")
		if j.priced {
			ch <- prometheus.MustNewConstMetric(c.resizeCost, prometheus.GaugeValue, j.resizeCost, j.namespace, j.name)
		}
		if p := j.progress; p != nil {
			ch <- prometheus.MustNewConstMetric(c.throughput, prometheus.GaugeValue, p.Throughput, j.namespace, j.name)
			ch <- prometheus.MustNewConstMetric(c.speedup, prometheus.GaugeValue, j.speedup, j.namespace, j.name)
			if p.Left > 0 {
				ch <- prometheus.MustNewConstMetric(c.eta, prometheus.GaugeValue, p.Left.Seconds(), j.namespace, j.name)
			}
		}
	}
}

// fqName finds a descriptor's metric name in its String form, the only way
// client_golang shows it.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the name of every metric the registry exposes, whether or
// not it has a series yet, sorted: what dashboards and alerts may query.
func (m *Metrics) Names() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		m.registry.Describe(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	for d := range ch {
		if match := fqName.FindStringSubmatch(d.String()); match != nil {
			seen[match[1]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
