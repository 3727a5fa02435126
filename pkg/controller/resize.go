package controller

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// The windows in which an exit of a PyTorch trainer is not the training's
// failure (docs/api.md, "What ends a job").
const (
	// ResizeWindow: a trainer whose run began before a resize and ended
	// within this long after it was stopped by the resize. A scale-down's
	// survivors lose their peers when the removed trainers stop, within
	// their grace period; their agents then exit, to start again in the
	// next rendezvous round.
	ResizeWindow = time.Duration(v1.DefaultGracePeriodSeconds)*time.Second + time.Minute
	// MasterLossWindow: a trainer whose run began before its master's
	// current run began and ended within this long after it lost its
	// rendezvous store: its agent exits, and its next run finds the new
	// store through the master Service.
	MasterLossWindow = 2 * time.Minute
	// GroupWindow: the exits of different trainers within this long of
	// each other are one failure of the worker group — when one worker
	// fails, its peers' collectives fail with it.
	GroupWindow = time.Minute
)

// resizeStatus derives status.resize of a job whose trainers restart on
// every resize: the resizes counted from the autoscaler's lastScale, the
// cost of the last growth — from its time until every trainer pod is Ready
// again, observed at now — the failures of its training counted against
// the budget, and the progress the training script reports. It is pure.
func resizeStatus(job *v1.TrainingJob, trainers v1.ReplicaStatus, pods map[v1.Role][]*cluster.Pod, now time.Time) v1.ResizeStatus {
	s := *job.Status.Resize.DeepCopy()
	if last := job.Status.LastScale; last != nil && (s.Last == nil || last.Time.After(s.Last.Time)) {
		t := last.Time
		s.Count++
		s.Last = &t
		// A scale-down starts no pod: its survivors restart inside theirs,
		// which readiness does not see; the growth's figure stands.
		s.Measured = last.To <= last.From
	}
	if !s.Measured && s.Last != nil && trainers.Desired > 0 && trainers.Ready >= trainers.Desired && !now.Before(s.Last.Time) {
		s.LastCost = &metav1.Duration{Duration: now.Sub(s.Last.Time).Truncate(time.Second)}
		s.Measured = true
	}
	if job.Spec.FrameworkOrDefault() == v1.FrameworkHorovod {
		countFailures(&s, pods[v1.RoleMaster], launcherExit)
	} else {
		countFailures(&s, pods[v1.RoleTrainer], torchExit(s.Last, masterSince(pods[v1.RoleMaster])))
	}
	s.Progress = job.Annotations[v1.AnnotationProgress]
	return s
}

// judgement is what an exit of a job's container is.
type judgement int

const (
	// failed: the training failed; it counts against the budget.
	failed judgement = iota
	// excused: the exit was not the training's failure (its success, a
	// resize, the loss of the master).
	excused
	// later: not to be judged yet (the master is not running, so whether
	// the trainer lost it is not known).
	later
)

// launcherExit judges an exit of a Horovod job's launcher, horovodrun:
// its end is the job's, and horovodrun itself rides out the trainers that
// come and go.
func launcherExit(t *cluster.Termination) judgement {
	if t.ExitCode == 0 {
		return excused
	}
	return failed
}

// torchExit judges an exit of a PyTorch trainer, whose agent exits when its
// worker group fails (PET_MAX_RESTARTS is 0): a failure, unless the run it
// ended began before the last resize and ended within ResizeWindow of it,
// or began before the master's current run and ended within
// MasterLossWindow of that run's start. While no master runs, a trainer's
// exit waits to be judged.
func torchExit(lastResize *metav1.Time, master time.Time) func(*cluster.Termination) judgement {
	return func(t *cluster.Termination) judgement {
		switch {
		case t.ExitCode == 0:
			return excused
		case lastResize != nil && t.StartedAt.Before(lastResize) && t.FinishedAt.Time.Before(lastResize.Add(ResizeWindow)):
			return excused
		case master.IsZero():
			return later
		case t.StartedAt.Time.Before(master) && t.FinishedAt.Time.Before(master.Add(MasterLossWindow)):
			return excused
		}
		return failed
	}
}

