package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AdmittedPodSpec is spec as the API server admits a pod made from it in a
// namespace with these LimitRanges, naming a RuntimeClass with this pod
// overhead (nil: none). It mirrors the admission chain:
//
//   - pod defaulting first: a container limit without a request makes the
//     request equal to the limit;
//   - the LimitRanger plugin: for each Container-type item, a resource the
//     container has no limit for takes the item's default, one it has no
//     request for its defaultRequest (the API server fills a LimitRange's
//     defaultRequest from its default, so this does too); app, init and
//     sidecar containers alike, the first LimitRange to name a resource wins;
//   - the RuntimeClass plugin: spec.overhead is the RuntimeClass's podFixed
//     overhead when the template sets none.
//
// With no LimitRange and no overhead spec itself is returned, unchanged, so
// that pricing without them stays what it was; otherwise a copy.
func AdmittedPodSpec(spec *corev1.PodSpec, ranges []*corev1.LimitRange, overhead corev1.ResourceList) *corev1.PodSpec {
	var items []corev1.LimitRangeItem
	for _, lr := range ranges {
		for _, it := range lr.Spec.Limits {
			if it.Type == corev1.LimitTypeContainer && (len(it.Default) > 0 || len(it.DefaultRequest) > 0) {
				items = append(items, it)
			}
		}
	}
	setOverhead := len(overhead) > 0 && spec.Overhead == nil
	if len(items) == 0 && !setOverhead {
		return spec
	}
	out := spec.DeepCopy()
	if setOverhead {
		out.Overhead = overhead.DeepCopy()
	}
	if len(items) == 0 {
		return out
	}
	for i := range out.InitContainers {
		defaultContainer(&out.InitContainers[i].Resources, items)
	}
	for i := range out.Containers {
		defaultContainer(&out.Containers[i].Resources, items)
	}
	return out
}

// defaultContainer applies pod defaulting and the LimitRange items' defaults
// to one container's resources.
func defaultContainer(r *corev1.ResourceRequirements, items []corev1.LimitRangeItem) {
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			setResource(&r.Requests, name, q)
		}
	}
	for _, it := range items {
		for name, q := range it.Default {
			if _, ok := r.Limits[name]; !ok {
				setResource(&r.Limits, name, q)
			}
		}
		for name, q := range it.DefaultRequest {
			if _, ok := r.Requests[name]; !ok {
				setResource(&r.Requests, name, q)
			}
		}
		// The API server defaults a LimitRange's defaultRequest from its
		// default: a resource with a default and no defaultRequest is
		// requested at the default.
		for name, q := range it.Default {
			if _, ok := r.Requests[name]; !ok {
				setResource(&r.Requests, name, q)
			}
		}
	}
}

func setResource(l *corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if *l == nil {
		*l = corev1.ResourceList{}
	}
	(*l)[name] = q.DeepCopy()
}
