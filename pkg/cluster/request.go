package cluster

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

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

// AdmittedPodRequestAndLimits is PodRequestAndLimits of a pod made from spec
// in namespace, priced as the API server admits it: with the namespace's
// LimitRange defaults and the overhead of the RuntimeClass spec names
// (AdmittedPodSpec). A LimitRange or RuntimeClass the listers cannot read
// is left out, as without their informers.
func (t *Tracker) AdmittedPodRequestAndLimits(namespace string, spec *corev1.PodSpec) (req, lim snapshot.Resources) {
	return t.PodRequestAndLimits(t.admittedPodSpec(namespace, spec))
}

func (t *Tracker) admittedPodSpec(namespace string, spec *corev1.PodSpec) *corev1.PodSpec {
	var ranges []*corev1.LimitRange
	if t.limitRanges != nil {
		ranges, _ = t.limitRanges.LimitRanges(namespace).List(labels.Everything())
		// The LimitRanger plugin lists them unordered; a stable order keeps
		// the price of a template the same from one plan to the next.
		slices.SortFunc(ranges, func(a, b *corev1.LimitRange) int { return strings.Compare(a.Name, b.Name) })
	}
	var overhead corev1.ResourceList
	if t.runtimeClasses != nil && spec.RuntimeClassName != nil {
		if rc, err := t.runtimeClasses.Get(*spec.RuntimeClassName); err == nil && rc.Overhead != nil {
			overhead = rc.Overhead.PodFixed
		}
	}
	return AdmittedPodSpec(spec, ranges, overhead)
}

// AdmissionRefusal says why the API server will refuse every pod made from
// spec in namespace, of the PriorityClass priorityClass, as AdmissionRefusal
// does with the namespace's LimitRanges and the ResourceQuotas whose scopes
// match the pod (QuotaMatches); "" when it will not, and always without the
// LimitRange informer and the ResourceQuota informer.
func (t *Tracker) AdmissionRefusal(namespace string, spec *corev1.PodSpec, priorityClass string) string {
	admitted := t.admittedPodSpec(namespace, spec)
	var ranges []*corev1.LimitRange
	if t.limitRanges != nil {
		ranges, _ = t.limitRanges.LimitRanges(namespace).List(labels.Everything())
		slices.SortFunc(ranges, func(a, b *corev1.LimitRange) int { return strings.Compare(a.Name, b.Name) })
	}
	var quotas []*corev1.ResourceQuota
	if t.quotaLister != nil {
		all, _ := t.quotaLister.ResourceQuotas(namespace).List(labels.Everything())
		for _, q := range all {
			if QuotaMatches(q, admitted, priorityClass) {
				quotas = append(quotas, q)
			}
		}
		slices.SortFunc(quotas, func(a, b *corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	}
	return AdmissionRefusal(admitted, ranges, quotas)
}

// UncountedQuotaShort is UncountedQuotaShort with namespace's ResourceQuotas,
// each role's template as admitted (the RolePods' Spec is the template) and
// the tracker's GPU resources; "" without the ResourceQuota informer.
func (t *Tracker) UncountedQuotaShort(namespace string, pods []RolePods, priorityClass string) (string, bool) {
	if t.quotaLister == nil {
		return "", false
	}
	quotas, _ := t.quotaLister.ResourceQuotas(namespace).List(labels.Everything())
	slices.SortFunc(quotas, func(a, b *corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	admitted := make([]RolePods, len(pods))
	for i, rp := range pods {
		admitted[i] = RolePods{Role: rp.Role, Count: rp.Count, Spec: t.admittedPodSpec(namespace, rp.Spec)}
	}
	return UncountedQuotaShort(quotas, admitted, priorityClass, t.reader.gpuNames)
}
