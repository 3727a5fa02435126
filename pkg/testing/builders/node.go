package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOption changes one thing of a node being built.
type NodeOption func(*corev1.Node)

// Node returns a Ready, schedulable node with cpu and mem allocatable.
func Node(name, cpu, mem string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Status: corev1.NodeStatus{
			Allocatable: CPUMemory(cpu, mem),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// NodeRV sets the resourceVersion.
func NodeRV(rv string) NodeOption { return func(n *corev1.Node) { n.ResourceVersion = rv } }

// NodeGPU adds g GPUs (GPUResourceName) to the allocatable.
func NodeGPU(g int64) NodeOption {
	return func(n *corev1.Node) {
		n.Status.Allocatable[GPUResourceName] = *resource.NewQuantity(g, resource.DecimalSI)
	}
}

// NodePods sets the pods the node takes, as kubelets report it.
func NodePods(count int64) NodeOption {
	return func(n *corev1.Node) {
		n.Status.Allocatable[corev1.ResourcePods] = *resource.NewQuantity(count, resource.DecimalSI)
	}
}

// WithCapacity sets the capacity to the allocatable.
func WithCapacity() NodeOption {
	return func(n *corev1.Node) { n.Status.Capacity = n.Status.Allocatable.DeepCopy() }
}

// NodeNotReady makes the node's Ready condition False.
func NodeNotReady() NodeOption {
	return func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
}

// Cordoned makes the node unschedulable.
func Cordoned() NodeOption { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }
