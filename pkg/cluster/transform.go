package cluster

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// TransformPod is a cache.TransformFunc for the shared pod informer: it
// turns each *corev1.Pod into the *Pod that EDL keeps of it. At 150,000 pods
// the informer cache dominates the controller's memory, and most of a pod
// (env, volumes, probes, managed fields, annotations such as
// last-applied-configuration, most of the status) is never read by EDL, so
// the cache keeps only:
//
//   - metadata: name, namespace, uid, resourceVersion, creationTimestamp,
//     deletionTimestamp; and of the pods of EDL jobs (labelled paddle-job,
//     paddle-job-pserver or paddle-job-master) all labels, ownerReferences
//     (the controller resolves a pod's ReplicaSet by UID, the tracker checks
//     that a labelled pod is the job's) and the pod-deletion-cost
//     annotation the controller maintains. Other pods keep no labels: EDL
//     selects pods by its job index, never by a label selector.
//   - spec: nodeName, priority, priorityClassName, and what the pod's
//     requests and limits are computed from (of each container and init
//     container its resources, whether an init container is a sidecar,
//     overhead, pod-level resources). While the pod is not bound, also
//     what restricts where it may run (nodeSelector, the required node
//     affinity and tolerations, as a Placement), whether it may preempt,
//     and its scheduling gates, which the controller removes when it admits
//     a job.
//   - status: phase, nominatedNodeName (a preemption under way) and the
//     PodScheduled condition while it is not True (to see Unschedulable).
//     Of a job's pods also what the controller judges the job by: whether
//     the Ready condition is True, the PodScheduled condition's message,
//     and of each container that stopped or restarted its name,
//     restartCount, the exit code and reason of its current and last
//     termination, and the reason it waits to start again
//     (CrashLoopBackOff). A condition or container status that is left out
//     reads as what it would have said: not ready, scheduled, never
//     stopped.
//
// Job pods with equal labels, and pods with equal resources, share one map
// or struct of them, the pods of a ReplicaSet their owner references, and
// equal strings (namespaces, node names) one copy (see internTable): the
// cached pods are read-only.
//
// cmd/edl must install it before the informer starts:
//
//	podInformer.Informer().SetTransform(cluster.TransformPod)
//
// It is idempotent, never fails for a pod, and passes anything that is not a
// *corev1.Pod (a *Pod, a cache.DeletedFinalStateUnknown) through unchanged.
func TransformPod(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return slimPod(pod), nil
}

// slimPod builds the *Pod that TransformPod keeps of pod.
func slimPod(pod *corev1.Pod) *Pod {
	out := &Pod{
		Name:              pod.Name,
		Namespace:         shareString(pod.Namespace),
		UID:               pod.UID,
		ResourceVersion:   pod.ResourceVersion,
		CreationTimestamp: pod.CreationTimestamp,
		DeletionTimestamp: pod.DeletionTimestamp,
		NodeName:          shareString(pod.Spec.NodeName),
		PriorityClassName: shareString(pod.Spec.PriorityClassName),
		Resources:         sharePodResources(podResources(&pod.Spec)),
		Phase:             corev1.PodPhase(shareString(string(pod.Status.Phase))),
		NominatedNodeName: shareString(pod.Status.NominatedNodeName),
	}
	if pod.Spec.Priority != nil {
		out.Priority = *pod.Spec.Priority
	}
	if pod.Spec.NodeName == "" {
		// Where a pod may run matters while it waits for a node, and only
		// then: the next version, bound, drops it again.
		s := &Scheduling{Placement: snapshot.PlacementOf(&pod.Spec),
			PreemptNever: pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever}
		for _, g := range pod.Spec.SchedulingGates {
			s.Gates = append(s.Gates, shareString(g.Name))
		}
		out.Scheduling = s
	}
	_, _, job := v1.JobOf(pod.Labels)
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		switch {
		case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
			out.Ready = job
		case c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue:
			out.Scheduled = &Condition{Status: c.Status, Reason: shareString(c.Reason)}
			if job {
				out.Scheduled.Message = c.Message
			}
		}
	}
	if !job {
		// Only a job's pods are the controller's: the others need no
		// labels (the tracker reads just EDL's, to see they are absent),
		// owners, annotations or container statuses.
		return out
	}
	out.Labels = shareLabels(pod.Labels)
	out.OwnerReferences = shareOwners(pod.OwnerReferences)
	out.DeletionCost = pod.Annotations[v1.AnnotationDeletionCost]
	out.MarkedForRemoval = pod.Annotations[v1.AnnotationMarkedForRemoval]
	out.HostsVersion = pod.Annotations[v1.AnnotationHostsVersion]
	out.PodIP = pod.Status.PodIP
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		kept := ContainerStatus{Name: shareString(cs.Name), RestartCount: cs.RestartCount,
			Terminated: exitOnly(cs.State.Terminated), LastTerminated: exitOnly(cs.LastTerminationState.Terminated)}
		if w := cs.State.Waiting; w != nil && kept.LastTerminated != nil {
			// Waiting to start again after it exited: CrashLoopBackOff.
			kept.Waiting = shareString(w.Reason)
		}
		if r := cs.State.Running; r != nil && (out.RunningSince == nil || r.StartedAt.After(out.RunningSince.Time)) {
			out.RunningSince = r.StartedAt.DeepCopy()
		}
		if kept.RestartCount == 0 && kept.Terminated == nil && kept.LastTerminated == nil {
			continue // nothing to read: a container that never stopped
		}
		out.ContainerStatuses = append(out.ContainerStatuses, kept)
	}
	return out
}

