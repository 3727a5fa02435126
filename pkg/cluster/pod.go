package cluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// Pod is what EDL keeps of a pod: the pod informer's transform (TransformPod)
// turns every pod it decodes into one, so the shared pod cache holds these
// and never a corev1.Pod. A corev1.Pod struct is 1,240 bytes however little
// is left in it, and a container 400 more; at 150,000 pods that was most of
// EDL's memory. Fields named as in corev1.Pod mean what they mean there.
//
// Cached pods are shared and read-only. The cache's own readers find the
// name, namespace, resource version, labels and owners through
// GetObjectMeta; the typed pod lister, which casts to *corev1.Pod, must not
// be used on an informer with this transform.
type Pod struct {
	Name              string
	Namespace         string
	UID               types.UID
	ResourceVersion   string
	CreationTimestamp metav1.Time
	DeletionTimestamp *metav1.Time
	// Labels and OwnerReferences are kept of a TrainingJob's pods only
	// (labelled paddle-job, paddle-job-pserver or paddle-job-master): EDL
	// selects pods by its job index, never by a label selector.
	Labels          map[string]string
	OwnerReferences []metav1.OwnerReference
	// DeletionCost is a job's pod's pod-deletion-cost annotation, "" when
	// it has none (the API server refuses an empty one).
	DeletionCost string
	// MarkedForRemoval is a job's pod's v1.AnnotationMarkedForRemoval, ""
	// when it has none.
	MarkedForRemoval string
	// HostsVersion is a job's pod's v1.AnnotationHostsVersion, "" when it
	// has none: the host-discovery file a Horovod master was told of.
	HostsVersion string
	// PodIP is a job's pod's status.podIP, "" for other pods: a Horovod
	// job's host-discovery file lists its trainers by address.
	PodIP string

	NodeName string
	// Priority is spec.priority, 0 when unset.
	Priority int32
	// Ready: a job's pod whose Ready condition is True. (Beside Priority,
	// whose padding it fills: every byte of a Pod is paid 150,000 times.)
	Ready             bool
	PriorityClassName string
	// Resources is what the pod's requests and limits are computed from.
	Resources *PodResources
	// Scheduling is kept while the pod is not bound, nil after.
	Scheduling *Scheduling

	Phase             corev1.PodPhase
	NominatedNodeName string
	// Scheduled is the PodScheduled condition while it is not True; nil
	// when the pod was scheduled (or nothing said yet). Only a job's pods
	// keep its message.
	Scheduled *Condition
	// ContainerStatuses are a job's pod's containers that stopped or
	// restarted; a container left out never did.
	ContainerStatuses []ContainerStatus
	// RunningSince is, for a job's pod, the latest time one of its
	// containers started running now; nil while none runs (a pointer: the
	// other pods pay 8 bytes, not 24). A PyTorch job's trainers' exits are
	// judged by their master's.
	RunningSince *metav1.Time
}

// PodResources is what a pod's requests and limits are computed from
// (podRequestsAndLimits). The pods of one template share one.
type PodResources struct {
	Containers     []ContainerResources
	InitContainers []ContainerResources
	// Overhead is the RuntimeClass overhead.
	Overhead corev1.ResourceList
	// Pod is spec.resources, the pod-level resources; nil when unset.
	Pod *corev1.ResourceRequirements
}

// ContainerResources are one container's requests and limits.
type ContainerResources struct {
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
	// Sidecar: an init container with restartPolicy Always, which keeps
	// running beside the app containers.
	Sidecar bool
}

// Scheduling is what a pod that is not bound yet keeps of its spec.
type Scheduling struct {
	// Placement is where it may run (node selector, required node
	// affinity, tolerations); nil when anywhere.
	Placement *snapshot.Placement
	// PreemptNever: preemptionPolicy Never.
	PreemptNever bool
	// Gates are the names of its scheduling gates, in order.
	Gates []string
}

