package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// JobOption changes one thing of a TrainingJob being built.
type JobOption func(*v1.TrainingJob)

// Job returns a plain (not fault-tolerant) TrainingJob with 2..6 trainers and
// one pserver, at generation 1 and without status.
func Job(name, namespace string, opts ...JobOption) *v1.TrainingJob {
	job := &v1.TrainingJob{
		TypeMeta: metav1.TypeMeta{APIVersion: "paddlepaddle.org/v1", Kind: "TrainingJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: types.UID("uid-" + name), Generation: 1,
		},
		Spec: v1.TrainingJobSpec{
			Image:   "paddlepaddle/paddlecloud-job",
			Trainer: v1.TrainerSpec{MinInstance: 2, MaxInstance: 6, Entrypoint: "python train.py", Workspace: "/workspace"},
			Pserver: v1.PserverSpec{MinInstance: 1, MaxInstance: 1},
		},
	}
	for _, o := range opts {
		o(job)
	}
	return job
}

// Trainers sets the trainers' min-instance and max-instance.
func Trainers(minimum, maximum int32) JobOption {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.MinInstance, j.Spec.Trainer.MaxInstance = minimum, maximum }
}

// Pservers sets n pservers.
func Pservers(n int32) JobOption {
	return func(j *v1.TrainingJob) { j.Spec.Pserver.MinInstance, j.Spec.Pserver.MaxInstance = n, n }
}

// FaultTolerant makes the job fault-tolerant: it gets a master.
func FaultTolerant() JobOption { return func(j *v1.TrainingJob) { j.Spec.FaultTolerant = true } }

// Image sets the job's image.
func Image(image string) JobOption { return func(j *v1.TrainingJob) { j.Spec.Image = image } }

// Ports sets the first port and the numbers of dense and sparse ports.
func Ports(port, dense, sparse int32) JobOption {
	return func(j *v1.TrainingJob) {
		j.Spec.Port, j.Spec.PortsNum, j.Spec.PortsNumForSparse = &port, &dense, &sparse
	}
}

// MaxRestarts sets the trainers' restart budget.
func MaxRestarts(n int32) JobOption {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.MaxRestarts = &n }
}

// TrainerResources sets the trainers' resources.
func TrainerResources(r corev1.ResourceRequirements) JobOption {
	return func(j *v1.TrainingJob) { j.Spec.Trainer.Resources = r }
}

// Spec changes the spec with f.
func Spec(f func(*v1.TrainingJobSpec)) JobOption { return func(j *v1.TrainingJob) { f(&j.Spec) } }

// Generation sets metadata.generation.
func Generation(g int64) JobOption { return func(j *v1.TrainingJob) { j.Generation = g } }

// Suspended sets spec.suspend.
func Suspended(on bool) JobOption { return func(j *v1.TrainingJob) { j.Spec.Suspend = on } }

// JobPhase sets the status' phase, reason and message.
func JobPhase(phase v1.TrainingJobPhase, reason, message string) JobOption {
	return func(j *v1.TrainingJob) {
		j.Status.Phase, j.Status.Reason, j.Status.Message = phase, reason, message
	}
}

// CleanPods sets spec.runPolicy.cleanPodPolicy.
func CleanPods(policy v1.CleanPodPolicy) JobOption {
	return func(j *v1.TrainingJob) {
		if j.Spec.RunPolicy == nil {
			j.Spec.RunPolicy = &v1.RunPolicy{}
		}
		j.Spec.RunPolicy.CleanPodPolicy = policy
	}
}

// Condition adds a status condition whose message is its reason, last
// changed at T0.
func Condition(kind string, status metav1.ConditionStatus, reason string) JobOption {
	return func(j *v1.TrainingJob) {
		j.Status.Conditions = append(j.Status.Conditions, metav1.Condition{
			Type: kind, Status: status, Reason: reason, Message: reason, LastTransitionTime: metav1.NewTime(T0),
		})
	}
}

// PyTorch makes the job a PyTorch job: no pservers, a master hosting the
// rendezvous store, torchrun in the trainers running entrypoint.
func PyTorch(entrypoint string) JobOption {
	return func(j *v1.TrainingJob) {
		j.Spec.Framework = v1.FrameworkPyTorch
		j.Spec.Pserver = v1.PserverSpec{}
		j.Spec.Trainer.Entrypoint = entrypoint
	}
}

// Horovod makes the job a Horovod job: no pservers, horovodrun in the
// master pod running entrypoint over the trainers its host-discovery file
// lists.
func Horovod(entrypoint string) JobOption {
	return func(j *v1.TrainingJob) {
		PyTorch(entrypoint)(j)
		j.Spec.Framework = v1.FrameworkHorovod
	}
}

// Elastic sets the job's elasticPolicy.
func Elastic(p v1.ElasticPolicy) JobOption {
	return func(j *v1.TrainingJob) { j.Spec.ElasticPolicy = &p }
}
