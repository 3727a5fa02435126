package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/framework"
)

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
	// webAdded counts the web pods the web service's up-steps added, and
	// stoppedForWeb the Running trainers stopped from each up-step to the
	// next step.
	webAdded, stoppedForWeb int
	// bursts are the teams' bursts that ended (Teams).
	bursts []Burst
	// boundErr is the first bound that could not be computed: it stops
	// the scenario (stop) and fails the run.
	boundErr error
	stop     context.CancelFunc
}

// sample records a sample every interval until ctx is done. A bound that
// cannot be computed ends the sampling: the run fails with it (boundErr)
// rather than average a bound of 0 into its means.
func (d *driver) sample(ctx context.Context) {
	t := time.NewTicker(d.opts.Size.Interval)
	defer t.Stop()
	for {
		s := d.rec.Sample(time.Now())
		err := d.bound(&s)
		d.mu.Lock()
		d.samples = append(d.samples, s)
		if err != nil && d.boundErr == nil {
			d.boundErr = err
		}
		d.mu.Unlock()
		if err != nil {
			if d.stop != nil {
				d.stop()
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bound fills in the sample's packing bounds: the whole cluster's CPU in
// Training and Shared, each pool's in Pools. The bounds that hold pods where
// they run are at most the ideal: the ideal places the same demand
// anywhere, so a bound above it would only be an artifact (the relaxation
// dropping minimums it cannot place). A bound that cannot be solved is an
// error.
func (d *driver) bound(s *Sample) error {
	size := d.opts.Size
	var errs []error
	ratio := func(placed, total int64, err error) float64 {
		v, err := ratio(placed, total, err)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	switch d.opts.Scenario {
	case Training:
		// Every job wants its maximum in both modes; nobody must come first.
		k := s.Submitted
		s.Ideal = ratio(Ideal(size.node(), size.Nodes, []PodDemand{
			TrainerSize.demand("trainer", 0, k*int(size.TrainerMax)), PserverSize.demand("pserver", 0, k*int(size.Pservers))}))
		s.IdealTrainers = min(s.Ideal, ratio(IdealIn(CPU, s.TrainerRooms, s.HeldMilli, s.CPUAllocMilli,
			[]PodDemand{TrainerSize.demand("trainer", 0, k*int(size.TrainerMax))})))
	case Shared:
		s.Ideal = ratio(Ideal(size.node(), size.Nodes, elasticDemand(TrainerSize, s.Submitted, size.SharedTrainerMin, size.SharedTrainerMax,
			size.Pservers, s.WebDesired, d.opts.Variant.Mode)))
		s.IdealAround = min(s.Ideal, ratio(IdealAround(CPU, size.node(), size.Nodes, WebSize.demand("web", 0, 0), s.WebHeld,
			elasticDemand(TrainerSize, s.Submitted, size.SharedTrainerMin, size.SharedTrainerMax,
				size.Pservers, unbound(s.WebDesired, s.WebHeld), d.opts.Variant.Mode))))
		s.IdealTrainers = min(s.Ideal, ratio(IdealIn(CPU, s.TrainerRooms, s.HeldMilli, s.CPUAllocMilli,
			trainerDemand(TrainerSize, s.Submitted, size.SharedTrainerMin, size.SharedTrainerMax, unbound(s.WebDesired, s.WebHeld), d.opts.Variant.Mode))))
		s.IdealFixed = min(s.Ideal, ratio(IdealAround(CPU, size.node(), size.Nodes, WebSize.demand("web", 0, 0), s.WebFixedHeld,
			elasticDemand(TrainerSize, s.Submitted, size.SharedTrainerMin, size.SharedTrainerMax,
				size.Pservers, unbound(s.WebDesired, s.WebFixedHeld), d.opts.Variant.Mode))))
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
				pool.IdealAround = min(pool.Ideal, ratio(IdealAround(CPU, size.node(), pool.Nodes, WebSize.demand("web", 0, 0), pool.WebHeld,
					elasticDemand(TrainerSize, cpuJobs, p.CPUTrainerMin, p.CPUTrainerMax,
						size.Pservers, unbound(s.WebDesired, pool.WebHeld), d.opts.Variant.Mode))))
				pool.IdealTrainers = min(pool.Ideal, ratio(IdealIn(CPU, pool.TrainerRooms, pool.HeldMilli, pool.CPUAllocMilli,
					trainerDemand(TrainerSize, cpuJobs, p.CPUTrainerMin, p.CPUTrainerMax, unbound(s.WebDesired, pool.WebHeld), d.opts.Variant.Mode))))
				pool.IdealFixed = min(pool.Ideal, ratio(IdealAround(CPU, size.node(), pool.Nodes, WebSize.demand("web", 0, 0), pool.WebFixedHeld,
					elasticDemand(TrainerSize, cpuJobs, p.CPUTrainerMin, p.CPUTrainerMax,
						size.Pservers, unbound(s.WebDesired, pool.WebFixedHeld), d.opts.Variant.Mode))))
			case GPUPool:
				pool.Ideal = ratio(IdealOf(GPU, size.gpuNode(), pool.Nodes, elasticDemand(GPUTrainerSize, gpuJobs, p.GPUTrainerMin, p.GPUTrainerMax,
					size.Pservers, 0, d.opts.Variant.Mode)))
				pool.IdealFixed = pool.Ideal // no web pods there
			}
		}
	case Teams:
		d.teamsBound(s, ratio)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the bounds of the sample at %s: %w", s.At.Round(time.Millisecond), err)
	}
	return nil
}

// unbound is how many of the desired web pods are not bound to a node, with
// held[k] nodes holding k each.
func unbound(desired int, held []int) int {
	for k, n := range held {
		desired -= k * n
	}
	return max(desired, 0)
}

// trainerDemand is the demand of the trainers' bound: elasticDemand's
// trainers, and the web pods not bound yet, which must all run; the
// pservers run where they are bound.
func trainerDemand(trainer PodSize, k int, lo, hi int32, web int, mode Mode) []PodDemand {
	return elasticDemand(trainer, k, lo, hi, 0, web, mode)
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

// ratio is placed ÷ total of a packing bound, 0 when there is nothing to
// place onto; the bound's error passes through.
func ratio(placed, total int64, err error) (float64, error) {
	if err != nil || total == 0 {
		return 0, err
	}
	return float64(placed) / float64(total), nil
}

// step records a step and prints its progress line.
func (d *driver) step(what string) {
	now := time.Now()
	at := d.rec.Since(now)
	d.mu.Lock()
	d.steps = append(d.steps, at)
	d.mu.Unlock()
	s := d.rec.Sample(now)
	if err := d.bound(&s); err != nil {
		fmt.Fprintf(d.progress, "%-8s %-6s t=%6.1fs  %s: %v\n", d.opts.Scenario, d.opts.Variant.Label(), at.Seconds(), what, err)
		return
	}
	bounds := func(ideal, around, trainers float64) string {
		switch {
		case trainers == 0:
			return fmt.Sprintf("(ideal %5.1f%%)", 100*ideal)
		case around == 0:
			return fmt.Sprintf("(ideal %5.1f%%, of the trainers %5.1f%%)", 100*ideal, 100*trainers)
		}
		return fmt.Sprintf("(ideal %5.1f%%, around the web pods %5.1f%%, of the trainers %5.1f%%)", 100*ideal, 100*around, 100*trainers)
	}
	util := fmt.Sprintf("util %5.1f%% %s", 100*s.Utilization, bounds(s.Ideal, s.IdealAround, s.IdealTrainers))
	if len(s.Pools) > 0 {
		var pools []string
		for _, p := range s.Pools {
			pools = append(pools, fmt.Sprintf("%s pool %s %5.1f%% %s", p.Name, p.Resource(), 100*p.Utilization(), bounds(p.Ideal, p.IdealAround, p.IdealTrainers)))
		}
		util = strings.Join(pools, ", ")
	}
	fmt.Fprintf(d.progress, "%-8s %-6s t=%6.1fs  %-30s %s  pending jobs %2d/%-2d  trainers %4d  web %d/%d, %d pending\n",
		d.opts.Scenario, d.opts.Variant.Label(), at.Seconds(), what, util,
		s.PendingJobs, s.Submitted, s.RunningTrainers, s.WebRunning, s.WebDesired, s.WebPending)
	if len(s.Teams) > 0 {
		var teams []string
		for _, t := range s.Teams {
			of := func(milli float64) float64 { return 100 * milli / float64(max(s.CPUAllocMilli, 1)) }
			deserved := ""
			if t.DeservedMilli > 0 {
				deserved = fmt.Sprintf(", EDL's deserved %5.1f%%", of(float64(t.DeservedMilli)))
			}
			teams = append(teams, fmt.Sprintf("%s %5.1f%% (fair %5.1f%%%s, %d trainers)", t.Name, of(float64(t.CPURunningMilli)), of(t.FairMilli), deserved, t.Trainers))
		}
		fmt.Fprintf(d.progress, "%-8s %-6s           teams' CPU: %s\n", "", "", strings.Join(teams, ", "))
	}
	fmt.Fprintf(d.progress, "%-8s %-6s           nodes: %s\n", "", "", d.rec.Nodes(8))
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
	// Wanted before they exist: the samples hold at most the desired web
	// pods where they run.
	d.rec.SetWebDesired(int(first))
	if _, err := d.kube.AppsV1().Deployments(Namespace).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the web Deployment: %w", err)
	}
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
	prev, upFrom := first, -1 // upFrom: the trainers stopped when the current up-step began
	endUpStep := func() {
		if upFrom >= 0 {
			d.mu.Lock()
			d.stoppedForWeb += d.rec.TrainersStopped() - upFrom
			d.mu.Unlock()
		}
		upFrom = -1
	}
	for _, level := range levels[1:] {
		if err := d.sleepUntil(ctx, next); err != nil {
			return err
		}
		endUpStep()
		if level > prev {
			upFrom = d.rec.TrainersStopped()
			d.mu.Lock()
			d.webAdded += int(level - prev)
			d.mu.Unlock()
		}
		prev = level
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
	endUpStep()
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
