package cluster

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type podMutator func(*corev1.Pod)

// newPod returns a Running pod in namespace "ns" with one container "main"
// and no requests; mutators shape the rest.
func newPod(name string, muts ...podMutator) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(t0),
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range muts {
		m(p)
	}
	return p
}

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func withRV(rv string) podMutator { return func(p *corev1.Pod) { p.ResourceVersion = rv } }

func onNode(n string) podMutator { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func withPhase(ph corev1.PodPhase) podMutator { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func withRequests(cpu, mem string) podMutator {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = rl(cpu, mem) }
}

func withLimits(cpu, mem string) podMutator {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = rl(cpu, mem) }
}

func withGPU(n int64) podMutator {
	return func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Requests[DefaultGPUResourceName] = *resource.NewQuantity(n, resource.DecimalSI)
		c.Resources.Limits[DefaultGPUResourceName] = *resource.NewQuantity(n, resource.DecimalSI)
	}
}

func withContainer(cpu, mem string) podMutator {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "c" + string(rune('0'+len(p.Spec.Containers))), Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)},
		})
	}
}

func withInit(cpu, mem string) podMutator {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: "init" + string(rune('0'+len(p.Spec.InitContainers))), Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)},
		})
	}
}

func withSidecar(cpu, mem string) podMutator {
	always := corev1.ContainerRestartPolicyAlways
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: "side" + string(rune('0'+len(p.Spec.InitContainers))), RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)},
		})
	}
}

func withOverhead(cpu, mem string) podMutator {
	return func(p *corev1.Pod) { p.Spec.Overhead = rl(cpu, mem) }
}

func withPriority(v int32) podMutator { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func withNodeSelector(sel map[string]string) podMutator {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = sel }
}

func withLabel(k, v string) podMutator {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

// trainerOf makes the pod a trainer of job: labelled, and controlled by the
// job's trainer ReplicaSet.
func trainerOf(job string) podMutator { return memberOf(job, v1.RoleTrainer) }

func memberOf(job string, role v1.Role) podMutator {
	return func(p *corev1.Pod) {
		withLabel(v1.LabelFor(role), job)(p)
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
			Name: v1.ReplicaSetName(job, role), UID: "rs-uid", Controller: &yes}}
	}
}

func createdAt(d time.Duration) podMutator {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}

func terminating() podMutator {
	return func(p *corev1.Pod) { now := metav1.NewTime(t0); p.DeletionTimestamp = &now }
}

// unschedulablePod makes p what the scheduler leaves behind when no node fits.
func unschedulablePod() podMutator {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 3 Insufficient cpu.",
		}}
	}
}

type nodeMutator func(*corev1.Node)

// newNode returns a Ready, schedulable node with the given allocatable.
func newNode(name, cpu, mem string, muts ...nodeMutator) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Status: corev1.NodeStatus{
			Allocatable: rl(cpu, mem),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range muts {
		m(n)
	}
	return n
}

func nodeRV(rv string) nodeMutator { return func(n *corev1.Node) { n.ResourceVersion = rv } }

func nodeGPU(g int64) nodeMutator {
	return func(n *corev1.Node) {
		n.Status.Allocatable[DefaultGPUResourceName] = *resource.NewQuantity(g, resource.DecimalSI)
	}
}

func notReady() nodeMutator {
	return func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
}

func cordoned() nodeMutator { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }
