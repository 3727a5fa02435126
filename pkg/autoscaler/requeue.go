package autoscaler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// Start deadline: an admitted job holds the room and quota its minimum was
// admitted into until its pods exist (Decide's Queue.Starting). A job whose
// pods can never all run — a volume that does not exist, an image that never
// pulls, a quota or admission policy EDL does not see — would hold them for
// ever. So a job admitted more than Config.StartDeadline ago that has not
// been Running since goes back to the queue: its condition Queued True
// again, reason NotStarted, which the controller answers by scaling its
// ReplicaSets to 0. It may be admitted again after a backoff that doubles
// from StartBackoff (status.retryAfter), at most Config.StartRetries times;
// after that it stays queued until it is suspended and resumed, which
// resets status.requeues.

// StartBackoff is the wait before a job requeued for the first time may be
// admitted again; it doubles with every requeue, up to MaxStartBackoff.
const (
	StartBackoff    = time.Minute
	MaxStartBackoff = time.Hour
)

// notStarted is an admitted job past its start deadline.
type notStarted struct {
	job      *v1.TrainingJob
	admitted time.Time
}

// pastStartDeadline reports whether an admitted job (its Queued condition
// c, False with reason Admitted) has not been Running since its admission
// and was admitted more than the start deadline before now. A job that ran
// and then lost pods is not: its Ready condition changed after the
// admission (it turned True, and perhaps False again).
func (a *Autoscaler) pastStartDeadline(tj *v1.TrainingJob, c *metav1.Condition, now time.Time) bool {
	if a.cfg.StartDeadline <= 0 || tj.Status.Phase == v1.PhaseRunning {
		return false
	}
	admitted := c.LastTransitionTime.Time
	if r := meta.FindStatusCondition(tj.Status.Conditions, v1.ConditionReady); r != nil &&
		(r.Status == metav1.ConditionTrue || r.LastTransitionTime.After(admitted)) {
		return false
	}
	// The API server keeps a condition's time to the second, cut down: the
	// job was admitted before the end of that second, and the deadline runs
	// from there, so that no job is requeued before its deadline.
	return now.Sub(admitted.Truncate(time.Second).Add(time.Second)) > a.cfg.StartDeadline
}

// mayAdmitAgain reports whether a queued job is not waiting out the
// backoff of a requeue, and was not requeued for the last time.
func (a *Autoscaler) mayAdmitAgain(tj *v1.TrainingJob, now time.Time) bool {
	if tj.Status.Requeues > a.cfg.StartRetries {
		return false
	}
	return tj.Status.RetryAfter == nil || !now.Before(tj.Status.RetryAfter.Time)
}

// backoff is the wait after the n-th requeue (n >= 1).
func backoff(n int32) time.Duration {
	d := StartBackoff
	for i := int32(1); i < n && d < MaxStartBackoff; i++ {
		d *= 2
	}
	return min(d, MaxStartBackoff)
}

// requeue sends the admitted jobs that did not start in time back to the
// queue, naming what never started and why (the controller's reason and
// message for the job, read from its pods: unschedulable, refused by the
// API server, still starting), with an event and a retry time. A failed
// write is retried by the next cycle.
func (a *Autoscaler) requeue(ctx context.Context, jobs []notStarted, now time.Time) {
	for _, ns := range jobs {
		tj := ns.job.DeepCopy()
		tj.Status.Requeues++
		n := tj.Status.Requeues
		why := fmt.Sprintf("its minimum was not all running %s after its admission at %s (%s: %s)",
			a.cfg.StartDeadline, ns.admitted.UTC().Format(time.RFC3339), ns.job.Status.Reason, ns.job.Status.Message)
		final := n > a.cfg.StartRetries
		var msg string
		if final {
			tj.Status.RetryAfter = nil
			msg = fmt.Sprintf("requeued for the last time, after %d tries: %s; it is not admitted again until it is suspended and resumed", n, why)
		} else {
			retry := metav1.NewTime(now.Add(backoff(n)).Truncate(time.Second))
			tj.Status.RetryAfter = &retry
			msg = fmt.Sprintf("requeued (try %d of %d): %s; admitted again no sooner than %s", n, a.cfg.StartRetries+1, why, retry.UTC().Format(time.RFC3339))
		}
		cond := metav1.Condition{Type: v1.ConditionQueued, Status: metav1.ConditionTrue, Reason: v1.ReasonNotStarted, Message: msg,
			LastTransitionTime: metav1.NewTime(now)}
		if a.cfg.DryRun {
			a.log.Info("dry run: would requeue job", "job", key(tj), "reason", msg)
			continue
		}
		if err := a.writeQueued(ctx, tj, msg, cond); err != nil {
			a.log.Warn("requeueing the job failed; the next cycle retries", "job", key(tj), "err", err)
			continue
		}
		a.log.Info("requeued job that did not start", "job", key(tj), "requeues", n, "final", final)
		a.recorder.Eventf(ns.job, corev1.EventTypeWarning, v1.EventRequeued, "Requeued: %s", msg)
		if a.cfg.Metrics != nil {
			a.cfg.Metrics.Requeued(final)
		}
	}
}
