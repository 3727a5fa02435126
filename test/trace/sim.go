package trace

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/config"
)

// Config is the simulated cluster and edl's configuration.
type Config struct {
	// Nodes and GPUsPerNode are the cluster's size.
	Nodes, GPUsPerNode int
	// Interval is the time between two plans.
	Interval time.Duration
	// RestartCost is how long a job makes no progress after it starts and
	// after every resize.
	RestartCost time.Duration
	// Scoring is the simulated kube-scheduler's.
	Scoring Scoring
	// EDL is edl's configuration; what it leaves out has edl's default,
	// and its interval is Interval.
	EDL config.EDLConfiguration
	// Horizon bounds the simulated time: a run whose jobs have not all
	// finished by then fails.
	Horizon time.Duration
}

// DefaultConfig is Pollux's cluster — 16 nodes of 4 GPUs, a restart
// costing 30 s — planned by edl with its default configuration.
func DefaultConfig() Config {
	return Config{Nodes: 16, GPUsPerNode: 4, Interval: config.Default().Autoscaler.Interval.Duration,
		RestartCost: 30 * time.Second, Scoring: MostAllocated, Horizon: 60 * 24 * time.Hour}
}

// epoch is the simulation's time 0.
var epoch = time.Date(2021, time.July, 14, 0, 0, 0, 0, time.UTC)

// sim is one run: a workload's jobs on the cluster, planned by edl with a
// policy.
type sim struct {
	cfg    Config
	edl    config.Planner
	policy Policy
	c      *cluster
	// jobs are the workload's, by arrival; next is the first not
	// submitted yet.
	jobs  []*job
	next  int
	byKey map[string]*job
	now   float64
	plans int
	// peak and peakNode are the most GPUs held at once, in all and on one
	// node; perNode is count's scratch.
	peak, peakNode int
	perNode        []int
}

// Run simulates a workload under a policy and returns its results; a job
// whose bounds the cluster cannot hold is an error naming it.
func Run(cfg Config, w Workload, p Policy) (*Result, error) {
	s, err := newSim(cfg, w, p)
	if err != nil {
		return nil, err
	}
	step := cfg.Interval.Seconds()
	for s.live() {
		if s.now > cfg.Horizon.Seconds() {
			return nil, fmt.Errorf("workload %s, policy %s: jobs still running after %s simulated", w.Name, p.Name, cfg.Horizon)
		}
		s.submit()
		s.tick()
		s.advance(s.now + step)
		s.now += step
		s.report()
	}
	return s.result(w.Name), nil
}

// newSim sets a run up: the cluster, and a job per row of the workload
// with the policy's bounds, which the cluster must hold.
func newSim(cfg Config, w Workload, p Policy) (*sim, error) {
	if cfg.Nodes < 1 || cfg.GPUsPerNode < 1 || cfg.Interval <= 0 || cfg.RestartCost < 0 {
		return nil, fmt.Errorf("config: %d nodes of %d GPUs, interval %s, restart cost %s: want nodes and GPUs of at least 1, "+
			"an interval above 0 and a cost of at least 0", cfg.Nodes, cfg.GPUsPerNode, cfg.Interval, cfg.RestartCost)
	}
	s := &sim{cfg: cfg, edl: edlPlanner(cfg), policy: p, c: newCluster(cfg.Nodes, cfg.GPUsPerNode, cfg.Scoring), byKey: map[string]*job{},
		perNode: make([]int, cfg.Nodes)}
	gpus := s.c.totalGPUs()
	for i := range w.Jobs {
		spec := &w.Jobs[i]
		lo, hi := p.Trainers(spec)
		if lo < 1 || lo > hi || int(lo) > gpus {
			return nil, fmt.Errorf("workload %s, job %s (%s, batch %g), policy %s: trainers %d to %d do not fit a cluster of %d GPUs",
				w.Name, spec.Name, spec.App.Name, spec.Batch, p.Name, lo, hi, gpus)
		}
		j := &job{spec: spec, key: Namespace + "/" + spec.Name, min: lo, max: hi, lastScaleDown: -1, lastResize: -1}
		s.jobs = append(s.jobs, j)
		s.byKey[j.key] = j
	}
	slices.SortStableFunc(s.jobs, func(a, b *job) int { return cmp.Compare(a.spec.Arrival, b.spec.Arrival) })
	return s, nil
}

