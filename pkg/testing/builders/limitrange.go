package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LimitRangeOption changes one thing of a LimitRange being built.
type LimitRangeOption func(*corev1.LimitRange)

// LimitRange returns the LimitRange name of namespace with no items;
// options add them.
func LimitRange(name, namespace string, opts ...LimitRangeOption) *corev1.LimitRange {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	for _, o := range opts {
		o(lr)
	}
	return lr
}

// ContainerDefaults adds a Container-type item with these default limits
// and default requests (name, quantity pairs, as ResourceList; nil: none).
func ContainerDefaults(limits, requests []string) LimitRangeOption {
	return func(lr *corev1.LimitRange) {
		it := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}
		if limits != nil {
			it.Default = ResourceList(limits...)
		}
		if requests != nil {
			it.DefaultRequest = ResourceList(requests...)
		}
		lr.Spec.Limits = append(lr.Spec.Limits, it)
	}
}