// exitOnly keeps a termination's exit code, reason and times, and the end
// of a failure's message.
func exitOnly(t *corev1.ContainerStateTerminated) *Termination {
	if t == nil {
		return nil
	}
	out := &Termination{ExitCode: t.ExitCode, Reason: shareString(t.Reason), StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
	if t.ExitCode != 0 {
		out.Message = messageTail(t.Message)
	}
	return out
}

// The end of a failure's message kept: a training's traceback ends with
// the line that says what went wrong.
const (
	messageLines = 8
	messageBytes = 1024
)

// messageTail is the last messageLines lines of a termination message, at
// most messageBytes of them, with blank lines dropped.
func messageTail(msg string) string {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	kept := make([]string, 0, messageLines)
	size := 0
	for i := len(lines) - 1; i >= 0 && len(kept) < messageLines; i-- {
		l := strings.TrimRight(lines[i], " \t\r")
		if l == "" {
			continue
		}
		if size+len(l)+1 > messageBytes {
			if len(kept) == 0 {
				kept = append(kept, l[len(l)-messageBytes+1:])
			}
			break
		}
		size += len(l) + 1
		kept = append(kept, l)
	}
	slices.Reverse(kept)
	return strings.Join(kept, "\n")
}

func stripContainers(cs []corev1.Container, keepRestartPolicy bool) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i].Name = shareString(cs[i].Name)
		out[i].Resources = corev1.ResourceRequirements{Requests: shareResources(cs[i].Resources.Requests), Limits: shareResources(cs[i].Resources.Limits)}
		if keepRestartPolicy {
			out[i].RestartPolicy = cs[i].RestartPolicy
		}
	}
	return out
}

// TransformNode is a cache.TransformFunc for the shared node informer. It
// keeps what the tracker reads: name, uid, resourceVersion, labels (for
// node selectors and affinity), spec.unschedulable, the taints,
// status.allocatable and the Ready condition's status; the rest of a node —
// managed fields, status.images (every image on it), addresses, system
// info, the other conditions and their messages — no EDL component reads.
// Labels are shared between nodes that have equal ones. Install it with
// nodeInformer.Informer().SetTransform before start.
func TransformNode(obj interface{}) (interface{}, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		TypeMeta: node.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Name,
			UID:               node.UID,
			ResourceVersion:   node.ResourceVersion,
			CreationTimestamp: node.CreationTimestamp,
			DeletionTimestamp: node.DeletionTimestamp,
			Labels:            node.Labels,
		},
		Spec:   corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable, Taints: node.Spec.Taints},
		Status: corev1.NodeStatus{Allocatable: shareResources(node.Status.Allocatable)},
	}
	for i := range node.Status.Conditions {
		if c := node.Status.Conditions[i]; c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	return out, nil
}

