package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/test/experiment"
)

// watcher follows the pods and the ReplicaSets from outside edl.
type watcher struct {
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	rs      appslisters.ReplicaSetLister

	mu         sync.Mutex
	lastChange time.Time // the last change of a trainer ReplicaSet's replicas
	// web are the web pods' times; preempted when each trainer was first
	// seen preempted by kube-scheduler.
	web       map[types.UID]*PodTimes
	preempted map[types.UID]time.Time
}

func newWatcher(kube kubernetes.Interface) (*watcher, error) {
	w := &watcher{factory: informers.NewSharedInformerFactory(kube, 0),
		web: map[types.UID]*PodTimes{}, preempted: map[types.UID]time.Time{}}
	podInformer := w.factory.Core().V1().Pods()
	rsInformer := w.factory.Apps().V1().ReplicaSets()
	w.pods, w.rs = podInformer.Lister(), rsInformer.Lister()
	_, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.changed(nil, obj) },
		UpdateFunc: func(old, obj any) {
			w.changed(old, obj)
		},
	})
	if err != nil {
		return nil, err
	}
	_, err = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.sawPod,
		UpdateFunc: func(_, obj any) { w.sawPod(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			w.sawPod(obj)
		},
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (w *watcher) start(ctx context.Context) error {
	w.factory.Start(ctx.Done())
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("sync the %v informer", typ)
		}
	}
	return nil
}

// changed notes when edl changes a trainer ReplicaSet's replicas.
func (w *watcher) changed(old, obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok || rs.Labels[v1.LabelTrainer] == "" {
		return
	}
	if prev, ok := old.(*appsv1.ReplicaSet); ok && replicas(prev) == replicas(rs) {
		return
	}
	w.mu.Lock()
	w.lastChange = time.Now()
	w.mu.Unlock()
}

// sawPod notes when a web pod was first seen and first seen bound, and
// when a trainer was first seen with kube-scheduler's DisruptionTarget
// condition (set just before the scheduler deletes a victim).
func (w *watcher) sawPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case p.Labels[experiment.WebLabel] == experiment.WebName:
		t := w.web[p.UID]
		if t == nil {
			t = &PodTimes{Created: now}
			w.web[p.UID] = t
		}
		if t.Bound.IsZero() && p.Spec.NodeName != "" {
			t.Bound = now
		}
	case p.Labels[v1.LabelTrainer] != "" && preemptedByScheduler(p):
		if _, seen := w.preempted[p.UID]; !seen {
			w.preempted[p.UID] = now
		}
	}
}

func preemptedByScheduler(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// webTimes are the web pods' times so far.
func (w *watcher) webTimes() []PodTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]PodTimes, 0, len(w.web))
	for _, t := range w.web {
		out = append(out, *t)
	}
	return out
}

// preemptions are when each preempted trainer was first seen so.
func (w *watcher) preemptions() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]time.Time, 0, len(w.preempted))
	for _, t := range w.preempted {
		out = append(out, t)
	}
	return out
}

func (w *watcher) lastTrainerChange() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastChange
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

var everything = labels.Everything()

// state is what the cluster looks like from outside edl.
type state struct {
	Pods, Trainers, TrainersWanted, Web int
	// Settled: every job's trainer ReplicaSet exists and runs exactly its
	// replicas with none pending, and the web service runs all its replicas.
	Settled bool
	Why     string
}

// state reads the listers: jobs trainer ReplicaSets are expected, web web pods.
func (w *watcher) state(jobs int, web int32) (state, error) {
	sets, err := w.rs.List(everything)
	if err != nil {
		return state{}, err
	}
	pods, err := w.pods.List(everything)
	if err != nil {
		return state{}, err
	}
	running, other := map[string]int{}, map[string]int{}
	var s state
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		s.Pods++
		live := p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
		if job := p.Labels[v1.LabelTrainer]; job != "" {
			if live {
				running[p.Namespace+"/"+job]++
				s.Trainers++
			} else {
				other[p.Namespace+"/"+job]++
			}
		}
		if p.Labels[experiment.WebLabel] == experiment.WebName && live {
			s.Web++
		}
	}
	found := 0
	for _, rs := range sets {
		job := rs.Labels[v1.LabelTrainer]
		if job == "" {
			continue
		}
		found++
		key := rs.Namespace + "/" + job
		s.TrainersWanted += int(replicas(rs))
		if s.Why == "" && (running[key] != int(replicas(rs)) || other[key] > 0) {
			s.Why = fmt.Sprintf("job %s runs %d of %d trainers, %d pending or ending", key, running[key], replicas(rs), other[key])
		}
	}
	switch {
	case s.Why != "":
	case found < jobs:
		s.Why = fmt.Sprintf("%d of %d trainer ReplicaSets", found, jobs)
	case s.Web != int(web):
		s.Why = fmt.Sprintf("%d of %d web pods run", s.Web, web)
	default:
		s.Settled = true
	}
	return s, nil
}