// masterSince is when the job's running master pod's container started its
// current run; zero while none runs.
func masterSince(masters []*cluster.Pod) time.Time {
	var since time.Time
	for _, p := range masters {
		if isRunning(p) && p.RunningSince.After(since) {
			since = p.RunningSince.Time
		}
	}
	return since
}

// countFailures judges the restarts of pods that s has not judged yet, and
// adds the failures among them to s.Failures. A pod's restarts are judged
// by the exit that ended its last run (its last termination): a failure
// counts them all. The pods EDL removes are left out — being deleted, or
// marked for removal (v1.DeletionCostRemove) — so a trainer that exits on
// SIGTERM never counts. Exits of different pods within GroupWindow of the
// last failure counted are that failure. s.Counted keeps what each live pod
// has had judged; a pod that is gone keeps its share in s.Failures.
func countFailures(s *v1.ResizeStatus, pods []*cluster.Pod, judge func(*cluster.Termination) judgement) {
	counted := map[string]int32{}
	for _, c := range s.Counted {
		counted[c.Pod] = c.Restarts
	}
	type exit struct {
		pod      string
		restarts int32
		t        *cluster.Termination
	}
	var exits []exit
	for _, p := range pods {
		var restarts int32
		var last *cluster.Termination
		for _, cs := range p.ContainerStatuses {
			restarts += cs.RestartCount
			if t := cs.LastTerminated; t != nil && (last == nil || t.FinishedAt.After(last.FinishedAt.Time)) {
				last = t
			}
		}
		removed := p.DeletionTimestamp != nil || p.DeletionCost == v1.DeletionCostRemove
		if removed || restarts <= counted[p.Name] || last == nil {
			continue
		}
		exits = append(exits, exit{p.Name, restarts, last})
	}
	sort.Slice(exits, func(i, j int) bool { return exits[i].t.FinishedAt.Before(&exits[j].t.FinishedAt) })
	for _, e := range exits {
		switch judge(e.t) {
		case later:
			continue
		case failed:
			if l := s.LastFailure; l != nil && l.Pod != e.pod && e.t.FinishedAt.Sub(l.Time.Time).Abs() < GroupWindow {
				break // a peer of a failure counted
			}
			s.Failures += e.restarts - counted[e.pod]
			s.LastFailure = &v1.Failure{Time: e.t.FinishedAt, Pod: e.pod, ExitCode: e.t.ExitCode, Reason: e.t.Reason, Message: e.t.Message}
		}
		counted[e.pod] = e.restarts
	}
	out := s.Counted[:0:0]
	for _, p := range pods {
		if n := counted[p.Name]; n > 0 {
			out = append(out, v1.PodRestarts{Pod: p.Name, Restarts: n})
		}
	}
	slices.SortFunc(out, func(a, b v1.PodRestarts) int { return strings.Compare(a.Pod, b.Pod) })
	s.Counted = out
}

// overBudget fails a job whose training failed more often than
// spec.elasticPolicy.maxRestarts, saying how its last failure ended.
func overBudget(job *v1.TrainingJob, s v1.ResizeStatus) (verdict, bool) {
	budget := job.Spec.Elastic().MaxRestartsOrDefault()
	if s.Failures <= budget {
		return verdict{}, false
	}
	msg := fmt.Sprintf("the training failed %d times, more than spec.elasticPolicy.maxRestarts %d", s.Failures, budget)
	if l := s.LastFailure; l != nil {
		msg += fmt.Sprintf("; the last: pod %s exited with code %d", l.Pod, l.ExitCode)
		if l.Reason != "" {
			msg += " (" + l.Reason + ")"
		}
		if l.Message != "" {
			msg += ": " + strings.ReplaceAll(l.Message, "\n", " | ")
		}
	}
	return verdict{v1.PhaseFailed, v1.ReasonTooManyFailures, msg}, true
}
