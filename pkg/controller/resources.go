package controller

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// AnnotationTemplateHash on a ReplicaSet records the hash of the pod template
// the controller built, so that drift is found without comparing the
// template field by field against the API server's defaulted copy.
const AnnotationTemplateHash = "edl.paddlepaddle.org/template-hash"

// ownerReference makes the job the controller of an object, so that deleting
// the job garbage-collects it.
func ownerReference(job *v1.TrainingJob) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, v1.SchemeGroupVersion.WithKind("TrainingJob"))
}

// Env is the environment of a role's container, as its framework gives
// it; gpus are the extended resources counted as GPUs (edl's
// -gpu_resources), nil for cluster.DefaultGPUResourceName.
func Env(job *v1.TrainingJob, role v1.Role, gpus []corev1.ResourceName) []corev1.EnvVar {
	return PodTemplate(job, role, gpus).Spec.Containers[0].Env
}

// resourcesOf is the role's container resources.
func resourcesOf(job *v1.TrainingJob, role v1.Role) corev1.ResourceRequirements {
	switch role {
	case v1.RoleMaster:
		return *job.Spec.Master.Resources.DeepCopy()
	case v1.RolePserver:
		return *job.Spec.Pserver.Resources.DeepCopy()
	default:
		return *job.Spec.Trainer.Resources.DeepCopy()
	}
}

// tolerations copies the job's tolerations; deep, since a toleration holds a
// pointer (tolerationSeconds).
func tolerations(ts []corev1.Toleration) []corev1.Toleration {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

// PodTemplate builds the pod template of a role; gpus as for Env. Where the
// job's pods may run (node selector, tolerations, affinity) and which
// scheduler places them are job-wide: every role gets them. The job's
// framework gives the container its command, environment and ports, and
// the pod what else it needs. A role's own template (spec.<role>.template)
// is the start: EDL's is merged into it (docs/templates.md), its
// containers[0] being the role's.
func PodTemplate(job *v1.TrainingJob, role v1.Role, gpus []corev1.ResourceName) corev1.PodTemplateSpec {
	spec := &job.Spec
	fw := frameworks.For(spec)
	t := &corev1.PodTemplateSpec{}
	if own := spec.TemplateOf(role); own != nil {
		t = own.DeepCopy()
	}
	pod := t.Spec
	var container corev1.Container
	if len(pod.Containers) > 0 {
		container = pod.Containers[0]
	}
	own := container // what the template gives; the framework sets its own
	if container.Name == "" {
		container.Name = role.Name()
	}
	if container.Image == "" {
		container.Image = spec.Image
	}
	if container.ImagePullPolicy == "" {
		container.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if len(container.Resources.Requests) == 0 && len(container.Resources.Limits) == 0 {
		container.Resources = resourcesOf(job, role)
	}
	container.VolumeMounts = append(container.VolumeMounts, spec.VolumeMounts...)
	container.Env, container.Ports = nil, nil
	fw.Container(job, role, &container, gpus)
	container.Env = append(append(own.Env, container.Env...), corev1.EnvVar{Name: EnvProgressConfigMap, Value: v1.ProgressConfigMapName(job.Name)})
	container.Ports = append(own.Ports, container.Ports...)
	pod.Containers = append([]corev1.Container{container}, pod.Containers[min(1, len(pod.Containers)):]...)
	pod.RestartPolicy = corev1.RestartPolicyAlways // the only policy a ReplicaSet allows
	pod.Volumes = append(pod.Volumes, spec.Volumes...)
	pod.ImagePullSecrets = append(pod.ImagePullSecrets, spec.ImagePullSecrets...)
	pod.HostNetwork = spec.HostNetwork
	pod.NodeSelector = maps.Clone(spec.NodeSelector)
	pod.Tolerations = tolerations(spec.Tolerations)
	pod.Affinity = spec.Affinity.DeepCopy()
	pod.SchedulerName = spec.SchedulerName
	if spec.HostNetwork {
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	// The job's priority is every role's: a master or pserver left at the
	// default priority 0 would be the first pod the scheduler preempts for
	// any other work, stopping the whole job. With one priority, preemption
	// keeps the oldest pods of the job, its master and pservers.
	pod.PriorityClassName = spec.PriorityClassName
	if role == v1.RoleTrainer && pod.ServiceAccountName == "" {
		// The one account that may write the job's progress, unless the
		// template names the trainers' own (bound to the same Role).
		pod.ServiceAccountName = v1.ProgressServiceAccountName(job.Name)
	}
	fw.Pod(job, role, &pod)
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1.LabelFor(role)] = job.Name
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: t.Annotations},
		Spec:       pod,
	}
}

