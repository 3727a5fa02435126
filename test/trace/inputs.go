package trace

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
	"github.com/paddlepaddle/edl/pkg/config"
)

// The planner's inputs, built as pkg/autoscaler's readInputs and options
// build them from the informers (pkg/autoscaler/inputs.go, price.go), for
// jobs of one priority in one namespace with neither quotas nor teams.

// plannedJobs are the jobs the plan may scale at now: the Running jobs
// with min < max, their trainers from snap, each as the policy tells the
// planner of it.
func (s *sim) plannedJobs(snap snapshot.Snapshot) []planner.Job {
	var jobs []planner.Job
	var specs []*job
	for _, j := range s.jobs {
		if j.phase != running || j.min >= j.max {
			continue
		}
		jobs = append(jobs, s.plannerJob(j))
		specs = append(specs, j)
	}
	jobs = planner.JobsFromSnapshot(snap, jobs)
	if s.policy.Job != nil {
		for i := range jobs {
			s.policy.Job(&jobs[i], specs[i].reports(), specs[i].spec)
		}
	}
	return jobs
}

// plannerJob is what edl's elasticJobs and priceOf read of a job: its
// bounds and replicas, its last scale-down and, with resizes priced, that
// every resize restarts all of its trainers (a PyTorch job), when it last
// scaled and what its last resize cost.
func (s *sim) plannerJob(j *job) planner.Job {
	pj := planner.Job{Key: j.key, Min: j.min, Max: j.max, Current: j.replicas, Request: TrainerRequest, Limits: TrainerRequest}
	if j.lastScaleDown >= 0 {
		pj.LastScaleDown = s.at(j.lastScaleDown)
	}
	if s.edl.PriceResizes {
		pj.RestartsOnResize = true
		if j.lastResize >= 0 {
			pj.LastResize = s.at(j.lastResize)
		}
		pj.ResizeCost = seconds(j.resizeCost)
	}
	return pj
}

// queue is Decide's queue: the queued jobs with their minimum, the
// admitted elastic ones not Running yet, and, with preemption and a job
// queued, the admitted ones it may stop. No job is ever Starting: the
// simulated ReplicaSets create an admitted job's pods at once.
func (s *sim) queue() planner.Queue {
	var q planner.Queue
	for _, j := range s.jobs {
		switch j.phase {
		case queued:
			q.Jobs = append(q.Jobs, planner.QueuedJob{Key: j.key, Created: s.at(j.queuedAt), MaxTrainers: j.max,
				Pods: []planner.PodSet{{Role: "trainer", Count: j.min, Request: TrainerRequest, Limits: TrainerRequest}}})
		case admitted:
			if j.min < j.max {
				q.Arriving = append(q.Arriving, planner.ArrivingJob{Key: j.key, Min: j.min, Max: j.max,
					Admitted: s.at(j.admittedAt), Request: TrainerRequest, Limits: TrainerRequest})
			}
		}
	}
	if !s.edl.Preemption || len(q.Jobs) == 0 {
		return q
	}
	for _, j := range s.jobs {
		if j.phase == admitted || j.phase == running {
			r := planner.RunningJob{Key: j.key, Created: s.at(j.spec.Arrival)}
			if j.phase == running {
				r.MinPods = j.min
			}
			q.Running = append(q.Running, r)
		}
	}
	return q
}

// options are edl's plan options at now, as pkg/autoscaler's options
// builds them from its configuration, with the policy's changes. The
// plans come every interval, so each may move an interval's worth.
func (s *sim) options(now time.Time) planner.Options {
	o := planner.Options{
		MaxLoadDesired:       s.edl.MaxLoadDesired,
		Now:                  now,
		CoolDown:             s.edl.CoolDown,
		MaxGrowPerCycle:      s.edl.MaxGrowPerCycle,
		RebalanceGap:         s.edl.RebalanceGap,
		Policy:               planner.PolicyFulfillment,
		GrowMargin:           planner.DefaultGrowMargin, // edl's -grow_margin default
		DryRun:               s.edl.DryRun,
		Preemption:           s.edl.Preemption && s.edl.GangAdmission,
		MaxRebalancePerCycle: planner.MovesPerCycle(s.edl.Interval, s.edl.MaxMovesPerSecond),
	}
	if s.policy.Options != nil {
		s.policy.Options(&o)
	}
	return o
}

// edlPlanner is edl's planner configuration: the defaults of a
// configuration file (pkg/config), with the simulation's interval.
func edlPlanner(c Config) config.Planner {
	cfg := c.EDL // a copy: its pointers are only read
	cfg.Autoscaler.Interval = &metav1.Duration{Duration: c.Interval}
	return cfg.Planner()
}
