package autoscaler

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// maxWakeDelay caps the default delay of a plan an event wakes.
const maxWakeDelay = time.Second

// waker wakes the autoscaler between its ticks for the events a plan acts
// on at once: a pod that outranks trainers turning unschedulable (the plan
// yields to it before kube-scheduler preempts trainers one pod at a time),
// room freeing (a bound pod of no TrainingJob gone, a bound pod finished, a
// node joining), which the plan hands out, and a TrainingJob turning Queued
// (the plan admits it) or, elastic, Running (the plan grows it). Its
// handlers only signal; they never plan or call the API. The signal is a
// channel of one: a burst of events is one wake.
type waker struct {
	kick chan struct{}
	// lowest is the lowest priority of the elastic jobs the last plan saw:
	// an unschedulable pod of a higher priority may take their trainers.
	lowest atomic.Int32
	// events counts the events that asked for a plan, for the tests.
	events atomic.Int64
}

func newWaker() *waker {
	w := &waker{kick: make(chan struct{}, 1)}
	w.lowest.Store(math.MinInt32) // before the first plan, any pod may
	return w
}

// poke asks for a plan, unless one is asked for already.
func (w *waker) poke() {
	w.events.Add(1)
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// drain forgets the wakes asked for so far: the plan about to run sees
// their events.
func (w *waker) drain() {
	select {
	case <-w.kick:
	default:
	}
}

// planned records the jobs a plan saw, for the next events.
func (w *waker) planned(jobs []planner.Job) {
	lowest := int32(math.MaxInt32)
	for _, j := range jobs {
		if j.Min < j.Max {
			lowest = min(lowest, j.Priority)
		}
	}
	w.lowest.Store(lowest)
}

// register adds the waker's handlers to the pod, node and TrainingJob
// informers; any may be nil.
func (w *waker) register(pods, nodes, jobs cache.SharedIndexInformer) error {
	if pods != nil {
		if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { w.onPod(nil, obj) },
			UpdateFunc: w.onPod,
			DeleteFunc: w.onPodDelete,
		}); err != nil {
			return err
		}
	}
	if nodes != nil {
		if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { w.onNode(nil, obj) },
			UpdateFunc: w.onNode,
		}); err != nil {
			return err
		}
	}
	if jobs != nil {
		if _, err := jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { w.onJob(nil, obj) },
			UpdateFunc: w.onJob,
		}); err != nil {
			return err
		}
	}
	return nil
}

// onJob wakes a plan for a TrainingJob that turned Queued or, elastic,
// Running ([jobWakes]).
func (w *waker) onJob(oldObj, newObj interface{}) {
	job, ok := newObj.(*v1.TrainingJob)
	if !ok {
		return
	}
	var was v1.TrainingJobPhase
	if old, ok := oldObj.(*v1.TrainingJob); ok {
		was = old.Status.Phase
	}
	if jobWakes(was, job) {
		w.poke()
	}
}

// jobWakes reports whether a job's change of phase from was (empty for a
// job first seen) is one a plan acts on at once: it turned Queued, and gang
// admission admits it as soon as its minimum fits; or it is elastic and
// turned Running, and growth grows it into the idle room. On the ticks
// alone, each waited half an interval on average: a job arriving on a
// cluster with room was admitted, and then grown, a tick later each.
func jobWakes(was v1.TrainingJobPhase, job *v1.TrainingJob) bool {
	switch now := job.Status.Phase; {
	case now == was:
		return false
	case now == v1.PhaseQueued:
		return true
	case now == v1.PhaseRunning:
		return job.Spec.Trainer.MinInstance < job.Spec.Trainer.MaxInstance
	}
	return false
}

func (w *waker) onPod(oldObj, newObj interface{}) {
	pod, ok := cluster.PodOf(newObj)
	if !ok {
		return
	}
	var old *cluster.Pod
	if oldObj != nil {
		if old, ok = cluster.PodOf(oldObj); ok && old.ResourceVersion == pod.ResourceVersion {
			return // a resync
		}
	}
	if wakesOnUpdate(old, pod, w.lowest.Load()) {
		w.poke()
	}
}

