// Package watch builds what EDL reads the cluster through: the shared
// informers, with the transforms that keep only the fields EDL reads, and
// the snapshot tracker they feed; and the autoscaler planning on them. The
// controller, `edl explain` and `kubectl edl explain` all read through one
// Watch, so that an explanation sees the cluster as the controller does.
package watch

import (
	"context"
	"fmt"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"

	log "github.com/inconshreveable/log15"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/autoscaler"
	"github.com/paddlepaddle/edl/pkg/autoscaler/planner"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/config"
	tjclient "github.com/paddlepaddle/edl/pkg/generated/clientset/versioned"
	tjinformers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions"
	tjv1informers "github.com/paddlepaddle/edl/pkg/generated/informers/externalversions/paddlepaddle/v1"
)

// Watch holds the informer factories, the informers the controller and the
// autoscaler share, and the tracker. Nothing runs until Start.
type Watch struct {
	KubeInformers informers.SharedInformerFactory
	JobInformers  tjinformers.SharedInformerFactory
	// Pods caches *cluster.Pod (cluster.TransformPod): read it through
	// Informer(), never its typed Lister, which casts to *corev1.Pod.
	Pods        coreinformers.PodInformer
	Jobs        tjv1informers.TrainingJobInformer
	Queues      tjv1informers.TrainingQueueInformer
	ReplicaSets appsinformers.ReplicaSetInformer
	// ConfigMaps holds the Horovod jobs' host-discovery ConfigMaps alone
	// (labelled paddle-job-master), not every ConfigMap of the cluster.
	ConfigMaps coreinformers.ConfigMapInformer
	// PDBs holds the PodDisruptionBudgets of the jobs' masters alone
	// (labelled paddle-job-master).
	PDBs    policyinformers.PodDisruptionBudgetInformer
	Tracker *cluster.Tracker
	// GPUs are the extended resources counted as GPUs.
	GPUs []corev1.ResourceName
}

// New builds the informers, resynced every resync, and the tracker, which
// counts gpus as GPUs.
func New(kubeClient kubernetes.Interface, tjClient tjclient.Interface, resync time.Duration, gpus []string, logger log.Logger) (*Watch, error) {
	w := &Watch{
		KubeInformers: informers.NewSharedInformerFactory(kubeClient, resync),
		JobInformers:  tjinformers.NewSharedInformerFactory(tjClient, resync),
	}
	for _, g := range gpus {
		w.GPUs = append(w.GPUs, corev1.ResourceName(g))
	}
	w.Pods = w.KubeInformers.Core().V1().Pods()
	nodeInformer := w.KubeInformers.Core().V1().Nodes()
	if err := SetTransforms(w.KubeInformers); err != nil {
		return nil, err
	}
	w.Jobs = w.JobInformers.Paddlepaddle().V1().TrainingJobs()
	w.Queues = w.JobInformers.Paddlepaddle().V1().TrainingQueues()
	w.ReplicaSets = w.KubeInformers.Apps().V1().ReplicaSets()
	// The factory keeps one informer per type: registered first, the
	// filtered one is what Core().V1().ConfigMaps() returns from now on.
	w.KubeInformers.InformerFor(&corev1.ConfigMap{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(c, metav1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.LabelSelector = v1.LabelMaster })
	})
	w.ConfigMaps = w.KubeInformers.Core().V1().ConfigMaps()
	w.KubeInformers.InformerFor(&policyv1.PodDisruptionBudget{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return policyinformers.NewFilteredPodDisruptionBudgetInformer(c, metav1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.LabelSelector = v1.LabelMaster })
	})
	w.PDBs = w.KubeInformers.Policy().V1().PodDisruptionBudgets()
	var err error
	w.Tracker, err = cluster.New(cluster.Config{
		PodInformer:          w.Pods,
		NodeInformer:         nodeInformer,
		QuotaInformer:        w.KubeInformers.Core().V1().ResourceQuotas(),
		LimitRangeInformer:   w.KubeInformers.Core().V1().LimitRanges(),
		RuntimeClassInformer: w.KubeInformers.Node().V1().RuntimeClasses(),
		Logger:               logger,
		GPUResourceNames:     w.GPUs,
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Autoscaler is the autoscaler planning with p on the watch: the one the
// controller runs (with a recorder and metrics) and the one an explanation
// plans with (with neither: Explain writes nothing).
func (w *Watch) Autoscaler(p config.Planner, kubeClient kubernetes.Interface, tjClient tjclient.Interface,
	recorder record.EventRecorder, logger log.Logger, m autoscaler.Metrics) *autoscaler.Autoscaler {
	return autoscaler.New(autoscaler.Config{
		KubeClient:            kubeClient,
		TJClient:              tjClient,
		Tracker:               w.Tracker,
		JobInformer:           w.Jobs,
		ReplicaSetInformer:    w.ReplicaSets,
		PriorityClassInformer: w.KubeInformers.Scheduling().V1().PriorityClasses(),
		PodInformer:           w.Pods,
		NodeInformer:          w.KubeInformers.Core().V1().Nodes(),
		QueueInformer:         w.Queues,
		GPUResourceNames:      w.GPUs,
		Recorder:              recorder,
		Logger:                logger,
		Clock:                 clock.RealClock{},
		Interval:              p.Interval,
		MaxLoadDesired:        p.MaxLoadDesired,
		CoolDown:              p.CoolDown,
		MaxGrowPerCycle:       p.MaxGrowPerCycle,
		RebalanceGap:          p.RebalanceGap,
		Policy:                planner.Policy(p.Policy),
		MaxMovesPerSecond:     p.MaxMovesPerSecond,
		PriceResizes:          p.PriceResizes,
		DryRun:                p.DryRun,
		GangAdmission:         p.GangAdmission,
		Preemption:            p.Preemption,
		StartDeadline:         p.StartDeadline,
		StartRetries:          p.StartRetries,
		Metrics:               m,
	})
}

// Start starts the informers until ctx is done.
func (w *Watch) Start(ctx context.Context) {
	w.KubeInformers.Start(ctx.Done())
	w.JobInformers.Start(ctx.Done())
}

// Shutdown waits for the informers Start started to stop; their context
// must be done.
func (w *Watch) Shutdown() {
	w.KubeInformers.Shutdown()
	w.JobInformers.Shutdown()
}

// SetTransforms installs the informer transforms before the informers
// start: the informers watch every pod, node, ReplicaSet and Service of the
// cluster, and keep only the fields the controller, the tracker and the
// autoscaler read, so that a cluster of 100,000 pods stays cheap.
func SetTransforms(f informers.SharedInformerFactory) error {
	for _, t := range []struct {
		what     string
		informer interface {
			SetTransform(cache.TransformFunc) error
		}
		transform cache.TransformFunc
	}{
		{"pod", f.Core().V1().Pods().Informer(), cluster.TransformPod},
		{"node", f.Core().V1().Nodes().Informer(), cluster.TransformNode},
		{"ReplicaSet", f.Apps().V1().ReplicaSets().Informer(), cluster.TransformReplicaSet},
		{"Service", f.Core().V1().Services().Informer(), cluster.TransformService},
	} {
		if err := t.informer.SetTransform(t.transform); err != nil {
			return fmt.Errorf("set the %s transform: %w", t.what, err)
		}
	}
	return nil
}
