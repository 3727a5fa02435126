package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
	"github.com/paddlepaddle/edl/test/experiment"
	"github.com/paddlepaddle/edl/test/framework"
	"github.com/paddlepaddle/edl/test/trace"
)

// Options are one replay.
type Options struct {
	// Workload is the jobs to replay, by arrival.
	Workload trace.Workload
	// Policy is edl's -policy: fulfillment or goodput.
	Policy string
	// Speed is how many times faster than the trace the replay runs.
	Speed float64
	// Interval is edl's -autoscale_interval, in the replay's (wall) time.
	Interval time.Duration
	// RestartCost is how long, in the trace's time, a job makes no
	// progress after it starts and after every change of its trainers.
	RestartCost time.Duration
	// ReportEvery is how often, in wall time, a phantom writes its
	// progress.
	ReportEvery time.Duration
	// EDL is the edl binary; empty builds it.
	EDL string
	// Dir receives the control plane's logs and edl.log.
	Dir string
	// Progress, if set, receives a line per job that ends.
	Progress io.Writer
}

// Defaults are the replay the issue asks for: 60× the trace's speed, a plan
// every second (a minute of the trace), Pollux's 30 s restart.
func Defaults() Options {
	return Options{Policy: "fulfillment", Speed: 60, Interval: time.Second, RestartCost: 30 * time.Second, ReportEvery: time.Second}
}

// SimConfig is the simulator's configuration for the same replay: the
// same cluster, interval (in the trace's time) and restart cost, and
// edl's moves a second as the replay raises them.
func SimConfig(o Options) trace.Config {
	cfg := trace.DefaultConfig()
	cfg.Interval = time.Duration(float64(o.Interval) * o.Speed)
	cfg.RestartCost = o.RestartCost
	return cfg
}

// The replay's cluster: Pollux's 16 nodes of 4 GPUs, each with the
// simulator's allocatable per GPU (trace.TrainerRequest's node).
const (
	nodes       = 16
	gpusPerNode = 4
)

// Run replays the workload and returns its results in the trace's
// seconds, as the simulator gives them.
func Run(ctx context.Context, o Options) (res *trace.Result, err error) {
	if o.Speed <= 0 || o.Interval <= 0 || o.ReportEvery <= 0 || o.RestartCost < 0 || len(o.Workload.Jobs) == 0 {
		return nil, fmt.Errorf("live replay: speed %g, interval %s, report every %s, restart cost %s, %d jobs: want a speed, intervals above 0, a cost of at least 0 and a job",
			o.Speed, o.Interval, o.ReportEvery, o.RestartCost, len(o.Workload.Jobs))
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	cmFlags, schedFlags := experiment.CompressedRates(o.Speed)
	cp, err := framework.Start(startCtx, framework.Options{
		Dir:   filepath.Join(o.Dir, "cluster"),
		Nodes: []framework.NodeSpec{{Name: "gpu", Count: nodes, GPU: gpusPerNode, CPU: "48", Memory: "192Gi", Pods: 110}},
		// The simulator's kube-scheduler packs (trace.MostAllocated).
		SchedulerScoring: "MostAllocated", ControllerManagerFlags: cmFlags, SchedulerFlags: schedFlags,
	})
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := cp.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop the control plane: %w", stopErr)
		}
		_ = os.RemoveAll(filepath.Join(o.Dir, "cluster", "etcd"))
	}()
	root, err := framework.ModuleRoot()
	if err != nil {
		return nil, err
	}
	if err := cp.ApplyCRD(ctx, filepath.Join(root, "thirdpartyresource.yaml")); err != nil {
		return nil, err
	}
	cfg := experiment.ClientConfig(cp.Config)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	tj, err := tjclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: trace.Namespace}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}

	args := append(experiment.EDLArgs(cp.Kubeconfig, o.Interval, experiment.On), "-policy", o.Policy,
		"-max_moves_per_second", strconv.FormatFloat(planner.DefaultMovesPerSecond*o.Speed, 'f', -1, 64))
	edl, err := framework.StartEDL(framework.EDLOptions{Binary: o.EDL, LogPath: filepath.Join(o.Dir, "edl.log"), StartupGrace: experiment.EDLStartup, Args: args})
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := edl.Stop(experiment.EDLStopGrace); stopErr != nil && err == nil {
			err = stopErr
		}
	}()

	r, err := newReplay(ctx, o, kube, tj)
	if err != nil {
		return nil, err
	}
	if err := r.run(ctx); err != nil {
		return nil, fmt.Errorf("replay of %s under %s: %w (edl log: %s)", o.Workload.Name, o.Policy, err, filepath.Join(o.Dir, "edl.log"))
	}
	if err := waitSucceeded(ctx, tj, r.jobs); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// trainingJob is the TrainingJob of a workload row: a PyTorch job of
// 1-GPU trainers (trace.TrainerRequest) from lo to hi.
func trainingJob(spec *trace.JobSpec, lo, hi int32) *v1.TrainingJob {
	req := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(trace.TrainerRequest.CPUMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(trace.TrainerRequest.MemoryMega<<20, resource.BinarySI),
		framework.GPUResource: *resource.NewQuantity(trace.TrainerRequest.GPU, resource.DecimalSI),
	}
	job := builders.Job(spec.Name, trace.Namespace, builders.PyTorch("python3 train.py"), builders.Trainers(lo, hi),
		builders.TrainerResources(corev1.ResourceRequirements{Requests: req, Limits: req}), builders.Image("pollux/"+spec.App.Name))
	job.UID, job.Generation = "", 0
	job.Spec.Master.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}
	return job
}

// waitSucceeded waits until edl has judged every job Succeeded, its
// trainers' exit 0 the training's end; a job that failed is an error.
func waitSucceeded(ctx context.Context, tj tjclient.Interface, jobs []*phantom) error {
	var pending string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := tj.PaddlepaddleV1().TrainingJobs(trace.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pending = ""
		for _, j := range list.Items {
			switch j.Status.Phase {
			case v1.PhaseSucceeded:
			case v1.PhaseFailed:
				return false, fmt.Errorf("job %s failed: %s: %s", j.Name, j.Status.Reason, j.Status.Message)
			default:
				pending = j.Name + " is " + string(j.Status.Phase)
			}
		}
		return pending == "" && len(list.Items) == len(jobs), nil
	})
	if err != nil && pending != "" && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("every job Succeeded once its work was done: %s: %w", pending, err)
	}
	return err
}
