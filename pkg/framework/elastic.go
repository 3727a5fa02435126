package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// StateDir is where the container that runs a training's end (a PyTorch
// trainer, a Horovod launcher) keeps, in an emptyDir that outlives its
// restarts, the mark of a training that ended (finished): the ReplicaSet's
// restartPolicy Always starts such a container again, and it must not
// train again. Its path is the container's EDL_STATE_DIR.
const StateDir = "/var/lib/edl"

// The master of a PyTorch or Horovod job, when spec.master.resources sets
// nothing: small and Guaranteed (requests equal to limits), so that it is
// among the last pods a node under pressure evicts. A c10d store (python3
// with torch imported) or horovodrun's driver fits in it.
var (
	DefaultMasterCPU    = resource.MustParse("250m")
	DefaultMasterMemory = resource.MustParse("512Mi")
)

// GPUNodeLabel is the label GPU feature discovery (NVIDIA's GPU operator)
// puts on a node with GPUs; a master prefers nodes without it.
const GPUNodeLabel = "nvidia.com/gpu.present"

// FieldEnv is an environment variable from the downward API.
func FieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// ElasticEnv is the environment every container of a PyTorch or Horovod
// job gets; keepsState adds EDL_STATE_DIR.
func ElasticEnv(job *v1.TrainingJob, role v1.Role, keepsState bool) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "EDL_JOB_NAME", Value: job.Name},
		{Name: "EDL_FRAMEWORK", Value: string(job.Spec.FrameworkOrDefault())},
		{Name: "EDL_ROLE", Value: role.Name()},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
		FieldEnv("NAMESPACE", "metadata.namespace"),
		FieldEnv("POD_NAME", "metadata.name"),
		FieldEnv("POD_IP", "status.podIP"),
	}
	if keepsState {
		env = append(env, corev1.EnvVar{Name: "EDL_STATE_DIR", Value: StateDir})
	}
	return env
}

// ElasticPod gives a PyTorch or Horovod pod what both frameworks need:
// a trainer's grace period, in which it checkpoints after SIGTERM; the
// master's default resources and its preference for nodes without GPUs;
// the state volume of the container that runs the training's end
// (keepsState). Every container's termination message falls back to the
// end of its log, so that a failure says why in status.resize.lastFailure.
func ElasticPod(role v1.Role, pod *corev1.PodSpec, keepsState bool) {
	c := &pod.Containers[0]
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	if keepsState {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "edl-state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "edl-state", MountPath: StateDir})
	}
	if role == v1.RoleTrainer {
		grace := v1.DefaultGracePeriodSeconds
		pod.TerminationGracePeriodSeconds = &grace
		return
	}
	c.Resources = masterResources(c.Resources)
	preferNoGPU(pod)
}

// masterResources are the master's resources: spec.master.resources, or
// the Guaranteed default.
func masterResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	if len(r.Requests) > 0 || len(r.Limits) > 0 {
		return r
	}
	list := corev1.ResourceList{corev1.ResourceCPU: DefaultMasterCPU, corev1.ResourceMemory: DefaultMasterMemory}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// preferNoGPU adds to the master's affinity a preference for nodes without
// GPUs: it holds a TCPStore or runs horovodrun, and a GPU node's room is
// the trainers'. A preference only: where the job's placement allows GPU
// nodes alone, the master runs there.
func preferNoGPU(pod *corev1.PodSpec) {
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	if pod.Affinity.NodeAffinity == nil {
		pod.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
		Weight: 100,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: GPUNodeLabel, Operator: corev1.NodeSelectorOpDoesNotExist},
		}},
	})
}
