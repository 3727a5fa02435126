package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// apply patches the trainer ReplicaSet from act.From to act.To — the patch
// tests the old count, so a concurrent writer wins and the next plan starts
// from what it wrote — and records the decision as an event. The same
// patch puts the decision's record, made at now, on the ReplicaSet
// (v1.AnnotationLastScale), so that it outlives a restart before the
// job's status gets it from recordStatus, in the same write as the Scaling
// condition. A scale-down of a job whose trainers leave its host list
// first (Horovod) marks the trainers it removes and writes
// v1.AnnotationScaleDownTo instead of the replicas: the controller lowers
// them once the list dropped the trainers ([pendingScaleDown]); no cycle
// waits for it.
func (a *Autoscaler) apply(ctx context.Context, job *v1.TrainingJob, act planner.ScaleAction, now time.Time) error {
	name := v1.ReplicaSetName(job.Name, v1.RoleTrainer)
	rs, err := a.replicaSets.ReplicaSets(job.Namespace).Get(name)
	if err != nil {
		return fmt.Errorf("get ReplicaSet %s: %w", name, err)
	}
	marks := act.To < act.From && len(act.Remove) > 0
	if marks {
		if err := a.markForRemoval(ctx, job.Namespace, act.Remove, a.clock.Now()); err != nil {
			a.clearMarks(ctx, job.Namespace, act.Remove) // those already marked
			return err
		}
		a.log.Info("marked trainers for removal", "job", act.Job, "pods", strings.Join(act.Remove, ","))
		if ctx.Err() != nil {
			// Stopped — a shutdown, a lost lease — before the decision was
			// written: the marks would keep these trainers out of a Horovod
			// job's hosts file while they run.
			a.clearMarks(ctx, job.Namespace, act.Remove)
			return fmt.Errorf("scale down ReplicaSet %s: %w", name, context.Cause(ctx))
		}
	}
	pending := marks && frameworks.LeavesFirst(&job.Spec)
	// The patch tests the object as well as the count: a ReplicaSet deleted
	// and created again under the same name (another owner's, or the
	// controller's after a deletion) is not the one planned for.
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": rs.UID},
		{"op": "test", "path": "/spec/replicas", "value": act.From},
	}
	if !pending {
		ops = append(ops, map[string]any{"op": "replace", "path": "/spec/replicas", "value": act.To})
	}
	ops = append(ops, lastScaleOp(rs.Annotations, scalingOf(act, now).record))
	if pending {
		ops = append(ops, map[string]any{"op": "add", "path": annotationPath(v1.AnnotationScaleDownTo), "value": strconv.Itoa(int(act.To))})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := a.kubeClient.AppsV1().ReplicaSets(job.Namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		if marks {
			// The marks would make a later scale-down delete these trainers
			// instead of the ones its plan picks.
			a.clearMarks(ctx, job.Namespace, act.Remove)
		}
		lost := apierrors.IsInvalid(err) || apierrors.IsConflict(err)
		if a.cfg.Metrics != nil {
			a.cfg.Metrics.ScaleFailed(act, lost)
		}
		if lost {
			return fmt.Errorf("ReplicaSet %s no longer has %d replicas: %w", name, act.From, err)
		}
		return fmt.Errorf("patch ReplicaSet %s: %w", name, err)
	}
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Scaled(act)
	}
	a.log.Info("scaled trainers", "job", act.Job, "from", act.From, "to", act.To, "reason", act.Reason, "afterHostsDrop", pending)
	if pending {
		a.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventScaled, "Scaling trainers from %d to %d once the host list dropped %s: %s",
			act.From, act.To, strings.Join(act.Remove, ","), act.Reason)
		return nil
	}
	a.recorder.Eventf(job, corev1.EventTypeNormal, v1.EventScaled, "Scaled trainers from %d to %d: %s", act.From, act.To, act.Reason)
	return nil
}

// scaling is what a job's status records of a scaling applied: the
// decision (lastScale) and, for a scale-down, the start of the job's
// cool-down (lastScaleDown).
type scaling struct {
	record   v1.ScaleRecord
	coolDown bool
}

func scalingOf(act planner.ScaleAction, now time.Time) *scaling {
	return &scaling{record: v1.ScaleRecord{Time: metav1.NewTime(now), From: act.From, To: act.To, Reason: act.Reason},
		coolDown: act.StartsCoolDown()}
}

