package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QuotaOption changes one thing of a ResourceQuota being built.
type QuotaOption func(*corev1.ResourceQuota)

// Quota returns the ResourceQuota name of namespace with the hard limits
// hard (name, quantity pairs, as ResourceList) and no status: what a test
// creates through the API, or, with Used, what an informer delivers.
func Quota(name, namespace string, hard []string, opts ...QuotaOption) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       corev1.ResourceQuotaSpec{Hard: ResourceList(hard...)},
	}
	for _, o := range opts {
		o(q)
	}
	return q
}

// Used sets status.used (name, quantity pairs).
func Used(pairs ...string) QuotaOption {
	return func(q *corev1.ResourceQuota) { q.Status.Used = ResourceList(pairs...) }
}

// Scopes sets spec.scopes.
func Scopes(scopes ...corev1.ResourceQuotaScope) QuotaOption {
	return func(q *corev1.ResourceQuota) { q.Spec.Scopes = scopes }
}

// QuotaRV sets the resourceVersion.
func QuotaRV(rv string) QuotaOption { return func(q *corev1.ResourceQuota) { q.ResourceVersion = rv } }
