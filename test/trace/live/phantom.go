package live

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	"github.com/paddlepaddle/edl/test/trace"
)

// tick is how often the phantoms look at their pods and train.
const tick = 100 * time.Millisecond

// fakeExitCode is the annotation kwok's pod-exit stage ends a container
// with (test/kwok).
const fakeExitCode = "edl.paddlepaddle.org/fake-exit-code"

// replay is a run: the workload's jobs, submitted at their arrival, and
// their phantom trainers.
type replay struct {
	o    Options
	kube kubernetes.Interface
	tj   tjclient.Interface
	pods corelisters.PodLister
	jobs []*phantom
	// t0 is the wall time of the trace's second 0.
	t0 time.Time
	// writes are the reports and exits being written; errs the first
	// that failed.
	writes sync.WaitGroup
	mu     sync.Mutex
	err    error
	// gpuSeconds are the trace's GPU-seconds bound trainers held.
	gpuSeconds float64
}

// phantom is a job's training, in the trace's seconds.
type phantom struct {
	spec     *trace.JobSpec
	min, max int32
	created  bool
	// pods are the names of the bound trainers of the current run.
	pods     string
	trainers int
	nodes    int
	step     float64
	resumeAt float64
	steps    float64
	started  bool
	start    float64
	end      float64
	done     bool
	resizes  int
	runs     int
	reported time.Time
	segments []trace.Segment
}

func newReplay(ctx context.Context, o Options, kube kubernetes.Interface, tj tjclient.Interface) (*replay, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(trace.Namespace))
	pods := factory.Core().V1().Pods()
	lister := pods.Lister()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced) {
		return nil, fmt.Errorf("the pod informer never synced")
	}
	r := &replay{o: o, kube: kube, tj: tj, pods: lister}
	policy, err := trace.LookupPolicies([]string{o.Policy}, nodes*gpusPerNode)
	if err != nil {
		return nil, err
	}
	for i := range o.Workload.Jobs {
		spec := &o.Workload.Jobs[i]
		lo, hi := policy[0].Trainers(spec)
		r.jobs = append(r.jobs, &phantom{spec: spec, min: lo, max: hi})
	}
	slices.SortStableFunc(r.jobs, func(a, b *phantom) int { return cmp.Compare(a.spec.Arrival, b.spec.Arrival) })
	return r, nil
}

// now is the trace's second at wall time w.
func (r *replay) now(w time.Time) float64 { return w.Sub(r.t0).Seconds() * r.o.Speed }

// run submits the jobs at their arrivals and trains them until every one
// has done its work.
func (r *replay) run(ctx context.Context) error {
	r.t0 = time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	last := 0.0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case w := <-ticker.C:
			now := r.now(w)
			if err := r.step(ctx, last, now); err != nil {
				return err
			}
			last = now
		}
		if !slices.ContainsFunc(r.jobs, func(p *phantom) bool { return !p.done }) {
			r.writes.Wait()
			return r.failed()
		}
	}
}

// step submits what arrived by now, trains every job from last to now,
// and restarts the jobs whose bound trainers changed.
func (r *replay) step(ctx context.Context, last, now float64) error {
	if err := r.failed(); err != nil {
		return err
	}
	for _, p := range r.jobs {
		if !p.created && p.spec.Arrival <= now {
			job := trainingJob(p.spec, p.min, p.max)
			if _, err := r.tj.PaddlepaddleV1().TrainingJobs(trace.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("submit %s: %w", p.spec.Name, err)
			}
			p.created = true
		}
		if !p.created || p.done {
			continue
		}
		bound := r.bound(p)
		r.gpuSeconds += float64(len(bound)) * (now - last)
		if p.train(last, now) {
			r.exit(ctx, p, bound)
			r.progress("%s done at %.0f s: JCT %.0f s, %d resizes", p.spec.Name, p.end, p.end-p.spec.Arrival, p.resizes)
			continue
		}
		if key := strings.Join(names(bound), ","); key != p.pods {
			p.restart(key, bound, now, r.o.RestartCost.Seconds())
		}
		if p.trainers > 0 && now >= p.resumeAt && time.Since(p.reported) >= r.o.ReportEvery {
			p.reported = time.Now()
			r.report(ctx, p)
		}
	}
	return nil
}

