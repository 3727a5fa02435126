package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/framework"
)

// Options describe one run: one scenario in one mode.
type Options struct {
	Size     Size
	Scenario Scenario
	Variant  Variant
	// EDL is the path of the edl binary (make build: bin/edl).
	EDL string
	// Dir is the run's directory: edl.log and the control plane's logs
	// (cluster/logs) stay there; its etcd data is removed at the end.
	Dir string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// Result is what one run recorded. Times are relative to the start of the
// scenario (the first submission in Training, the web Deployment's creation
// in Shared and Pools).
type Result struct {
	Scenario Scenario
	Variant  Variant
	Size     Size
	Samples  []Sample
	Jobs     []JobTiming
	Web      []PodWait
	// Growth are the trainer pods EDL's growth added and their waits.
	Growth []TrainerWait
	// WindowStart is where the means start: the first submission in
	// Training, the moment every job ran beside the full web service in
	// Shared and Pools. End is the last sample's time.
	WindowStart, End time.Duration
	// Steps are the times of the scenario's steps (submissions, web levels).
	Steps []time.Duration
	// Setup is the time the control plane and its nodes took to start;
	// Wall the whole run's.
	Setup, Wall time.Duration
	// Scalings counts the trainer scalings edl applied (its "scaled
	// trainers" log lines).
	Scalings int
}

// Run starts a control plane with the size's kwok nodes, runs edl against it
// and drives the scenario, sampling every interval; it stops everything
// before it returns.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	began := time.Now()
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	size := opts.Size
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	clusterDir := filepath.Join(opts.Dir, "cluster")
	if err := os.RemoveAll(clusterDir); err != nil {
		return nil, err
	}
	label := opts.Variant.Label()
	scoring := ""
	if opts.Variant.BinPack {
		scoring = "MostAllocated"
	}
	nodes := size.NodeSpecs(opts.Scenario)
	fmt.Fprintf(progress, "%-8s %-6s starting a control plane with kwok nodes: %s (logs in %s)\n",
		opts.Scenario, label, DescribeNodes(nodes), filepath.Join(clusterDir, "logs"))
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	cp, err := framework.Start(startCtx, framework.Options{Dir: clusterDir, Nodes: nodes, SchedulerScoring: scoring})
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := cp.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
		// etcd's data is large and of no use once the run is over.
		_ = os.RemoveAll(filepath.Join(clusterDir, "etcd"))
	}()
	res = &Result{Scenario: opts.Scenario, Variant: opts.Variant, Size: size, Setup: time.Since(began)}
	fmt.Fprintf(progress, "%-8s %-6s control plane up in %s\n", opts.Scenario, label, res.Setup.Round(100*time.Millisecond))

	cfg := ClientConfig(cp.Config)
	env, err := newEnv(ctx, cp, cfg)
	if err != nil {
		return nil, err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	rec, err := NewRecorder(cfg, Namespace)
	if err != nil {
		return nil, err
	}
	if err := rec.Start(runCtx); err != nil {
		return nil, err
	}
	// The informers end with runCtx; Shutdown waits for them.
	defer func() { stopRun(); rec.Shutdown() }()

	logPath := filepath.Join(opts.Dir, "edl.log")
	args := EDLArgs(cp.Kubeconfig, size.Interval, opts.Variant.Mode)
	if opts.Variant.NoGang {
		args = append(args, "-gang_admission=false")
	}
	if opts.Variant.MaxLoadDesired > 0 {
		args = append(args, "-max_load_desired", strconv.FormatFloat(opts.Variant.MaxLoadDesired, 'f', -1, 64))
	}
	edl, err := framework.StartEDL(framework.EDLOptions{Binary: opts.EDL, Args: args, LogPath: logPath, StartupGrace: EDLStartup})
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := edl.Stop(EDLStopGrace); stopErr != nil && err == nil {
			err = stopErr
		}
		res.Scalings = countLines(logPath, `msg="scaled trainers"`)
	}()

	d := &driver{env: env, rec: rec, opts: opts, progress: progress, edl: edl}
	rec.ResetOrigin(time.Now())
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		d.sample(runCtx)
	}()
	switch opts.Scenario {
	case Training:
		err = d.training(runCtx)
	case Shared, Pools:
		err = d.shared(runCtx)
	default:
		err = fmt.Errorf("unknown scenario %q", opts.Scenario)
	}
	stopRun()
	<-samplerDone
	if err != nil {
		return nil, fmt.Errorf("%s with %s: %w (edl log: %s)", opts.Scenario, label, err, logPath)
	}
	res.Samples = d.samples
	res.Jobs = rec.JobTimings()
	res.Web = rec.WebWaits()
	res.Growth = rec.GrowthWaits()
	res.WindowStart = d.windowStart
	res.Steps = d.steps
	if n := len(res.Samples); n > 0 {
		res.End = res.Samples[n-1].At
	}
	res.Wall = time.Since(began)
	return res, nil
}

