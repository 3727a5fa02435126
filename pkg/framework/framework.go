package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// Framework is one value of spec.framework.
type Framework interface {
	// Roles are the roles a job runs, in the order the controller creates
	// them.
	Roles(spec *v1.TrainingJobSpec) []v1.Role
	// Container gives a role's container its command, environment and
	// ports; gpus are the extended resources counted as GPUs (edl's
	// -gpu_resources), nil for cluster.DefaultGPUResourceName.
	Container(job *v1.TrainingJob, role v1.Role, c *corev1.Container, gpus []corev1.ResourceName)
	// Pod gives a role's pod what it needs beyond its container's
	// command, environment and ports.
	Pod(job *v1.TrainingJob, role v1.Role, pod *corev1.PodSpec)
	// Service gives a role's Service (every role's but the trainers') its
	// ports, and makes it headless where no client needs one address.
	Service(job *v1.TrainingJob, role v1.Role, svc *corev1.ServiceSpec)
	// Training is how the job's training is judged and resized, shared and
	// read-only; nil for a
	// framework whose pods are judged as the original EDL judged them
	// (PaddlePaddle: a trainer's exit, the restarts of a fault-tolerant
	// job's pods).
	Training() *Training
}

// Training is what the controller and the autoscaler know of a framework
// whose every resize restarts the training.
type Training struct {
	// Ender is the role whose container's exits are the training's: an
	// exit 0 is the job's success, the others are judged by Judge.
	Ender v1.Role
	// Judge judges an exit of an Ender container that EDL did not remove,
	// given the job's last resize (nil for none) and when its master's
	// current run started (zero while no master runs).
	Judge func(t *cluster.Termination, lastResize *metav1.Time, master time.Time) Judgement
	// LeavesFirst: a trainer leaves the job's host list before its pod
	// goes, so a scale-down names the trainers it removes and waits for
	// the list to drop them (the Horovod protocol, in the controller).
	LeavesFirst bool
}

// Judgement is what an exit of a job's container is.
type Judgement int

const (
	// Failed: the training failed; it counts against
	// spec.elasticPolicy.maxRestarts.
	Failed Judgement = iota
	// Excused: not a failure of the training (its success, the work of a
	// resize or of the master's loss).
	Excused
	// Later: not to be judged yet.
	Later
)