// at is the time of a simulated second.
func (s *sim) at(sec float64) time.Time { return epoch.Add(seconds(sec)) }

// live reports whether a job is still to arrive or to finish.
func (s *sim) live() bool {
	return slices.ContainsFunc(s.jobs, func(j *job) bool { return j.phase != done })
}

// submit queues the jobs that arrived by now; with none in the cluster,
// it first skips to the first plan after the next arrival.
func (s *sim) submit() {
	if s.next < len(s.jobs) && !slices.ContainsFunc(s.jobs, func(j *job) bool { return j.phase != done && j.phase != future }) {
		step := s.cfg.Interval.Seconds()
		s.now = math.Max(s.now, math.Ceil(s.jobs[s.next].spec.Arrival/step)*step)
	}
	for ; s.next < len(s.jobs) && s.jobs[s.next].spec.Arrival <= s.now; s.next++ {
		j := s.jobs[s.next]
		j.phase, j.queuedAt = queued, j.spec.Arrival
	}
}

// tick is one cycle of edl at now: kube-scheduler has bound what fits
// since the last, the autoscaler plans on a snapshot and the plan is
// applied, the ReplicaSets converge and kube-scheduler binds the new pods;
// then every job whose bound trainers changed restarts, once.
func (s *sim) tick() {
	s.bind()
	s.plans++
	snap := s.c.snapshot(s.jobs, s.at)
	d := planner.Decide(snap, s.plannedJobs(snap), s.queue(), s.options(s.at(s.now)))
	s.apply(d)
	s.bind()
	for _, j := range s.jobs {
		if j.changed {
			j.restart(s.c, s.now, s.cfg.RestartCost.Seconds())
		}
	}
	s.count()
}

// apply carries a decision out: the preempted jobs go back to the queue,
// the scalings set the ReplicaSets' replicas (their marked pods deleted
// first), the admitted jobs' ReplicaSets go to their minimum, and the
// ReplicaSets converge.
func (s *sim) apply(d planner.Decision) {
	for _, p := range d.Preempted {
		j := s.byKey[p.Job]
		j.phase, j.queuedAt, j.replicas = queued, s.now, 0
	}
	for _, a := range d.Actions {
		j := s.byKey[a.Job]
		j.replicas, j.lastResize = a.To, s.now
		if a.StartsCoolDown() {
			j.lastScaleDown = s.now
		}
		for _, p := range j.pods {
			p.marked = slices.Contains(a.Remove, p.name)
		}
	}
	for _, a := range d.Admitted {
		j := s.byKey[a.Job]
		j.phase, j.admittedAt, j.replicas = admitted, s.now, j.min
		if j.started {
			j.phase = running // back from a preemption
		}
	}
	for _, j := range s.jobs {
		if j.phase != done && s.c.converge(j, s.now) {
			j.changed = true
		}
	}
}

// bind lets kube-scheduler bind the pods that fit; the jobs that got one
// have changed.
func (s *sim) bind() {
	for _, j := range s.c.schedule(s.jobs) {
		j.changed = true
	}
}

// count records the most GPUs the bound trainers hold, in all and on one
// node, counted from the pods rather than the scheduler's books.
func (s *sim) count() {
	clear(s.perNode)
	total := 0
	for _, j := range s.jobs {
		for _, p := range j.pods {
			if p.node >= 0 {
				s.perNode[p.node]++
				total++
			}
		}
	}
	s.peak = max(s.peak, total)
	for _, n := range s.perNode {
		s.peakNode = max(s.peakNode, n)
	}
}

// advance trains the running jobs until `to`; those that reach their
// target end, and their pods go.
func (s *sim) advance(to float64) {
	for _, j := range s.jobs[:s.next] {
		if j.phase == done || len(j.pods) == 0 {
			continue
		}
		if j.advance(s.now, to) {
			j.phase = done
			s.c.release(j)
		}
	}
}

// seconds is a duration of sec seconds.
func seconds(sec float64) time.Duration { return time.Duration(math.Round(sec * float64(time.Second))) }