// DescribeNodes says what the node specs are: "27 × 18 CPU / 100Gi", or
// one such term per pool.
func DescribeNodes(specs []framework.NodeSpec) string {
	var parts []string
	for _, s := range specs {
		p := fmt.Sprintf("%d × %s CPU / %s", max(s.Count, 1), s.CPU, s.Memory)
		if s.GPU > 0 {
			p += fmt.Sprintf(" / %d GPU", s.GPU)
		}
		if len(s.Labels) > 0 {
			p = s.Name + " pool " + p
		}
		if len(s.Taints) > 0 {
			p += " (tainted " + s.Taints[0].ToString() + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// env holds the clients of one run's cluster.
type env struct {
	kube kubernetes.Interface
	tj   tjclient.Interface
}

// newEnv installs what every scenario needs: the CRD, the namespace and the
// two PriorityClasses.
func newEnv(ctx context.Context, cp *framework.ControlPlane, cfg *rest.Config) (*env, error) {
	root, err := framework.ModuleRoot()
	if err != nil {
		return nil, err
	}
	if err := cp.ApplyCRD(ctx, filepath.Join(root, "thirdpartyresource.yaml")); err != nil {
		return nil, err
	}
	e := &env{}
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.tj, err = tjclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if err := Install(ctx, e.kube, Namespace); err != nil {
		return nil, err
	}
	return e, nil
}

// Install creates namespace (unless it is "default") and the training and
// web PriorityClasses; what exists already is left as it is.
func Install(ctx context.Context, kube kubernetes.Interface, namespace string) error {
	if namespace != "default" {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", namespace, err)
		}
	}
	for name, value := range map[string]int32{TrainingPriority: TrainingPriorityValue, WebPriority: WebPriorityValue} {
		_, err := kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta:  metav1.ObjectMeta{Name: name},
			Value:       value,
			Description: "EDL experiments: " + name,
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PriorityClass %s: %w", name, err)
		}
	}
	return nil
}

// ScaleWeb sets the web Deployment's replicas.
func ScaleWeb(ctx context.Context, kube kubernetes.Interface, namespace string, replicas int32) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	_, err := kube.AppsV1().Deployments(namespace).Patch(ctx, WebName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("scale the web Deployment to %d: %w", replicas, err)
	}
	return nil
}

// driver runs one scenario.
type driver struct {
	*env
	rec      *Recorder
	opts     Options
	progress io.Writer
	edl      *framework.EDL

	mu          sync.Mutex
	samples     []Sample
	windowStart time.Duration
	steps       []time.Duration
}

