package experiment

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
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
	// WebAdded counts the web pods the web service's up-steps added (Shared
	// and Pools), TrainersStoppedForWeb the Running trainers deleted from
	// each up-step to the next step.
	WebAdded, TrainersStoppedForWeb int
	// Bursts are the teams' bursts (Teams); TrainersRemoved counts the
	// Running trainers deleted while their job was not (scale-downs and
	// preemptions; Teams), StoppedWhole the jobs preempted whole.
	Bursts          []Burst
	TrainersRemoved int
	StoppedWhole    []JobEvent
	// HeldDerived and FixedDerived are set on a Result read back from a
	// samples CSV without the held CPU by role, or without the bound of
	// what EDL cannot influence: ReadResult derived them.
	HeldDerived, FixedDerived bool
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
	fo := framework.Options{Dir: clusterDir, Nodes: nodes, SchedulerScoring: scoring}
	if opts.Scenario == Teams {
		fo.ControllerManagerFlags, fo.SchedulerFlags = CompressedRates(size.Compression)
	}
	cp, err := framework.Start(startCtx, fo)
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
	watched := Namespace
	if opts.Scenario == Teams {
		watched = "" // the teams' namespaces
	}
	rec, err := NewRecorder(cfg, watched)
	if err != nil {
		return nil, err
	}
	if opts.Scenario == Teams {
		rec.WatchQueues()
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
	if opts.Scenario == Teams {
		args = append(args, "-max_moves_per_second", strconv.FormatFloat(planner.DefaultMovesPerSecond*size.Compression, 'f', -1, 64))
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
		if res != nil { // nil when the run failed
			res.Scalings = countLines(logPath, `msg="scaled trainers"`)
		}
	}()

	if opts.Scenario == Teams {
		rec.SetTeams(TeamsByNamespace()) // from the first sample on
	}
	d := &driver{env: env, rec: rec, opts: opts, progress: progress, edl: edl, stop: stopRun}
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
	case Teams:
		err = d.teams(runCtx)
	default:
		err = fmt.Errorf("unknown scenario %q", opts.Scenario)
	}
	stopRun()
	<-samplerDone
	if d.boundErr != nil {
		err = d.boundErr // the scenario ended because of it
	}
	if err != nil {
		return nil, fmt.Errorf("%s with %s: %w (edl log: %s)", opts.Scenario, label, err, logPath)
	}
	res.Samples = d.samples
	res.Jobs = rec.JobTimings()
	res.Web = rec.WebWaits()
	res.Growth = rec.GrowthWaits()
	res.WindowStart = d.windowStart
	res.Steps = d.steps
	res.WebAdded, res.TrainersStoppedForWeb = d.webAdded, d.stoppedForWeb
	res.Bursts, res.TrainersRemoved, res.StoppedWhole = d.bursts, rec.TrainersRemoved(), rec.StoppedWhole()
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