// TransformReplicaSet is a cache.TransformFunc for the shared ReplicaSet
// informer, which watches every ReplicaSet of the cluster (each Deployment
// keeps ten old ones) while EDL reads only a TrainingJob's own. It keeps:
//
//   - of every ReplicaSet: name, namespace, uid, resourceVersion,
//     generation, creation and deletion timestamps, labels, ownerReferences
//     (the controller maps a ReplicaSet to its job, and tells a foreign one
//     in a job's way, by them) and spec.replicas;
//   - of a ReplicaSet a TrainingJob controls, also its annotations (the
//     controller detects a drifted template by the hash it keeps there)
//     and of its pod template what the autoscaler reads to plan new
//     trainers: the containers' and init containers' names and resources,
//     the init containers' restartPolicy, overhead, pod-level resources,
//     priorityClassName, and where the pods may run (nodeSelector, the
//     required node affinity, tolerations); and its status conditions (the
//     controller reports pods the API server refuses by ReplicaFailure).
//
// Neither the controller nor the autoscaler ever writes a cached ReplicaSet
// back: they patch replicas and the template by JSON patch.
func TransformReplicaSet(obj interface{}) (interface{}, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return obj, nil
	}
	out := &appsv1.ReplicaSet{
		TypeMeta: rs.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              rs.Name,
			Namespace:         rs.Namespace,
			UID:               rs.UID,
			ResourceVersion:   rs.ResourceVersion,
			Generation:        rs.Generation,
			CreationTimestamp: rs.CreationTimestamp,
			DeletionTimestamp: rs.DeletionTimestamp,
			Labels:            rs.Labels,
			OwnerReferences:   rs.OwnerReferences,
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: rs.Spec.Replicas},
	}
	if controlledByAJob(&rs.ObjectMeta) {
		out.Annotations = rs.Annotations
		// The controller reports the pods the API server refuses the
		// ReplicaSet controller from its ReplicaFailure condition.
		out.Status.Conditions = rs.Status.Conditions
		t := &rs.Spec.Template.Spec
		spec := &out.Spec.Template.Spec
		spec.Containers = stripContainers(t.Containers, false)
		spec.InitContainers = stripContainers(t.InitContainers, true)
		spec.Overhead, spec.Resources, spec.PriorityClassName = t.Overhead, t.Resources, t.PriorityClassName
		spec.NodeSelector, spec.Tolerations, spec.SchedulingGates = t.NodeSelector, t.Tolerations, t.SchedulingGates
		// The trainers' account, which the job's progress Role is bound to.
		spec.ServiceAccountName = t.ServiceAccountName
		if a := t.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
		}
	}
	return out, nil
}

// TransformService is a cache.TransformFunc for the shared Service informer,
// which watches every Service of the cluster while EDL reads only a
// TrainingJob's own. A Service a TrainingJob controls is kept whole but for
// managedFields, as the controller updates it from the cached copy (the API
// server keeps the managed fields of an update that omits them); of any
// other only what tells it apart: name, namespace, uid, resourceVersion,
// timestamps, labels and ownerReferences.
func TransformService(obj interface{}) (interface{}, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	if controlledByAJob(&svc.ObjectMeta) {
		svc.ManagedFields = nil
		return svc, nil
	}
	return &corev1.Service{
		TypeMeta: svc.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              svc.Name,
			Namespace:         svc.Namespace,
			UID:               svc.UID,
			ResourceVersion:   svc.ResourceVersion,
			CreationTimestamp: svc.CreationTimestamp,
			DeletionTimestamp: svc.DeletionTimestamp,
			Labels:            svc.Labels,
			OwnerReferences:   svc.OwnerReferences,
		},
	}, nil
}

// controlledByAJob reports whether the object's controller is a TrainingJob.
func controlledByAJob(m *metav1.ObjectMeta) bool {
	ref := metav1.GetControllerOfNoCopy(m)
	return ref != nil && ref.Kind == "TrainingJob" && strings.HasPrefix(ref.APIVersion, v1.SchemeGroupVersion.Group+"/")
}