// sample records a sample every interval until ctx is done.
func (d *driver) sample(ctx context.Context) {
	t := time.NewTicker(d.opts.Size.Interval)
	defer t.Stop()
	for {
		s := d.rec.Sample(time.Now())
		d.bound(&s)
		d.mu.Lock()
		d.samples = append(d.samples, s)
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bound fills in the sample's packing bounds: the whole cluster's CPU in
// Training and Shared, each pool's in Pools.
func (d *driver) bound(s *Sample) {
	size := d.opts.Size
	switch d.opts.Scenario {
	case Training:
		// Every job wants its maximum in both modes; nobody must come first.
		k := s.Submitted
		s.Ideal = ratio(Ideal(size.node(), size.Nodes, []PodDemand{
			TrainerSize.demand("trainer", 0, k*int(size.TrainerMax)), PserverSize.demand("pserver", 0, k*int(size.Pservers))}))
	case Shared:
		s.Ideal = ratio(Ideal(size.node(), size.Nodes, elasticDemand(TrainerSize, s.Submitted, size.SharedTrainerMin, size.SharedTrainerMax,
			size.Pservers, s.WebDesired, d.opts.Variant.Mode)))
	case Pools:
		// The pools' demands are apart: CPU jobs and the web service may
		// use only the CPU pool (the GPU nodes' taint, the web pods'
		// selector), GPU jobs only the GPU pool (their selector).
		p := size.Pools
		cpuJobs := min(s.Submitted, p.CPUJobs)
		gpuJobs := s.Submitted - cpuJobs
		for i := range s.Pools {
			pool := &s.Pools[i]
			switch pool.Name {
			case CPUPool:
				pool.Ideal = ratio(IdealOf(CPU, size.node(), pool.Nodes, elasticDemand(TrainerSize, cpuJobs, p.CPUTrainerMin, p.CPUTrainerMax,
					size.Pservers, s.WebDesired, d.opts.Variant.Mode)))
			case GPUPool:
				pool.Ideal = ratio(IdealOf(GPU, size.gpuNode(), pool.Nodes, elasticDemand(GPUTrainerSize, gpuJobs, p.GPUTrainerMin, p.GPUTrainerMax,
					size.Pservers, 0, d.opts.Variant.Mode)))
			}
		}
	}
}

// elasticDemand is the demand of k running elastic jobs of trainer sized
// trainers (lo..hi each, only lo with EDL off: the jobs stay at their
// minimum) and pservers each, which must all run, beside web pods that must
// all run.
func elasticDemand(trainer PodSize, k int, lo, hi, pservers int32, web int, mode Mode) []PodDemand {
	if mode == Off {
		hi = lo
	}
	ps := k * int(pservers)
	return []PodDemand{trainer.demand("trainer", k*int(lo), k*int(hi)), PserverSize.demand("pserver", ps, ps), WebSize.demand("web", web, web)}
}

// ratio is placed ÷ total of a packing bound, 0 when it has none.
func ratio(placed, total int64, err error) float64 {
	if err != nil || total == 0 {
		return 0
	}
	return float64(placed) / float64(total)
}

// step records a step and prints its progress line.
func (d *driver) step(what string) {
	now := time.Now()
	at := d.rec.Since(now)
	d.mu.Lock()
	d.steps = append(d.steps, at)
	d.mu.Unlock()
	s := d.rec.Sample(now)
	d.bound(&s)
	util := fmt.Sprintf("util %5.1f%% (ideal %5.1f%%)", 100*s.Utilization, 100*s.Ideal)
	if len(s.Pools) > 0 {
		var pools []string
		for _, p := range s.Pools {
			pools = append(pools, fmt.Sprintf("%s pool %s %5.1f%% (ideal %5.1f%%)", p.Name, p.Resource(), 100*p.Utilization(), 100*p.Ideal))
		}
		util = strings.Join(pools, ", ")
	}
	fmt.Fprintf(d.progress, "%-8s %-6s t=%6.1fs  %-30s %s  pending jobs %2d/%-2d  trainers %4d  web %d/%d, %d pending\n",
		d.opts.Scenario, d.opts.Variant.Label(), at.Seconds(), what, util,
		s.PendingJobs, s.Submitted, s.RunningTrainers, s.WebRunning, s.WebDesired, s.WebPending)
}

// sleepUntil waits until t, failing early if edl exits or ctx ends.
func (d *driver) sleepUntil(ctx context.Context, t time.Time) error {
	for {
		if exited, err := d.edl.Exited(); exited {
			return fmt.Errorf("edl exited during the run: %v", err)
		}
		left := time.Until(t)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, time.Second)):
		}
	}
}

func (d *driver) submit(ctx context.Context, job *v1.TrainingJob) error {
	now := time.Now()
	if _, err := d.tj.PaddlepaddleV1().TrainingJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("submit %s: %w", job.Name, err)
	}
	d.rec.Submitted(job.Name, now)
	return nil
}

