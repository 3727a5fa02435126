package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// writeStatus writes the status subresource, only when it changed, and
// reports whether it wrote; the pacer notes the write.
func (c *Controller) writeStatus(ctx context.Context, job *v1.TrainingJob, status v1.TrainingJobStatus) (bool, error) {
	if equality.Semantic.DeepEqual(job.Status, status) {
		return false, nil
	}
	update := job.DeepCopy()
	update.Status = status
	_, err := c.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("update status of %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.pacer.wrote(job.Namespace + "/" + job.Name)
	return true, nil
}

// writeVerdict writes a status whose phase is final at once and returns
// the job as stored, with the status as written (the stored one has its
// times at the API's precision).
func (c *Controller) writeVerdict(ctx context.Context, job *v1.TrainingJob, status v1.TrainingJobStatus) (*v1.TrainingJob, error) {
	update := job.DeepCopy()
	update.Status = status
	stored, err := c.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of %s/%s: %w", job.Namespace, job.Name, err)
	}
	c.pacer.wrote(job.Namespace + "/" + job.Name)
	stored.Status = *status.DeepCopy()
	return stored, nil
}

// pacer spaces the status writes of a job that change only its figures:
// the replica counts, which move with every pod that starts, becomes ready
// or stops, the phase's message, which repeats them, and the progress the
// training reports every 10 s. Such a write waits
// until interval has passed since the job's last status write; the sync that
// meets it puts the job's key back in the workqueue for that moment, and the
// sync then writes what the job looks like by then. A write that changes
// anything else — the phase, a condition, the observed generation — goes at
// once. So a job whose trainers start one by one is written at most once an
// interval, and its status is never more than an interval behind its pods.
type pacer struct {
	interval time.Duration // 0: every write goes at once
	clock    clock.PassiveClock

	mu sync.Mutex
	// last is when each job's status was last written, by job key. A job
	// without an entry (new, or synced first by this replica) writes at once.
	last map[string]time.Time
}

func newPacer(interval time.Duration, clk clock.PassiveClock) *pacer {
	return &pacer{interval: interval, clock: clk, last: map[string]time.Time{}}
}

// wait is how long writing cur over the job's old status must wait: 0 when
// it may be written now.
func (p *pacer) wait(key string, old, cur *v1.TrainingJobStatus) time.Duration {
	if p.interval <= 0 || !onlyFiguresChanged(old, cur) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(last.Add(p.interval).Sub(p.clock.Now()), 0)
}

// wrote notes that the job's status was written now.
func (p *pacer) wrote(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = p.clock.Now()
}

// forget drops a deleted job.
func (p *pacer) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// onlyFiguresChanged: cur differs from old, and only in the replica counts
// and the messages of the phase and of the Ready condition, which repeat
// them. It is pure.
func onlyFiguresChanged(old, cur *v1.TrainingJobStatus) bool {
	if equality.Semantic.DeepEqual(old, cur) {
		return false
	}
	return equality.Semantic.DeepEqual(withoutFigures(old), withoutFigures(cur))
}

// withoutFigures is a copy of s without its counts and the messages that
// repeat them.
func withoutFigures(s *v1.TrainingJobStatus) *v1.TrainingJobStatus {
	out := s.DeepCopy()
	out.Message = ""
	out.Master, out.Pservers, out.Trainers = v1.ReplicaStatus{}, v1.ReplicaStatus{}, v1.ReplicaStatus{}
	out.Progress = nil
	for i := range out.Conditions {
		if out.Conditions[i].Type == v1.ConditionReady {
			out.Conditions[i].Message = ""
		}
	}
	return out
}
