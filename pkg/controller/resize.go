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
	"github.com/paddlepaddle/edl/pkg/framework"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// GroupWindow: the exits of different pods within this long of each other
// are one failure of the worker group — when one worker fails, its peers'
// collectives fail with it.
const GroupWindow = time.Minute

// resizeStatus derives status.resize of a job whose trainers restart on
// every resize: the resizes counted from the autoscaler's lastScale, the
// cost of the last growth — from its time until every trainer pod is Ready
// again, observed at now — the failures of its training counted against
// the budget (the exits of its framework's Ender role, judged by the
// framework). It is pure.
func resizeStatus(job *v1.TrainingJob, trainers v1.ReplicaStatus, pods map[v1.Role][]*cluster.Pod, now time.Time) v1.ResizeStatus {
	s := *job.Status.Resize.DeepCopy()
	if last := job.Status.LastScale; last != nil && (s.Last == nil || last.Time.After(s.Last.Time)) {
		t := last.Time
		s.Count++
		s.Last = &t
		// A scale-down starts no pod: its survivors' containers restart
		// in theirs; the growth's figure stands.
		s.Measured = last.To <= last.From
	}
	if !s.Measured && s.Last != nil && trainers.Desired > 0 && trainers.Ready >= trainers.Desired && !now.Before(s.Last.Time) {
		s.LastCost = &metav1.Duration{Duration: now.Sub(s.Last.Time).Truncate(time.Second)}
		s.Measured = true
	}
	if tr := frameworks.Training(&job.Spec); tr != nil {
		countFailures(&s, pods[tr.Ender], func(t *cluster.Termination) framework.Judgement {
			return tr.Judge(t, s.Last, masterSince(pods[v1.RoleMaster]))
		})
	}
	return s
}

// masterSince is when the job's running master pod's container started its
// current run; zero while none runs.
func masterSince(masters []*cluster.Pod) time.Time {
	var since time.Time
	for _, p := range masters {
		if isRunning(p) && p.RunningSince != nil && p.RunningSince.After(since) {
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
func countFailures(s *v1.ResizeStatus, pods []*cluster.Pod, judge func(*cluster.Termination) framework.Judgement) {
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
		case framework.Later:
			continue
		case framework.Failed:
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
