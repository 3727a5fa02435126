package builders

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// PodOption changes one thing of a pod being built.
type PodOption func(*corev1.Pod)

// Pod returns a Running pod in namespace "ns" with one container "main"
// and no requests, created at T0; options shape the rest.
func Pod(name string, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(T0),
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	return applyPod(p, opts)
}

// RolePod returns a Pending pod of a job's role, in the job's namespace,
// labelled as its ReplicaSet's pods are, with one container named for the
// role running the job's image and that container's status.
func RolePod(job *v1.TrainingJob, role v1.Role, name string, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: job.Namespace, ResourceVersion: "1",
			Labels: map[string]string{v1.LabelFor(role): job.Name},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: role.Name(), Image: job.Spec.Image}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: role.Name()}},
		},
	}
	return applyPod(p, opts)
}

func applyPod(p *corev1.Pod, opts []PodOption) *corev1.Pod {
	for _, o := range opts {
		o(p)
	}
	return p
}

// PodRV sets the resourceVersion.
func PodRV(rv string) PodOption { return func(p *corev1.Pod) { p.ResourceVersion = rv } }

// OnNode binds the pod to node.
func OnNode(node string) PodOption { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

// Phase sets status.phase.
func Phase(ph corev1.PodPhase) PodOption { return func(p *corev1.Pod) { p.Status.Phase = ph } }

// Requests sets the first container's cpu and memory requests.
func Requests(cpu, mem string) PodOption {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = CPUMemory(cpu, mem) }
}

// Limits sets the first container's cpu and memory limits.
func Limits(cpu, mem string) PodOption {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = CPUMemory(cpu, mem) }
}

// GPU requests and limits n GPUs (GPUResourceName) in the first container.
func GPU(n int64) PodOption { return Extended(GPUResourceName, n) }

// Extended requests and limits n of the extended resource name in the first
// container.
func Extended(name corev1.ResourceName, n int64) PodOption {
	return func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Requests[name] = *resource.NewQuantity(n, resource.DecimalSI)
		c.Resources.Limits[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
}

// Container adds an app container requesting cpu and mem.
func Container(cpu, mem string) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "c" + strconv.Itoa(len(p.Spec.Containers)), Resources: corev1.ResourceRequirements{Requests: CPUMemory(cpu, mem)},
		})
	}
}

// Init adds an init container requesting cpu and mem.
func Init(cpu, mem string) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: "init" + strconv.Itoa(len(p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: CPUMemory(cpu, mem)},
		})
	}
}

// Sidecar adds a restartable init container (a sidecar) requesting cpu and
// mem.
func Sidecar(cpu, mem string) PodOption {
	always := corev1.ContainerRestartPolicyAlways
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: "side" + strconv.Itoa(len(p.Spec.InitContainers)), RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: CPUMemory(cpu, mem)},
		})
	}
}

// Overhead sets the pod overhead.
func Overhead(cpu, mem string) PodOption {
	return func(p *corev1.Pod) { p.Spec.Overhead = CPUMemory(cpu, mem) }
}

// Priority sets spec.priority, as the Priority admission plugin resolves it.
func Priority(v int32) PodOption { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

// NodeSelector sets spec.nodeSelector.
func NodeSelector(sel map[string]string) PodOption {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = sel }
}

// Label sets one label.
func Label(k, v string) PodOption {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

// TrainerOf makes the pod a trainer of job: labelled, and controlled by the
// job's trainer ReplicaSet.
func TrainerOf(job string) PodOption { return MemberOf(job, v1.RoleTrainer) }

// MemberOf makes the pod one of job's role: labelled, and controlled by the
// role's ReplicaSet (UID "rs-uid").
func MemberOf(job string, role v1.Role) PodOption {
	return func(p *corev1.Pod) {
		Label(v1.LabelFor(role), job)(p)
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
			Name: v1.ReplicaSetName(job, role), UID: "rs-uid", Controller: &yes}}
	}
}

// CreatedAfter sets the creation time to T0 plus d.
func CreatedAfter(d time.Duration) PodOption {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(T0.Add(d)) }
}

// Terminating marks the pod deleted at T0: it terminates.
func Terminating() PodOption {
	return func(p *corev1.Pod) { at := metav1.NewTime(T0); p.DeletionTimestamp = &at }
}

// Unbound makes the pod Pending on no node.
func Unbound() PodOption {
	return func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "", corev1.PodPending }
}

// Unschedulable adds the condition kube-scheduler sets when no node fits
// the pod, with message.
func Unschedulable(message string) PodOption {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message,
		})
	}
}

// Running binds the pod to node-1, Running, its first container running.
func Running() PodOption {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		firstStatus(p).State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
}

// Ready is Running and ready.
func Ready() PodOption {
	return func(p *corev1.Pod) {
		Running()(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		firstStatus(p).Ready = true
	}
}

// NotReady is Running and not ready.
func NotReady() PodOption {
	return func(p *corev1.Pod) {
		Running()(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}

// Exited binds the pod to node-1 with its first container's current state
// terminated with code.
func Exited(code int32) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		firstStatus(p).State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}

// LastExited sets the first container's previous run terminated with code.
func LastExited(code int32) PodOption {
	return func(p *corev1.Pod) {
		firstStatus(p).LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}

// LastRun sets the first container's previous run: started, ended with
// code at finished, with its termination message.
func LastRun(code int32, started, finished time.Time, message string) PodOption {
	return func(p *corev1.Pod) {
		firstStatus(p).LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished), Message: message}}
	}
}

// RunningSince is Running, the first container's current run started at.
func RunningSince(at time.Time) PodOption {
	return func(p *corev1.Pod) {
		Running()(p)
		firstStatus(p).State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
	}
}

// Restarts sets the first container's restart count.
func Restarts(n int32) PodOption {
	return func(p *corev1.Pod) { firstStatus(p).RestartCount = n }
}

// firstStatus is the first container's status, added if the pod has none.
func firstStatus(p *corev1.Pod) *corev1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name}}
	}
	return &p.Status.ContainerStatuses[0]
}

// NewPod returns a pod to create through the API: namespace empty (the
// client's), one container "c" of image busybox with no requests; opts
// shape the rest.
func NewPod(name string, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	return applyPod(p, opts)
}

// PriorityClass sets spec.priorityClassName.
func PriorityClass(name string) PodOption {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = name }
}
