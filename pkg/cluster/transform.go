package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// TransformPod is a cache.TransformFunc for the shared pod informer. At 150,000
// pods the informer cache dominates the controller's memory, and most of a pod
// (env, volumes, probes, managed fields, annotations such as
// last-applied-configuration) is never read by EDL, so the cache keeps only:
//
//   - metadata: name, namespace, uid, resourceVersion, creationTimestamp,
//     deletionTimestamp, all labels, ownerReferences, and on job pods the
//     pod-deletion-cost annotation the controller maintains. All labels, not just
//     paddle-job: they are small, and listers with label selectors (the
//     controller's pod lister shares this cache) must keep working.
//     OwnerReferences let the controller resolve a pod's ReplicaSet by UID.
//   - spec: nodeName, priority, priorityClassName, overhead, pod-level
//     resources, and of each container and init container its name and
//     resources; init containers also keep restartPolicy, which marks the
//     sidecars that the scheduler adds to the running sum. While the pod is
//     not bound, also what restricts where it may run: nodeSelector, the
//     required node affinity, tolerations, and preemptionPolicy; and its
//     schedulingGates, which the controller removes when it admits a job.
//   - status: phase, nominatedNodeName (a preemption under way) and the
//     PodScheduled condition (to see Unschedulable).
//
// Pods of EDL jobs (labelled paddle-job, paddle-job-pserver or
// paddle-job-master) keep their whole status: the controller reads their
// container statuses (terminated exit codes, restartCount) to judge job
// success and failure. Other pods' container statuses are dropped.
//
// cmd/edl must install it before the informer starts:
//
//	podInformer.Informer().SetTransform(cluster.TransformPod)
//
// It is idempotent, never fails for a pod, and passes anything that is not a
// *corev1.Pod (for example a cache.DeletedFinalStateUnknown) through
// unchanged. It builds a new object from the old one's parts, which client-go
// permits since 1.27 because the transform sees each object first.
func TransformPod(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp,
			DeletionTimestamp: pod.DeletionTimestamp,
			Labels:            pod.Labels,
			OwnerReferences:   pod.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			NodeName:          pod.Spec.NodeName,
			Priority:          pod.Spec.Priority,
			PriorityClassName: pod.Spec.PriorityClassName,
			Overhead:          pod.Spec.Overhead,
			Resources:         pod.Spec.Resources,
			Containers:        stripContainers(pod.Spec.Containers, false),
			InitContainers:    stripContainers(pod.Spec.InitContainers, true),
		},
	}
	if pod.Spec.NodeName == "" {
		// Where a pod may run matters while it waits for a node, and only
		// then: the next version, bound, drops it again.
		out.Spec.NodeSelector = pod.Spec.NodeSelector
		out.Spec.Tolerations = pod.Spec.Tolerations
		out.Spec.PreemptionPolicy = pod.Spec.PreemptionPolicy
		out.Spec.SchedulingGates = pod.Spec.SchedulingGates
		if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
		}
	}
	if _, _, ok := v1.JobOf(pod.Labels); ok {
		out.Status = pod.Status
		if cost, ok := pod.Annotations[v1.AnnotationDeletionCost]; ok {
			out.Annotations = map[string]string{v1.AnnotationDeletionCost: cost}
		}
		return out, nil
	}
	out.Status.Phase = pod.Status.Phase
	out.Status.NominatedNodeName = pod.Status.NominatedNodeName
	for i := range pod.Status.Conditions {
		if c := pod.Status.Conditions[i]; c.Type == corev1.PodScheduled {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason}}
			break
		}
	}
	return out, nil
}

func stripContainers(cs []corev1.Container, keepRestartPolicy bool) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i].Name = cs[i].Name
		out[i].Resources = corev1.ResourceRequirements{Requests: cs[i].Resources.Requests, Limits: cs[i].Resources.Limits}
		if keepRestartPolicy {
			out[i].RestartPolicy = cs[i].RestartPolicy
		}
	}
	return out
}

// TransformNode is an optional cache.TransformFunc for the shared node
// informer. It drops only what no EDL component reads and what is big on real
// nodes: managedFields and status.images (the list of every image on the
// node). Install it with nodeInformer.Informer().SetTransform before start.
func TransformNode(obj interface{}) (interface{}, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.ManagedFields = nil
	node.Status.Images = nil
	return node, nil
}