// onPodDelete wakes a plan for a bound pod of no TrainingJob deleted: room
// the last plan did not plan for. A trainer or pserver deleted is most often
// a plan's own scale-down or move, whose room that plan already gave out
// (or kube-scheduler's preemption, whose room its preemptor takes); a plan
// woken for each of those put the takers' new trainers ahead of an arriving
// job's pods in kube-controller-manager's and kube-scheduler's queues. The
// room of a job deleted whole is planned on the next tick.
func (w *waker) onPodDelete(obj interface{}) {
	pod, ok := cluster.PodOf(obj)
	if !ok || !holdsRoom(pod) {
		return
	}
	if _, _, member := v1.JobOf(pod.Labels); !member {
		w.poke()
	}
}

func (w *waker) onNode(oldObj, newObj interface{}) {
	node, ok := newObj.(*corev1.Node)
	if !ok || !nodeCounted(node) {
		return
	}
	if old, ok := oldObj.(*corev1.Node); ok && nodeCounted(old) {
		return
	}
	w.poke() // a node joined, became Ready or was uncordoned
}

// wakesOnUpdate reports whether a pod's change (old is nil for a pod first
// seen) is one a plan acts on at once:
//
//   - it turned unschedulable and may take trainers: it outranks the
//     lowest elastic job and may preempt, or it is a TrainingJob's pod (a
//     job below its minimum, or a trainer kube-scheduler's preemption
//     re-created that the plan gives back);
//   - it is new, of no TrainingJob, not tried by kube-scheduler yet, and
//     outranks the lowest elastic job and may preempt: in a burst the
//     scheduler tries such pods one at a time, and a plan may free their
//     room before it preempts for them;
//   - it held room and finished (Succeeded or Failed).
//
// A pod that stays unschedulable wakes nothing: the scheduler rewrites its
// condition at each try.
func wakesOnUpdate(old, pod *cluster.Pod, lowest int32) bool {
	if old != nil && holdsRoom(old) && !live(pod) {
		return true
	}
	_, _, member := v1.JobOf(pod.Labels)
	never := pod.Scheduling != nil && pod.Scheduling.PreemptNever
	if old == nil && !member && untried(pod) {
		return pod.Priority > lowest && !never
	}
	if !unschedulable(pod) || (old != nil && unschedulable(old)) {
		return false
	}
	if member {
		return pod.Priority >= lowest
	}
	return pod.Priority > lowest && !never
}

// untried: the pod waits for kube-scheduler's first try.
func untried(p *cluster.Pod) bool {
	return p.NodeName == "" && p.DeletionTimestamp == nil && p.Phase == corev1.PodPending && p.Scheduled == nil
}

// holdsRoom: the pod is bound and neither Succeeded nor Failed.
func holdsRoom(p *cluster.Pod) bool { return p.NodeName != "" && live(p) }

func live(p *cluster.Pod) bool { return p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed }

// unschedulable: the scheduler tried and found no node, and the pod still
// waits for one.
func unschedulable(p *cluster.Pod) bool {
	return p.NodeName == "" && p.DeletionTimestamp == nil && live(p) && p.Unschedulable()
}

// nodeCounted: Ready and not cordoned, as the tracker counts nodes.
func nodeCounted(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// wakeDelay is how long a plan an event wakes waits for more events, so
// that it sees a burst (a Deployment's new pods, a scale-down's deletions)
// whole: Config.WakeDelay, by default a fifth of the interval, at most a
// second.
func (a *Autoscaler) wakeDelay() time.Duration {
	if d := a.cfg.WakeDelay; d != 0 {
		return d
	}
	return min(a.cfg.Interval/5, maxWakeDelay)
}

// loop runs plan at once, then every interval (from the start of one to
// the start of the next: a cycle that applies many scalings spends seconds
// writing them at the client's rate limit, and the next would start that
// much later), and once more per interval, wakeDelay after an event the
// waker signals, until ctx is done.
func (a *Autoscaler) loop(ctx context.Context, plan func(context.Context)) {
	ticker := a.clock.NewTicker(a.cfg.Interval)
	defer ticker.Stop()
	var timer clock.Timer
	var due <-chan time.Time
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
			timer, due = nil, nil
		}
	}
	defer stopTimer()
	run := func() {
		a.wake.drain()
		plan(ctx)
	}
	run()
	extra := true // an event may still wake a plan in this interval
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			stopTimer()
			run()
			extra = true
		case <-a.wake.kick:
			if extra && due == nil && a.wakeDelay() >= 0 {
				timer = a.clock.NewTimer(a.wakeDelay())
				due = timer.C()
			}
		case <-due:
			timer, due = nil, nil
			extra = false
			a.log.Debug("planning on an event")
			run()
		}
	}
}