// training submits the jobs one by one, then watches for Settle.
func (d *driver) training(ctx context.Context) error {
	size := d.opts.Size
	lo, hi := size.TrainerMin, size.TrainerMax
	if d.opts.Variant.Mode == Off {
		lo = hi // without EDL a job asks for its maximum
	}
	start := time.Now()
	for i := range size.Jobs {
		if err := d.sleepUntil(ctx, start.Add(time.Duration(i)*size.JobInterval)); err != nil {
			return err
		}
		if err := d.submit(ctx, TrainingJob(JobName(i), lo, hi, size.Pservers)); err != nil {
			return err
		}
		d.step(fmt.Sprintf("submitted %s (%d/%d)", JobName(i), i+1, size.Jobs))
	}
	last := start.Add(time.Duration(size.Jobs-1) * size.JobInterval)
	for t := 30 * time.Second; t < size.Settle; t += 30 * time.Second {
		if err := d.sleepUntil(ctx, last.Add(t)); err != nil {
			return err
		}
		d.step(fmt.Sprintf("settling, %s after the last", t))
	}
	if err := d.sleepUntil(ctx, last.Add(size.Settle)); err != nil {
		return err
	}
	d.step("end")
	return nil
}

// jobs are the elastic jobs of Shared, or of Pools: the CPU jobs, then the
// GPU jobs.
func (d *driver) jobs() []*v1.TrainingJob {
	size := d.opts.Size
	var jobs []*v1.TrainingJob
	if d.opts.Scenario != Pools {
		for i := range size.SharedJobs {
			jobs = append(jobs, TrainingJob(JobName(i), size.SharedTrainerMin, size.SharedTrainerMax, size.Pservers))
		}
		return jobs
	}
	p := size.Pools
	for i := range p.CPUJobs {
		jobs = append(jobs, TrainingJob(JobName(i), p.CPUTrainerMin, p.CPUTrainerMax, size.Pservers))
	}
	for i := range p.GPUJobs {
		jobs = append(jobs, GPUJob(GPUJobName(i), p.GPUTrainerMin, p.GPUTrainerMax, size.Pservers))
	}
	return jobs
}

// web is the web Deployment at replicas, pinned to the CPU pool in Pools,
// and its levels.
func (d *driver) web() (*appsv1.Deployment, []int32) {
	size := d.opts.Size
	if d.opts.Scenario != Pools {
		return WebDeployment(Namespace, size.WebSteps[0], WebSize), size.WebSteps
	}
	dep := WebDeployment(Namespace, size.Pools.WebSteps[0], WebSize)
	dep.Spec.Template.Spec.NodeSelector = map[string]string{PoolLabel: CPUPool}
	return dep, size.Pools.WebSteps
}

// shared runs the web service at its first level, adds the jobs, waits until
// they run, then walks the web service through its levels.
func (d *driver) shared(ctx context.Context) error {
	size := d.opts.Size
	web, levels := d.web()
	first := levels[0]
	if _, err := d.kube.AppsV1().Deployments(Namespace).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the web Deployment: %w", err)
	}
	d.rec.SetWebDesired(int(first))
	if err := d.waitFor(ctx, 5*time.Minute, func(s Sample) bool { return s.WebRunning == int(first) }); err != nil {
		return fmt.Errorf("the %d web pods never all ran: %w", first, err)
	}
	d.step(fmt.Sprintf("web service at %d", first))
	jobs := d.jobs()
	for _, job := range jobs {
		if err := d.submit(ctx, job); err != nil {
			return err
		}
	}
	if err := d.waitFor(ctx, 5*time.Minute, func(s Sample) bool { return s.Submitted == len(jobs) && s.PendingJobs == 0 }); err != nil {
		return fmt.Errorf("the jobs never all ran: %w", err)
	}
	d.mu.Lock()
	d.windowStart = d.rec.Since(time.Now())
	d.mu.Unlock()
	d.step(fmt.Sprintf("%d jobs running", len(jobs)))
	next := time.Now().Add(size.Step)
	for _, level := range levels[1:] {
		if err := d.sleepUntil(ctx, next); err != nil {
			return err
		}
		if err := ScaleWeb(ctx, d.kube, Namespace, level); err != nil {
			return err
		}
		d.rec.SetWebDesired(int(level))
		d.step(fmt.Sprintf("web service to %d", level))
		next = next.Add(size.Step)
	}
	if err := d.sleepUntil(ctx, next); err != nil {
		return err
	}
	d.step("end")
	return nil
}

// waitFor polls the recorder until cond holds.
func (d *driver) waitFor(ctx context.Context, timeout time.Duration, cond func(Sample) bool) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if exited, err := d.edl.Exited(); exited {
			return false, fmt.Errorf("edl exited during the run: %v", err)
		}
		return cond(d.rec.Sample(time.Now())), nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("not within %s", timeout)
	}
	return err
}

// countLines counts the lines of a file that contain s.
func countLines(path, s string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}
