package experiment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

func TestNodeKinds(t *testing.T) {
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("18")}}}
	}
	pod := func(node string, labels map[string]string, size PodSize) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: size.resources()}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	web := map[string]string{WebLabel: WebName}
	trainer := map[string]string{v1.LabelTrainer: "job-01"}
	pserver := map[string]string{v1.LabelPserver: "job-01"}
	deleting := pod("a", trainer, TrainerSize)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	nodes := []*corev1.Node{node("a"), node("b"), node("c"), node("d")}
	pods := []*corev1.Pod{
		pod("a", web, WebSize), pod("a", web, WebSize), pod("a", web, WebSize), pod("a", trainer, TrainerSize), deleting,
		pod("b", web, WebSize), pod("b", web, WebSize), pod("b", web, WebSize), pod("b", trainer, TrainerSize),
		pod("c", pserver, PserverSize), pod("c", trainer, TrainerSize), pod("c", trainer, TrainerSize),
		pod("", trainer, TrainerSize), // not bound
	}
	assert.Equal(t, "3w+1t (4 free) ×2, 2t+1p (4 free) ×1, empty (18 free) ×1", nodeKinds(nodes, pods, 8))
	assert.Equal(t, "3w+1t (4 free) ×2, … 2 more kinds", nodeKinds(nodes, pods, 1))

	// The room for trainers leaves the trainers out: a and b keep the 9
	// CPU three web pods leave, c the 14 of a pserver, d all of its 18.
	for _, n := range nodes {
		n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("100Gi")
		n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
	}
	rooms, held := trainerRooms(nodes, pods, nil)
	assert.Equal(t, []Room{
		{Free: NodeShape{CPUMilli: 9000, MemMiB: 94 << 10, Pods: 107}, Nodes: 2},
		{Free: NodeShape{CPUMilli: 14000, MemMiB: 95 << 10, Pods: 109}, Nodes: 1},
		{Free: NodeShape{CPUMilli: 18000, MemMiB: 100 << 10, Pods: 110}, Nodes: 1},
	}, rooms)
	assert.Equal(t, int64(2*9000+4000), held)
}
