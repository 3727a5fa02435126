package cluster

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/paddlepaddle/edl/pkg/cluster/snapshot"
)

// PodRequest is the effective request of a pod with this spec as the
// scheduler counts it, in a Snapshot's units (memory rounded up to MiB),
// with the tracker's GPU resource names. The autoscaler prices one more
// trainer with it, from the trainer ReplicaSet's pod template.
func (t *Tracker) PodRequest(spec *corev1.PodSpec) snapshot.Resources {
	req, _ := t.PodRequestAndLimits(spec)
	return req
}

// PodRequestAndLimits is PodRequest and the pod's effective limits alike.
func (t *Tracker) PodRequestAndLimits(spec *corev1.PodSpec) (req, lim snapshot.Resources) {
	r, l := t.reader.podRequestsAndLimits(podResources(spec))
	return r.ceilResources(), l.ceilResources()
}