// ReplicaSet builds the ReplicaSet of a role with the given replicas; gpus
// as for Env.
func ReplicaSet(job *v1.TrainingJob, role v1.Role, replicas int32, gpus []corev1.ResourceName) *appsv1.ReplicaSet {
	template := PodTemplate(job, role, gpus)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1.ReplicaSetName(job.Name, role),
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelFor(role): job.Name},
			Annotations:     map[string]string{AnnotationTemplateHash: TemplateHash(&template)},
			OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelFor(role): job.Name}},
			Template: template,
		},
	}
}

// Service builds the Service of the master, or the headless Service of the
// pservers, which the trainers find by DNS.
func Service(job *v1.TrainingJob, role v1.Role) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1.ServiceName(job.Name, role),
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelFor(role): job.Name},
			OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
		},
		Spec: corev1.ServiceSpec{Selector: map[string]string{v1.LabelFor(role): job.Name}},
	}
	frameworks.For(&job.Spec).Service(job, role, &svc.Spec)
	return svc
}

// TemplateHash is a short hash of a pod template, stable across runs.
func TemplateHash(t *corev1.PodTemplateSpec) string {
	data, err := json.Marshal(t)
	if err != nil { // a PodTemplateSpec always marshals
		panic(fmt.Sprintf("marshal pod template: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return strconv.FormatUint(h.Sum64(), 36)
}

// deletionCostCeiling is the cost of a trainer created with its job; each
// second later lowers it by one, so that newer trainers cost less.
const deletionCostCeiling = 1_000_000_000

// DeletionCosts returns the pod-deletion-cost each running trainer should
// carry, by pod name, so that a scale-down removes pending trainers first and
// then the newest running ones — never the oldest, most-trained ones.
//
// The ReplicaSet controller already deletes unscheduled and pending pods
// first, and among ready pods the more recently ready first. Two of its rules
// come before age, though: it prefers pods on nodes that hold more of the
// set's pods, and pods that restarted more. So costs are only needed when the
// running trainers are spread unevenly over their nodes or have restarted
// unequally; then every running trainer gets a cost that falls with its age
// (a pod without one counts as 0, below all of them, and is removed first,
// which is right for a trainer that only just started). Once costs are in
// use they are kept up for new trainers. A trainer the autoscaler marked
// for removal (v1.DeletionCostRemove) keeps its mark and counts for
// nothing here. It returns nil when the ranking is already right.
func DeletionCosts(job *v1.TrainingJob, trainers []*cluster.Pod) map[string]string {
	var running []*cluster.Pod
	perNode := map[string]int{}
	inUse := false
	for _, p := range trainers {
		if p.DeletionTimestamp != nil || p.NodeName == "" || p.Phase != corev1.PodRunning ||
			p.DeletionCost == v1.DeletionCostRemove {
			continue
		}
		running = append(running, p)
		perNode[p.NodeName]++
		if p.DeletionCost != "" {
			inUse = true
		}
	}
	if len(running) < 2 {
		return nil
	}
	if !inUse && evenlySpread(running, perNode) {
		return nil
	}
	costs := make(map[string]string, len(running))
	for _, p := range running {
		age := int64(p.CreationTimestamp.Sub(job.CreationTimestamp.Time).Seconds())
		costs[p.Name] = strconv.FormatInt(deletionCostCeiling-min(max(age, 0), deletionCostCeiling), 10)
	}
	return costs
}

// evenlySpread: every node holds as many of the running trainers, and they
// all restarted as often, so the ReplicaSet's ranking falls through to age.
func evenlySpread(running []*cluster.Pod, perNode map[string]int) bool {
	restarts := func(p *cluster.Pod) int32 {
		var n int32
		for _, cs := range p.ContainerStatuses {
			n += cs.RestartCount
		}
		return n
	}
	first, firstRestarts := perNode[running[0].NodeName], restarts(running[0])
	for _, p := range running[1:] {
		if perNode[p.NodeName] != first || restarts(p) != firstRestarts {
			return false
		}
	}
	return true
}
