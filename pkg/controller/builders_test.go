package controller

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

const testNamespace = "team-a"

// ---------------------------------------------------------------------------
// TrainingJob builder

type jobMutator func(*v1.TrainingJob)

// newJob builds a plain (not fault-tolerant) job with 2..6 trainers and one
// pserver; mutators change it.
func newJob(name string, muts ...jobMutator) *v1.TrainingJob {
	job := &v1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  testNamespace,
			UID:        types.UID("uid-" + name),
			Generation: 1,
		},
		Spec: v1.TrainingJobSpec{
			Image:   "paddlepaddle/paddlecloud-job",
			Trainer: v1.TrainerSpec{MinInstance: 2, MaxInstance: 6, Entrypoint: "python train.py", Workspace: "/workspace"},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1},
		},
	}
	for _, m := range muts {
		m(job)
	}
	return job
}

func withTrainers(minimum, maximum int32) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.MinInstance, j.Spec.Trainer.MaxInstance = minimum, maximum }
}

func withPservers(n int32) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Pserver.MinInstance, j.Spec.Pserver.MaxInstance = n, n }
}

func faultTolerant() jobMutator { return func(j *v1.TrainingJob) { j.Spec.FaultTolerant = true } }

func withImage(image string) jobMutator { return func(j *v1.TrainingJob) { j.Spec.Image = image } }

func withPorts(port, dense, sparse int32) jobMutator {
	return func(j *v1.TrainingJob) {
		j.Spec.Port, j.Spec.PortsNum, j.Spec.PortsNumForSparse = &port, &dense, &sparse
	}
}

func withMaxRestarts(n int32) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.MaxRestarts = &n }
}

func withTrainerResources(r corev1.ResourceRequirements) jobMutator {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.Resources = r }
}

func withSpec(f func(*v1.TrainingJobSpec)) jobMutator { return func(j *v1.TrainingJob) { f(&j.Spec) } }

func withGeneration(g int64) jobMutator { return func(j *v1.TrainingJob) { j.Generation = g } }

func withPhase(phase v1.TrainingJobPhase, reason, message string) jobMutator {
	return func(j *v1.TrainingJob) {
		j.Status.Phase, j.Status.Reason, j.Status.Message = phase, reason, message
	}
}

func withCondition(kind string, status metav1.ConditionStatus, reason string) jobMutator {
	return func(j *v1.TrainingJob) {
		j.Status.Conditions = append(j.Status.Conditions, metav1.Condition{
			Type: kind, Status: status, Reason: reason, Message: reason,
			LastTransitionTime: metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
		})
	}
}

func resourceList(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// ---------------------------------------------------------------------------
// Pod builder

type podMutator func(*corev1.Pod)

// newPod builds a pending pod of a job's role, labelled as its ReplicaSet's
// pods are.
func newPod(job *v1.TrainingJob, role v1.Role, name string, muts ...podMutator) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelFor(role): job.Name},
			ResourceVersion: "1",
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: role.Name(), Image: job.Spec.Image}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: role.Name()}},
		},
	}
	for _, m := range muts {
		m(pod)
	}
	return pod
}

func running() podMutator {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
}

func ready() podMutator {
	return func(p *corev1.Pod) {
		running()(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		p.Status.ContainerStatuses[0].Ready = true
	}
}

func notReady() podMutator {
	return func(p *corev1.Pod) {
		running()(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}

// exited: the container's current state is terminated with code.
func exited(code int32) podMutator {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}

// lastExited: the container's previous run terminated with code.
func lastExited(code int32) podMutator {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
}

func restarts(n int32) podMutator {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = n }
}

func deleting() podMutator {
	return func(p *corev1.Pod) {
		now := metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		p.DeletionTimestamp = &now
	}
}

func podPhase(phase corev1.PodPhase) podMutator {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

func unschedulable(message string) podMutator {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message,
		})
	}
}

func onNode(node string) podMutator { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func withPodRV(rv string) podMutator { return func(p *corev1.Pod) { p.ResourceVersion = rv } }

// ---------------------------------------------------------------------------
// Other objects

type rsMutator func(*appsv1.ReplicaSet)

// ownedReplicaSet is the ReplicaSet the controller builds for a role.
func ownedReplicaSet(job *v1.TrainingJob, role v1.Role, replicas int32, muts ...rsMutator) *appsv1.ReplicaSet {
	rs := ReplicaSet(job, role, replicas, nil)
	for _, m := range muts {
		m(rs)
	}
	return rs
}

func noOwner() rsMutator { return func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil } }

func ownedByUID(uid types.UID) rsMutator {
	return func(rs *appsv1.ReplicaSet) { rs.OwnerReferences[0].UID = uid }
}

func controlledByKind(apiVersion, kind, name string) rsMutator {
	return func(rs *appsv1.ReplicaSet) {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name)},
			schema.FromAPIVersionAndKind(apiVersion, kind))}
	}
}

func withRSRV(rv string) rsMutator { return func(rs *appsv1.ReplicaSet) { rs.ResourceVersion = rv } }

// slim returns a pod as the informer caches it (cluster.TransformPod), or
// pods as a slice of them.
func slim(pods ...*corev1.Pod) []*cluster.Pod {
	out := make([]*cluster.Pod, len(pods))
	for i, p := range pods {
		out[i], _ = cluster.PodOf(p.DeepCopy())
	}
	return out
}