// Condition is a pod condition's status, reason and message.
type Condition struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// ContainerStatus is what is kept of a container that stopped or restarted.
type ContainerStatus struct {
	Name         string
	RestartCount int32
	// Terminated is its current termination, LastTerminated the one before;
	// nil when none.
	Terminated     *Termination
	LastTerminated *Termination
	// Waiting is the reason it waits to start again after it exited, e.g.
	// CrashLoopBackOff.
	Waiting string
}

// Termination is a container's exit code and the kubelet's reason (Error,
// OOMKilled, ...), when the run it ended started and finished, and, for a
// non-zero exit, the end of its termination message (the last lines of its
// log, with terminationMessagePolicy FallbackToLogsOnError).
type Termination struct {
	ExitCode   int32
	Reason     string
	StartedAt  metav1.Time
	FinishedAt metav1.Time
	Message    string
}

// GetObjectMeta makes the pod's metadata readable by meta.Accessor, which is
// how client-go's stores key, index and compare cached objects.
func (p *Pod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
		Labels: p.Labels, OwnerReferences: p.OwnerReferences}
}

// Controller returns the owner reference that is the pod's controller, or
// nil.
func (p *Pod) Controller() *metav1.OwnerReference {
	for i := range p.OwnerReferences {
		if r := &p.OwnerReferences[i]; r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

// Unschedulable: the scheduler tried and found no node for the pod.
func (p *Pod) Unschedulable() bool {
	return p.Scheduled != nil && p.Scheduled.Status == corev1.ConditionFalse && p.Scheduled.Reason == corev1.PodReasonUnschedulable
}

// PodOf returns the cached pod an informer handed over: a *Pod, a *Pod in
// a tombstone, or a *corev1.Pod slimmed the way TransformPod does (an
// informer without the transform, a test).
func PodOf(obj interface{}) (*Pod, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch p := obj.(type) {
	case *Pod:
		return p, true
	case *corev1.Pod:
		return slimPod(p), true
	}
	return nil, false
}

// podResources collects what spec's requests and limits are computed from.
func podResources(spec *corev1.PodSpec) *PodResources {
	r := &PodResources{Overhead: spec.Overhead, Pod: spec.Resources}
	collect := func(cs []corev1.Container, init bool) []ContainerResources {
		if len(cs) == 0 {
			return nil
		}
		out := make([]ContainerResources, len(cs))
		for i := range cs {
			out[i] = ContainerResources{Requests: cs[i].Resources.Requests, Limits: cs[i].Resources.Limits,
				Sidecar: init && cs[i].RestartPolicy != nil && *cs[i].RestartPolicy == corev1.ContainerRestartPolicyAlways}
		}
		return out
	}
	r.Containers, r.InitContainers = collect(spec.Containers, false), collect(spec.InitContainers, true)
	return r
}

// sharePodResources returns the resources equal to r that were seen first,
// or r: the pods of one template have equal ones.
func sharePodResources(r *PodResources) *PodResources {
	var b strings.Builder
	share := func(l corev1.ResourceList) corev1.ResourceList {
		shared, key := shareResourcesKeyed(l)
		b.WriteString(key)
		b.WriteByte('|')
		return shared
	}
	for _, group := range []struct {
		tag string
		cs  []ContainerResources
	}{{"c", r.Containers}, {"i", r.InitContainers}} {
		for i := range group.cs {
			c := &group.cs[i]
			b.WriteString(group.tag)
			if c.Sidecar {
				b.WriteByte('s')
			}
			b.WriteByte(':')
			c.Requests, c.Limits = share(c.Requests), share(c.Limits)
		}
	}
	b.WriteString("o:")
	r.Overhead = share(r.Overhead)
	if r.Pod != nil {
		// Pod-level resources are rare: not shared, but part of the key.
		b.WriteString("p:")
		b.WriteString(resourcesKey(r.Pod.Requests))
		b.WriteByte('|')
		b.WriteString(resourcesKey(r.Pod.Limits))
	}
	return sharedPodResources.share(b.String(), r)
}
