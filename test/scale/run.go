package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/experiment"
	"github.com/paddlepaddle/edl/test/framework"
)

// BucketWidth is the width of the requests plot's buckets.
const BucketWidth = 10 * time.Second

// CycleMetric is the histogram of one autoscaling cycle's snapshot and plan.
const CycleMetric = "edl_autoscaler_plan_duration_seconds"

// AuditPolicy keeps the audit log small at scale: the status writes of
// kwok's fake kubelets and the node leases, which edl never sends, are not
// logged; every other request's metadata is (framework.AuditPolicy).
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  resources:
  - group: ""
    resources: ["pods/status", "nodes/status"]
- level: None
  namespaces: ["kube-node-lease"]
- level: Metadata
`

// ControllerManagerFlags and SchedulerFlags raise the control plane's own
// API rate limits (defaults: 20 QPS / 30 burst and 50 / 100), which, not
// edl, would otherwise pace the creation and binding of thousands of pods.
var (
	ControllerManagerFlags = []string{"--kube-api-qps=300", "--kube-api-burst=500", "--concurrent-replicaset-syncs=10", "--concurrent-deployment-syncs=10"}
	SchedulerFlags         = []string{"--kube-api-qps=300", "--kube-api-burst=500"}
)

// KwokPodParallelism is how many pod stages kwok plays at once (default 4):
// at 4, its deletions fell minutes behind a 2,000-node run.
const KwokPodParallelism = 16

// Options say where and how to run.
type Options struct {
	Config
	// EDL is the edl binary.
	EDL string
	// Dir keeps the run's logs: edl.log, audit.log, cluster/logs.
	Dir string
	// Progress receives a line per step.
	Progress io.Writer
}

// Sample is one reading of edl's /proc files and of the cluster.
type Sample struct {
	At  time.Duration // since edl started
	RSS int64
	CPU float64 // seconds since edl started
	// Pods are the cluster's pods that have not ended.
	Pods int
}

// Phase is a stretch of the run whose CPU use is reported.
type Phase struct {
	Name       string
	Start, End time.Duration
}

// Settle is how long the jobs took to reach their plan's targets after a step.
type Settle struct {
	Name string
	// Total is from the step until every job ran its trainer ReplicaSet's
	// replicas (and the web service all of its pods); EDL is from the step
	// until edl's last change of a trainer ReplicaSet's replicas, the rest
	// being the ReplicaSet controller's, the scheduler's and kwok's.
	Total, EDL time.Duration
	// TrainersBefore and TrainersAfter are the running trainers.
	TrainersBefore, TrainersAfter int
	// Settled is false when SettleTimeout passed first.
	Settled bool
	Why     string
	// Start is when the step was made; Timeline is what each component did
	// until it settled ([ReadTimeline]); Figures what happened to the web
	// service and the jobs in that time.
	Start    time.Time
	Timeline []Span
	Figures  StepFigures
}

// Result is what a run measured.
type Result struct {
	Config  Config
	Samples []Sample
	Phases  []Phase
	Settles []Settle
	Steady  []RequestCount
	Buckets []RequestBucket
	// Requests are edl's requests over the whole run; FillStatus its status
	// writes while the jobs start (the fill).
	Requests    []RequestCount
	FillStatus  StatusWrites
	Cycle       Histogram
	Setup, Wall time.Duration
	// LoadBefore and LoadAfter are /proc/loadavg at the start and the end.
	LoadBefore, LoadAfter string
	// Pods is the most pods the cluster held.
	Pods int
}

// Run starts a control plane, edl and the workload, drives the wave and
// measures; it stops everything before it returns.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	began := time.Now()
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	step := func(format string, args ...any) {
		fmt.Fprintf(progress, "%s "+format+"\n", append([]any{time.Since(began).Round(time.Second)}, args...)...)
	}
	res = &Result{Config: cfg, LoadBefore: loadavg()}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	clusterDir := filepath.Join(opts.Dir, "cluster")
	if err := os.RemoveAll(clusterDir); err != nil {
		return nil, err
	}
	policy, auditLog := filepath.Join(opts.Dir, "audit-policy.yaml"), filepath.Join(opts.Dir, "audit.log")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o600); err != nil {
		return nil, err
	}
	_ = os.Remove(auditLog)
	if rotated, err := filepath.Glob(filepath.Join(opts.Dir, "audit-*.log")); err == nil {
		for _, f := range rotated {
			_ = os.Remove(f)
		}
	}
	step("starting a control plane with %d kwok nodes of %d CPU / %s (logs in %s)", cfg.Nodes, cfg.NodeCPU, cfg.NodeMemory, filepath.Join(clusterDir, "logs"))
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	cp, err := framework.Start(startCtx, framework.Options{
		Dir:   clusterDir,
		Nodes: []framework.NodeSpec{{Name: "node", CPU: fmt.Sprint(cfg.NodeCPU), Memory: cfg.NodeMemory, Pods: cfg.NodePods, Count: cfg.Nodes}},
		// kube-apiserver rotates its audit log at 100 MB by default, and
		// the run reads one file: a 2,000-node run writes 800 MB.
		APIServerFlags: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-maxsize=100000",
			"--max-requests-inflight=800", "--max-mutating-requests-inflight=400"},
		ControllerManagerFlags: ControllerManagerFlags,
		SchedulerFlags:         SchedulerFlags,
		KwokPodParallelism:     KwokPodParallelism,
	})
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := cp.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
		_ = os.RemoveAll(filepath.Join(clusterDir, "etcd"))
	}()
	res.Setup = time.Since(began)
	step("control plane up")

	root, err := framework.ModuleRoot()
	if err != nil {
		return nil, err
	}
	if err := cp.ApplyCRD(ctx, filepath.Join(root, "thirdpartyresource.yaml")); err != nil {
		return nil, err
	}
	clientCfg := experiment.ClientConfig(cp.Config)
	kube, err := kubernetes.NewForConfig(clientCfg)
	if err != nil {
		return nil, err
	}
	tj, err := tjclient.NewForConfig(clientCfg)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Namespaces {
		if err := experiment.Install(ctx, kube, Namespace(i)); err != nil {
			return nil, err
		}
	}
	// edl's leader-election Lease lives in paddlecloud (-leader_elect_namespace).
	for _, ns := range []string{WebNamespace, "paddlecloud"} {
		if err := experiment.Install(ctx, kube, ns); err != nil {
			return nil, err
		}
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	w, err := newWatcher(kube)
	if err != nil {
		return nil, err
	}
	if err := w.start(runCtx); err != nil {
		return nil, err
	}

	edl, err := framework.StartEDL(framework.EDLOptions{Binary: opts.EDL, LogPath: filepath.Join(opts.Dir, "edl.log"),
		StartupGrace: experiment.EDLStartup, Args: append([]string{"-kubeconfig", cp.Kubeconfig,
			"-autoscale_interval", cfg.Interval.String(), "-log_level", "info", "-http_addr", "127.0.0.1:0"}, cfg.EDLFlags...)})
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := edl.Stop(experiment.EDLStopGrace); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	serving, err := edl.WaitForLine(ctx, framework.EDLServingLine, time.Minute)
	if err != nil {
		return nil, err
	}
	metricsURL := "http://" + serving[1] + "/metrics"
	origin := edl.Started()
	at := func(t time.Time) time.Duration { return t.Sub(origin) }

	// Sample edl's /proc files, the CPU time of the machine and of each
	// process, and the cluster's pods every second.
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		sampErr  error
		readings []CPUReading
	)
	pids := cp.PIDs()
	pids["edl"] = edl.Pid()
	sampCtx, stopSampling := context.WithCancel(runCtx)
	wg.Go(func() {
		wait.UntilWithContext(sampCtx, func(context.Context) {
			p, err := ReadProc(edl.Pid())
			var r CPUReading
			if err == nil {
				r, err = ReadCPU(pids)
			}
			s, _ := w.state(0, 0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				sampErr = err
				return
			}
			readings = append(readings, r)
			res.Samples = append(res.Samples, Sample{At: at(time.Now()), RSS: p.RSS, CPU: p.CPU, Pods: s.Pods})
			res.Pods = max(res.Pods, s.Pods)
		}, time.Second)
	})
	stopSamples := func() error {
		stopSampling()
		wg.Wait()
		return sampErr
	}
	defer func() { _ = stopSamples() }()

	// settle waits for the step made at t0 to settle.
	settle := func(name string, web int32, t0 time.Time) (Settle, error) {
		before, err := w.state(cfg.Jobs, web)
		if err != nil {
			return Settle{}, err
		}
		out := Settle{Name: name, TrainersBefore: before.Trainers, Start: t0}
		var since time.Time // when the cluster last became settled
		quiet := max(6*cfg.Interval, 30*time.Second)
		var last state
		err = wait.PollUntilContextTimeout(ctx, time.Second, cfg.SettleTimeout, false, func(context.Context) (bool, error) {
			s, err := w.state(cfg.Jobs, web)
			if err != nil {
				return false, err
			}
			last = s
			if !s.Settled {
				since = time.Time{}
				return false, nil
			}
			if since.IsZero() {
				since = time.Now()
			}
			change := w.lastTrainerChange()
			return time.Since(change) >= quiet && time.Since(since) >= quiet, nil
		})
		out.TrainersAfter, out.Why = last.Trainers, last.Why
		switch {
		case err == nil:
			out.Settled = true
			change := w.lastTrainerChange()
			end := since
			if change.After(end) {
				end = change
			}
			out.Total = end.Sub(t0)
			if change.After(t0) {
				out.EDL = change.Sub(t0)
			}
		case ctx.Err() != nil:
			return out, ctx.Err()
		default:
			out.Total = time.Since(t0)
		}
		res.Settles = append(res.Settles, out)
		step("%s: %d → %d running trainers in %s (settled %t, edl's last change at %s) %s", name,
			out.TrainersBefore, out.TrainersAfter, out.Total.Round(time.Second), out.Settled, out.EDL.Round(time.Second), out.Why)
		return out, nil
	}
	phase := func(name string, start time.Time) {
		res.Phases = append(res.Phases, Phase{Name: name, Start: at(start), End: at(time.Now())})
	}

	// An idle edl on an empty cluster.
	idleStart := time.Now()
	step("edl runs (pid %d); idle on the nodes alone for a minute", edl.Pid())
	if err := sleep(ctx, time.Minute); err != nil {
		return nil, err
	}
	phase("idle, no jobs", idleStart)

	fillStart := time.Now()
	step("creating the web Deployment (%d pods of %s CPU) and %d jobs (%d–%d trainers, 1 pserver) in %d namespaces",
		cfg.WebReplicas(), WebSize.CPU, cfg.Jobs, TrainerMin, cfg.TrainerMax(), cfg.Namespaces)
	if _, err := kube.AppsV1().Deployments(WebNamespace).Create(ctx, experiment.WebDeployment(WebNamespace, cfg.WebReplicas(), WebSize), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create the web Deployment: %w", err)
	}
	for i := range cfg.Jobs {
		ns := Namespace(i % cfg.Namespaces)
		job := experiment.NewJob(experiment.JobName(i), ns, TrainerMin, cfg.TrainerMax(), 1, TrainerSize, PserverSize)
		if _, err := tj.PaddlepaddleV1().TrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create TrainingJob %s/%s: %w", ns, job.Name, err)
		}
	}
	if _, err := settle("fill: jobs created beside the full web service", cfg.WebReplicas(), fillStart); err != nil {
		return nil, err
	}
	phase("filling the cluster", fillStart)

	steadyStart := time.Now()
	step("steady window of %s", cfg.Steady)
	if err := sleep(ctx, cfg.Steady); err != nil {
		return nil, err
	}
	steadyEnd := time.Now()
	phase("steady, nothing changes", steadyStart)

	waveStart := time.Now()
	if err := experiment.ScaleWeb(ctx, kube, WebNamespace, cfg.WebShrunk()); err != nil {
		return nil, err
	}
	if _, err := settle(fmt.Sprintf("wave: web %d → %d", cfg.WebReplicas(), cfg.WebShrunk()), cfg.WebShrunk(), waveStart); err != nil {
		return nil, err
	}
	growStart := time.Now()
	if err := experiment.ScaleWeb(ctx, kube, WebNamespace, cfg.WebReplicas()); err != nil {
		return nil, err
	}
	if _, err := settle(fmt.Sprintf("wave: web %d → %d", cfg.WebShrunk(), cfg.WebReplicas()), cfg.WebReplicas(), growStart); err != nil {
		return nil, err
	}
	phase("the wave, shrink and grow back", waveStart)
	end := time.Now()

	if res.Cycle, err = scrapeHistogram(ctx, metricsURL, CycleMetric); err != nil {
		return nil, err
	}
	if err := stopSamples(); err != nil {
		return nil, fmt.Errorf("read edl's /proc files: %w", err)
	}
	step("reading the audit log")
	requests, err := framework.EDLRequests(auditLog, time.Time{}, time.Time{})
	if err != nil {
		return nil, err
	}
	var steady []framework.AuditEvent
	for _, e := range requests {
		if !e.Received.Before(steadyStart) && e.Received.Before(steadyEnd) {
			steady = append(steady, e)
		}
	}
	res.Steady = CountRequests(steady)
	res.Requests = CountRequests(requests)
	res.FillStatus = CountStatusWrites(requests, fillStart, steadyStart, cfg.Jobs)
	if err := readTimelines(res.Settles, auditLog, filepath.Join(opts.Dir, "edl.log")); err != nil {
		return nil, err
	}
	if err := FillFigures(res.Settles, w.webTimes(), w.preemptions(), requests); err != nil {
		return nil, err
	}
	FillCores(res.Settles, readings)
	res.Buckets = BucketRequests(requests, origin, end, BucketWidth)
	res.LoadAfter = loadavg()
	res.Wall = time.Since(began)
	return res, nil
}

// readTimelines fills each settle's Timeline from the audit log and edl's
// log, from its step until it settled.
func readTimelines(settles []Settle, auditLog, edlLog string) error {
	windows := make([][2]time.Time, len(settles))
	for i, s := range settles {
		w := StepWindow(s)
		windows[i] = [2]time.Time{w.Start, w.End}
	}
	spans, err := ReadTimeline(auditLog, windows)
	if err != nil {
		return err
	}
	scalings, err := ReadScalings(edlLog, windows)
	if err != nil {
		return err
	}
	for i := range settles {
		settles[i].Timeline = append(scalings[i][:], spans[i]...)
		settles[i].Figures.Removed = scalings[i][0].N
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func scrapeHistogram(ctx context.Context, url, name string) (Histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Histogram{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Histogram{}, fmt.Errorf("scrape edl's metrics: %w", err)
	}
	defer resp.Body.Close()
	return ParseHistogram(resp.Body, name)
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
