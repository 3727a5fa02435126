package builders

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// ReplicaSetOption changes one thing of a ReplicaSet.
type ReplicaSetOption func(*appsv1.ReplicaSet)

// ReplicaSet applies opts to rs — typically the ReplicaSet the controller
// builds for a role (controller.ReplicaSet) — and returns it.
func ReplicaSet(rs *appsv1.ReplicaSet, opts ...ReplicaSetOption) *appsv1.ReplicaSet {
	for _, o := range opts {
		o(rs)
	}
	return rs
}

// NoOwner removes the owner references.
func NoOwner() ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil }
}

// OwnerUID sets the first owner reference's UID.
func OwnerUID(uid types.UID) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.OwnerReferences[0].UID = uid }
}

// ControlledBy makes an object of apiVersion and kind named name the
// controller.
func ControlledBy(apiVersion, kind, name string) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name)},
			schema.FromAPIVersionAndKind(apiVersion, kind))}
	}
}

// ReplicaSetRV sets the resourceVersion.
func ReplicaSetRV(rv string) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.ResourceVersion = rv }
}

// ReplicaSetUID sets the UID.
func ReplicaSetUID(uid types.UID) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.UID = uid }
}

// Gated adds the scheduling gate name to the pod template.
func Gated(name string) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.Spec.Template.Spec.SchedulingGates = append(rs.Spec.Template.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	}
}

// TemplatePod is a pod rs creates: its template's labels and spec, in its
// namespace, controlled by it; opts shape the rest (its phase is empty).
func TemplatePod(rs *appsv1.ReplicaSet, name string, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	return applyPod(p, opts)
}

// CreatedAt sets the creation time.
func CreatedAt(t metav1.Time) PodOption { return func(p *corev1.Pod) { p.CreationTimestamp = t } }

// LastScale puts the autoscaler's record of a scaling on the ReplicaSet
// (v1.AnnotationLastScale), as the patch of its replicas does.
func LastScale(r v1.ScaleRecord) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[v1.AnnotationLastScale] = v1.LastScaleAnnotation(r)
	}
}