// bound are the job's trainer pods Running on a node, not being deleted,
// not ended by a phantom.
func (r *replay) bound(p *phantom) []*corev1.Pod {
	pods, _ := r.pods.List(labels.SelectorFromSet(labels.Set{v1.LabelTrainer: p.spec.Name}))
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && pod.Annotations[fakeExitCode] == "" {
			out = append(out, pod)
		}
	}
	return out
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	slices.Sort(out)
	return out
}

// train advances the job from `from` to `to` and reports whether it
// reached its target, at p.end.
func (p *phantom) train(from, to float64) bool {
	if p.trainers == 0 {
		return false
	}
	begin := max(from, p.resumeAt)
	if begin >= to {
		return false
	}
	steps := (to - begin) / p.step
	if need := p.spec.Work - p.steps; need <= steps {
		p.steps, p.end, p.done = p.spec.Work, begin+need*p.step, true
		return true
	}
	p.steps += steps
	return false
}

// restart starts a new run of the job on its bound trainers, as the
// simulator's job.restart does: no run below its minimum (torchrun waits),
// and a restart of a job that trained before is a resize.
func (p *phantom) restart(key string, bound []*corev1.Pod, now, cost float64) {
	p.pods = key
	if p.started {
		p.resizes++
	}
	p.trainers = 0
	if len(bound) < int(p.min) {
		return
	}
	if !p.started {
		p.started, p.start = true, now
	}
	perNode := map[string]int{}
	for _, pod := range bound {
		perNode[pod.Spec.NodeName]++
	}
	var placement []int
	for _, n := range perNode {
		placement = append(placement, n)
	}
	slices.Sort(placement)
	p.runs++
	p.trainers, p.nodes, p.resumeAt = len(bound), len(placement), now+cost
	t := p.spec.App.StepTime(placement, p.spec.Batch/float64(len(bound)))
	p.step = t.Step
	p.segments = append(p.segments, trace.Segment{At: now, Trainers: len(bound), Placement: placement, Timing: t})
}

// report writes the job's progress to its ConfigMap, as a trainer's rank
// 0 does: samples done of the total, the global batch, the world size,
// the run and the time by the training's (wall) clock.
func (r *replay) report(ctx context.Context, p *phantom) {
	data := map[string]string{
		v1.ProgressDone:     strconv.FormatInt(int64(p.steps*p.spec.Batch), 10),
		v1.ProgressTotal:    strconv.FormatInt(int64(math.Ceil(p.spec.Work*p.spec.Batch)), 10),
		v1.ProgressUnit:     "samples",
		v1.ProgressBatch:    strconv.FormatInt(int64(p.spec.Batch), 10),
		v1.ProgressTrainers: strconv.Itoa(p.trainers),
		v1.ProgressTime:     strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 6, 64),
		v1.ProgressRun:      fmt.Sprintf("%s-%d", p.spec.Name, p.runs),
	}
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	r.write(func() error {
		_, err := r.kube.CoreV1().ConfigMaps(trace.Namespace).Patch(ctx, v1.ProgressConfigMapName(p.spec.Name), types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("report %s's progress: %w", p.spec.Name, err)
		}
		return nil
	})
}

// exit has kwok end the job's trainers with exit 0: its training is done.
func (r *replay) exit(ctx context.Context, p *phantom, bound []*corev1.Pod) {
	for _, pod := range bound {
		r.write(func() error {
			_, err := r.kube.CoreV1().Pods(trace.Namespace).Patch(ctx, pod.Name, types.MergePatchType,
				fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"0"}}}`, fakeExitCode), metav1.PatchOptions{})
			if err != nil {
				return fmt.Errorf("end %s's trainer %s: %w", p.spec.Name, pod.Name, err)
			}
			return nil
		})
	}
}

// write runs f in the background, keeping its error.
func (r *replay) write(f func() error) {
	r.writes.Add(1)
	go func() {
		defer r.writes.Done()
		if err := f(); err != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
	}()
}

func (r *replay) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *replay) progress(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, format+"\n", args...)
	}
}

// result is the run's results, as the simulator's trace.Result.
func (r *replay) result() *trace.Result {
	res := &trace.Result{Workload: r.o.Workload.Name, Policy: r.o.Policy, GPUs: nodes * gpusPerNode, GPUSeconds: r.gpuSeconds}
	for _, p := range r.jobs {
		res.Jobs = append(res.Jobs, trace.JobResult{Name: p.spec.Name, Arrival: p.spec.Arrival, Start: p.start, End: p.end,
			Resizes: p.resizes, Work: p.spec.Work, Segments: p.segments})
	}
	return res
}