// recordScale writes the scaling alone into the job's status (lastScale,
// lastScaleDown), with no precondition: the cooldown reads it, so it must
// not be lost to a race the Scaling condition lost.
func (a *Autoscaler) recordScale(ctx context.Context, job *v1.TrainingJob, s *scaling) error {
	fields := map[string]any{"lastScale": s.record}
	if s.coolDown {
		fields["lastScaleDown"] = s.record.Time
	}
	status, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return err
	}
	_, err = a.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).Patch(ctx, job.Name, types.MergePatchType, status, metav1.PatchOptions{}, "status")
	switch {
	case err == nil:
		a.noteRecorded(job, s)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("record the scaling in the status of %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// markParallelism is how many pod-deletion-cost patches are in flight at
// once: a yield to a burst marks hundreds of trainers, and one at a time
// the API server's latency, not the client's rate limit, would set the pace.
const markParallelism = 8

// markClearTimeout bounds the clearing of removal marks after a scale-down
// that did not happen.
const markClearTimeout = 10 * time.Second

// clearMarks clears the removal marks of the named trainers after their
// scale-down failed or was stopped, on a context of its own: ctx may be
// what ended. A mark left in place would make the next scale-down delete
// these trainers instead of the ones its plan picks, and keep them out of a
// Horovod job's hosts file, until the controller clears it as stale
// (controller.MarkTTL).
func (a *Autoscaler) clearMarks(ctx context.Context, namespace string, pods []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markClearTimeout)
	defer cancel()
	if err := a.markForRemoval(ctx, namespace, pods, time.Time{}); err != nil {
		a.log.Warn("clearing the removal marks failed; the controller clears them once stale", "namespace", namespace, "pods", strings.Join(pods, ","), "err", err)
	}
}

// markForRemoval marks the named trainers for removal at at
// (v1.RemovalMarkPatch: the lowest pod-deletion-cost, and the time, after
// which the controller clears a mark that outlived controller.MarkTTL), or
// clears their marks when at is zero. A trainer already gone is no error.
func (a *Autoscaler) markForRemoval(ctx context.Context, namespace string, pods []string, at time.Time) error {
	patch := v1.RemovalMarkPatch(at)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(markParallelism)
	for _, name := range pods {
		g.Go(func() error {
			_, err := a.kubeClient.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("set the deletion cost of trainer pod %s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// FigureRefresh is how long the autoscaler leaves a job's Scaling condition
// as it is when only the figures of its message changed: the load, the
// largest room and the like move with every pod that comes and goes, and a
// busy cluster would otherwise rewrite every job's status every cycle. A
// new reason or status is written at once.
const FigureRefresh = time.Minute

// writtenKey identifies a job for FigureRefresh: a job deleted and created
// again under its name starts afresh.
func writtenKey(job *v1.TrainingJob) string {
	return job.Namespace + "/" + job.Name + "/" + string(job.UID)
}

// recordStatus writes what this cycle decided for the job into its status,
// in one patch: the scaling applied (record, nil for none) and the Scaling
// condition from e. The condition is written when its status or reason
// differ from what the job holds, or its message does and the condition
// was not written in the last FigureRefresh: a steady cluster writes
// nothing. The condition is the autoscaler's alone, and the patch touches
// nothing else: it tests that the entry it replaces is still the Scaling
// condition, or — when the job has none yet — that the job is the version
// it read, so that a condition the controller added meanwhile is neither
// overwritten nor duplicated. The controller writes status with the
// resourceVersion it read and keeps the conditions it does not own, so it
// never drops this one either. A lost race is retried by the next plan;
// the record is then written alone (recordScale).
func (a *Autoscaler) recordStatus(ctx context.Context, job *v1.TrainingJob, e *planner.Explanation, record *scaling, now time.Time) error {
	if job == nil {
		return nil
	}
	cond, i, write := a.scalingCondition(job, e, now)
	if !write {
		if record == nil {
			return nil
		}
		return a.recordScale(ctx, job, record)
	}
	var ops []map[string]any
	switch {
	case i >= 0:
		path := fmt.Sprintf("/status/conditions/%d", i)
		ops = []map[string]any{
			{"op": "test", "path": path + "/type", "value": v1.ConditionScaling},
			{"op": "replace", "path": path, "value": cond},
		}
	case len(job.Status.Conditions) > 0:
		ops = []map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": job.ResourceVersion},
			{"op": "add", "path": "/status/conditions/-", "value": cond},
		}
	default:
		ops = []map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": job.ResourceVersion},
			{"op": "add", "path": "/status/conditions", "value": []metav1.Condition{cond}},
		}
	}
	if record != nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/status/lastScale", "value": record.record})
		if record.coolDown {
			ops = append(ops, map[string]any{"op": "add", "path": "/status/lastScaleDown", "value": record.record.Time})
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = a.tjClient.PaddlepaddleV1().TrainingJobs(job.Namespace).Patch(ctx, job.Name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
	switch {
	case err == nil:
		a.writtenMu.Lock()
		if a.written == nil {
			a.written = map[string]time.Time{}
		}
		a.written[writtenKey(job)] = now
		a.writtenMu.Unlock()
		if record != nil {
			a.noteRecorded(job, record)
		}
		a.log.Debug("recorded what limits the job", "job", e.Job, "limit", e.Limit, "message", e.Message)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	}
	if record != nil {
		if err := a.recordScale(ctx, job, record); err != nil {
			return err
		}
	}
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %s: %w", errStale, e.Job, err)
	}
	return fmt.Errorf("record the Scaling condition of %s: %w", e.Job, err)
}

// scalingCondition is the job's Scaling condition from e, the index of the
// one the job holds (-1 for none), and whether it is to be written: its
// status or reason changed, or its message did and it was not written in
// the last FigureRefresh.
func (a *Autoscaler) scalingCondition(job *v1.TrainingJob, e *planner.Explanation, now time.Time) (metav1.Condition, int, bool) {
	cond := ScalingCondition(e, job.Generation, now)
	i := slices.IndexFunc(job.Status.Conditions, func(c metav1.Condition) bool { return c.Type == v1.ConditionScaling })
	if i < 0 {
		return cond, i, true
	}
	old := job.Status.Conditions[i]
	if old.Status == cond.Status && old.Reason == cond.Reason {
		if old.Message == cond.Message {
			return cond, i, false
		}
		a.writtenMu.Lock()
		last, ok := a.written[writtenKey(job)]
		a.writtenMu.Unlock()
		if ok && now.Sub(last) < FigureRefresh {
			return cond, i, false // only the figures moved, and recently
		}
	}
	if old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	return cond, i, true
}

// errStale: a status write lost to a concurrent writer (the controller's
// status update, most often): the next plan reads the job again and retries.
var errStale = errors.New("the job's status changed since it was read")

// ScalingCondition is the Scaling condition that says e: True while the job
// gets what it may have (it grows, or is at its max), False while something
// holds it below; the reason is the limit, the message its sentence.
func ScalingCondition(e *planner.Explanation, generation int64, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionScaling, Status: metav1.ConditionTrue, Reason: string(e.Limit),
		Message: e.Message, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	if e.Limited() {
		c.Status = metav1.ConditionFalse
	}
	return c
}

// applied is what applyActions did: the scalings applied, as the job's
// status records them, and the jobs whose scaling failed or was skipped.
type applied struct {
	scaled map[string]*scaling
	failed map[string]bool
}

// applyParallelism is how many jobs' scalings are applied at once: a
// yield to a burst of pods scales down every job with trainers where the
// pods may go, each marking its trainers and patching its ReplicaSet, and
// one job at a time the API server's latency, not the client's rate limit,
// would set the pace.
const applyParallelism = 8

// applyActions patches the trainer ReplicaSets of actions, up to
// applyParallelism jobs at once, every scale-down before any scale-up (see
// [applyOrder]), and logs each instead with a dry run. A rebalancing
// scale-up whose room was to come from a scale-down that failed is skipped:
// its pods would only wait, and the next plan decides again.
func (a *Autoscaler) applyActions(ctx context.Context, actions []planner.ScaleAction, objects map[string]*v1.TrainingJob, now time.Time) applied {
	done := applied{scaled: map[string]*scaling{}, failed: map[string]bool{}}
	ordered := applyOrder(actions)
	if a.cfg.DryRun {
		for _, act := range ordered {
			a.log.Info("dry run: would scale trainers", "job", act.Job, "from", act.From, "to", act.To, "reason", act.Reason)
		}
		return done
	}
	var mu sync.Mutex // guards done and givenBack
	givenBack := true // every rebalancing scale-down applied
	downs := 0
	for downs < len(ordered) && ordered[downs].To < ordered[downs].From {
		downs++
	}
	for _, wave := range [][]planner.ScaleAction{ordered[:downs], ordered[downs:]} {
		var g errgroup.Group
		g.SetLimit(applyParallelism)
		for _, act := range wave {
			if act.Cause == planner.CauseRebalance && act.To > act.From && !givenBack {
				mu.Lock() // the wave's scale-ups already started write done too
				done.failed[act.Job] = true
				mu.Unlock()
				a.log.Info("not scaling up: a rebalancing scale-down it was to take the room of failed", "job", act.Job, "from", act.From, "to", act.To)
				continue
			}
			g.Go(func() error {
				err := a.apply(ctx, objects[act.Job], act, now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if act.Cause == planner.CauseRebalance && act.To < act.From {
						givenBack = false
					}
					done.failed[act.Job] = true
					a.log.Warn("scaling trainers failed; the next plan retries", "job", act.Job, "from", act.From, "to", act.To, "err", err)
					return nil
				}
				done.scaled[act.Job] = scalingOf(act, now)
				return nil
			})
		}
		_ = g.Wait() // the scale-ups wait for the scale-downs whose room they take
	}
	return done
}

// applyOrder is the plan's actions with the scale-downs first: the
// scale-ups of rebalancing take the room those free.
func applyOrder(actions []planner.ScaleAction) []planner.ScaleAction {
	out := make([]planner.ScaleAction, 0, len(actions))
	for _, down := range []bool{true, false} {
		for _, act := range actions {
			if (act.To < act.From) == down {
				out = append(out, act)
			}
		}
	}
	return out
}

// recordScalings writes what limits each planned job (its Scaling
// condition) with the scaling applied to it, if any, and the scaling alone
// for a job scaled but not explained, applyParallelism jobs at once: after
// a yield to a burst every job has a status to write, and one job at a time
// the API server's latency would delay the next plan by seconds. It skips a
// job whose scaling failed, whose condition would describe what did not
// happen, and a job being preempted; a dry run writes nothing.
func (a *Autoscaler) recordScalings(ctx context.Context, d planner.Decision, objects map[string]*v1.TrainingJob, done applied, now time.Time) {
	if a.cfg.DryRun {
		return
	}
	stopped := make(map[string]bool, len(d.Preempted))
	for _, pre := range d.Preempted {
		stopped[pre.Job] = true
	}
	written := make(map[string]time.Time, len(d.Jobs))
	recorded := make(map[string]v1.ScaleRecord, len(d.Jobs))
	a.writtenMu.Lock() // Explain reads recorded
	for _, e := range d.Jobs {
		if job := objects[e.Job]; job != nil {
			k := writtenKey(job)
			if t, ok := a.written[k]; ok {
				written[k] = t // jobs no longer planned are forgotten
			}
			if r, ok := a.recorded[k]; ok {
				recorded[k] = r
			}
		}
	}
	a.written, a.recorded = written, recorded
	a.writtenMu.Unlock()
	var g errgroup.Group
	g.SetLimit(applyParallelism)
	for _, e := range d.Jobs {
		if done.failed[e.Job] || stopped[e.Job] {
			continue
		}
		record := done.scaled[e.Job]
		delete(done.scaled, e.Job)
		g.Go(func() error {
			switch err := a.recordStatus(ctx, objects[e.Job], &e, record, now); {
			case errors.Is(err, errStale):
				a.log.Debug("the job changed while its limit was recorded; the next plan retries", "job", e.Job, "limit", e.Limit, "err", err)
			case err != nil:
				a.log.Warn("recording what limits the job failed; the next plan retries", "job", e.Job, "limit", e.Limit, "err", err)
			}
			return nil
		})
	}
	for job, record := range done.scaled { // scaled, and not explained: the record alone
		g.Go(func() error {
			if err := a.recordScale(ctx, objects[job], record); err != nil {
				a.log.Warn("recording the scaling failed", "job", job, "err", err)
			}
			return nil
		})
	}
	_ = g.Wait()
}
