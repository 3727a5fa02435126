package controller

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"net/url"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// AnnotationTemplateHash on a ReplicaSet records the hash of the pod template
// the controller built, so that drift is found without comparing the
// template field by field against the API server's defaulted copy.
const AnnotationTemplateHash = "edl.paddlepaddle.org/template-hash"

// Ports of the master pod: the master's own RPC port and the etcd beside it
// that holds the fault-tolerant task queue.
const (
	MasterPort = 8080
	EtcdPort   = 2379
)

// command is the paddle_k8s launcher command of a role. Fault-tolerant jobs
// use the master/etcd path (start_new_*); the original swapped the two.
func command(job *v1.TrainingJob, role v1.Role) []string {
	if job.Spec.RestartsOnResize() {
		return elasticCommand(job, role)
	}
	if role == v1.RolePserver && job.Spec.Pserver.Entrypoint != "" {
		return []string{"sh", "-c", job.Spec.Pserver.Entrypoint}
	}
	switch {
	case role == v1.RoleMaster:
		return []string{"paddle_k8s", "start_master"}
	case role == v1.RolePserver && job.Spec.FaultTolerant:
		return []string{"paddle_k8s", "start_new_pserver"}
	case role == v1.RolePserver:
		return []string{"paddle_k8s", "start_pserver"}
	case job.Spec.FaultTolerant:
		return []string{"paddle_k8s", "start_new_trainer"}
	default:
		return []string{"paddle_k8s", "start_trainer"}
	}
}

// ownerReference makes the job the controller of an object, so that deleting
// the job garbage-collects it.
func ownerReference(job *v1.TrainingJob) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, v1.SchemeGroupVersion.WithKind("TrainingJob"))
}

// ports are the job's ports, named jobport-<n> as in the original.
func ports(job *v1.TrainingJob) []corev1.ContainerPort {
	first := job.Spec.FirstPort()
	n := job.Spec.DensePorts() + job.Spec.SparsePorts()
	out := make([]corev1.ContainerPort, 0, n)
	for i := int32(0); i < n; i++ {
		out = append(out, corev1.ContainerPort{Name: "jobport-" + strconv.Itoa(int(i)), ContainerPort: first + i, Protocol: corev1.ProtocolTCP})
	}
	return out
}

// trainerCount is the number of "trainers" PaddlePaddle v1 runs inside one
// trainer process: its GPUs (the first of gpus it has a limit, else a
// request, for), or else its whole CPUs (at least one).
func trainerCount(job *v1.TrainingJob, gpus []corev1.ResourceName) (count int64, useGPU bool) {
	if len(gpus) == 0 {
		gpus = []corev1.ResourceName{cluster.DefaultGPUResourceName}
	}
	res := job.Spec.Trainer.Resources
	for _, name := range gpus {
		for _, list := range []corev1.ResourceList{res.Limits, res.Requests} {
			if gpu, ok := list[name]; ok && gpu.Value() > 0 {
				return gpu.Value(), true
			}
		}
	}
	for _, list := range []corev1.ResourceList{res.Limits, res.Requests} {
		if cpu, ok := list[corev1.ResourceCPU]; ok && cpu.MilliValue() >= 1000 {
			return cpu.MilliValue() / 1000, false
		}
	}
	return 1, false
}

// Endpoints of the master Service of a fault-tolerant job.
func masterEndpoint(job *v1.TrainingJob) string {
	return fmt.Sprintf("%s.%s.svc:%d", v1.ServiceName(job.Name, v1.RoleMaster), job.Namespace, MasterPort)
}

// etcdEndpoint is where a role finds the task queue's etcd: master.etcd-endpoint,
// or the etcd beside the master. An endpoint on the loopback interface, as in
// the original's example job (127.0.0.1:2379), names the etcd inside the
// master pod: only the master reaches it there, the other roles through the
// master Service.
func etcdEndpoint(job *v1.TrainingJob, role v1.Role) string {
	endpoint := job.Spec.Master.EtcdEndpoint
	if endpoint != "" && (role == v1.RoleMaster || !isLoopback(endpoint)) {
		return endpoint
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", v1.ServiceName(job.Name, v1.RoleMaster), job.Namespace, EtcdPort)
}

// isLoopback tells whether every endpoint of a comma-separated list
// ("127.0.0.1:2379", "http://localhost:2379") is on the loopback interface.
func isLoopback(endpoints string) bool {
	for _, e := range strings.Split(endpoints, ",") {
		e = strings.TrimSpace(e)
		if !strings.Contains(e, "://") {
			e = "//" + e
		}
		u, err := url.Parse(e)
		if err != nil {
			return false
		}
		host := u.Hostname()
		if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// Env is the environment contract of a role's container: both the names the
// original (v1) launcher reads and those of the Fluid-era launchers. It is
// documented in docs/api.md. gpus are the extended resources counted as GPUs
// (edl's -gpu_resources); nil means cluster.DefaultGPUResourceName.
func Env(job *v1.TrainingJob, role v1.Role, gpus []corev1.ResourceName) []corev1.EnvVar {
	spec := &job.Spec
	if spec.RestartsOnResize() {
		return elasticEnv(job, role)
	}
	trainers := strconv.Itoa(int(spec.Trainer.MinInstance))
	pservers := strconv.Itoa(int(spec.Pserver.MinInstance))
	count, useGPU := trainerCount(job, gpus)
	env := []corev1.EnvVar{
		{Name: "PADDLE_JOB_NAME", Value: job.Name},
		{Name: "PADDLE_TRAINING_ROLE", Value: string(role)},
		{Name: "TRAINING_ROLE", Value: string(role)},
		{Name: "PADDLE_PORT", Value: strconv.Itoa(int(spec.FirstPort()))},
		{Name: "PADDLE_PSERVERS_NUM", Value: pservers},
		{Name: "PSERVERS", Value: pservers},
		{Name: "PADDLE_TRAINERS_NUM", Value: trainers},
		{Name: "TRAINERS", Value: trainers},
		{Name: "ENTRY", Value: spec.Trainer.Entrypoint},
		{Name: "TOPOLOGY", Value: spec.Trainer.Entrypoint},
		{Name: "TRAINER_PACKAGE", Value: spec.Trainer.Workspace},
		{Name: "PADDLE_INIT_PORT", Value: strconv.Itoa(int(spec.FirstPort()))},
		{Name: "PADDLE_INIT_PORTS_NUM", Value: strconv.Itoa(int(spec.DensePorts()))},
		{Name: "PADDLE_INIT_PORTS_NUM_FOR_SPARSE", Value: strconv.Itoa(int(spec.SparsePorts()))},
		{Name: "PADDLE_INIT_TRAINER_COUNT", Value: strconv.FormatInt(count, 10)},
		{Name: "PADDLE_INIT_NUM_GRADIENT_SERVERS", Value: trainers},
		{Name: "PADDLE_INIT_NUM_PASSES", Value: strconv.Itoa(int(spec.TrainerPasses()))},
		{Name: "PADDLE_INIT_USE_GPU", Value: strconv.FormatBool(useGPU)},
		{Name: "LD_LIBRARY_PATH", Value: "/usr/local/lib:/usr/local/nvidia/lib64"},
		fieldEnv("NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_IP", "status.podIP"),
		fieldEnv("PADDLE_CURRENT_IP", "status.podIP"),
	}
	if spec.FaultTolerant {
		env = append(env,
			corev1.EnvVar{Name: "PADDLE_MASTER_ENDPOINT", Value: masterEndpoint(job)},
			corev1.EnvVar{Name: "PADDLE_ETCD_ENDPOINTS", Value: etcdEndpoint(job, role)},
			corev1.EnvVar{Name: "ETCD_ENDPOINTS", Value: etcdEndpoint(job, role)},
		)
	}
	return env
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
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
// scheduler places them are job-wide: every role gets them.

func PodTemplate(job *v1.TrainingJob, role v1.Role, gpus []corev1.ResourceName) corev1.PodTemplateSpec {
	spec := &job.Spec
	container := corev1.Container{
		Name:            role.Name(),
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command(job, role),
		Env:             Env(job, role, gpus),
		Resources:       resourcesOf(job, role),
		VolumeMounts:    append([]corev1.VolumeMount(nil), spec.VolumeMounts...),
	}
	switch {
	case spec.RestartsOnResize():
		container.Ports = elasticPorts(job, role)
	case role == v1.RoleMaster:
		container.Ports = []corev1.ContainerPort{
			{Name: "master", ContainerPort: MasterPort, Protocol: corev1.ProtocolTCP},
			{Name: "etcd", ContainerPort: EtcdPort, Protocol: corev1.ProtocolTCP},
		}
	default:
		container.Ports = ports(job)
	}
	pod := corev1.PodSpec{
		Containers:       []corev1.Container{container},
		RestartPolicy:    corev1.RestartPolicyAlways, // the only policy a ReplicaSet allows
		Volumes:          append([]corev1.Volume(nil), spec.Volumes...),
		ImagePullSecrets: append([]corev1.LocalObjectReference(nil), spec.ImagePullSecrets...),
		HostNetwork:      spec.HostNetwork,
		NodeSelector:     maps.Clone(spec.NodeSelector),
		Tolerations:      tolerations(spec.Tolerations),
		Affinity:         spec.Affinity.DeepCopy(),
		SchedulerName:    spec.SchedulerName,
	}
	if spec.HostNetwork {
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	// The job's priority is every role's: a master or pserver left at the
	// default priority 0 would be the first pod the scheduler preempts for
	// any other work, stopping the whole job. With one priority, preemption
	// keeps the oldest pods of the job, its master and pservers.
	pod.PriorityClassName = spec.PriorityClassName
	if spec.RestartsOnResize() {
		elasticPod(job, role, &pod)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelFor(role): job.Name}},
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
	if job.Spec.RestartsOnResize() {
		for _, p := range elasticPorts(job, role) {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromInt32(p.ContainerPort), Protocol: p.Protocol})
		}
		if len(svc.Spec.Ports) == 0 {
			svc.Spec.ClusterIP = corev1.ClusterIPNone // a Horovod launcher serves nothing
		}
		return svc
	}
	if role == v1.RoleMaster {
		svc.Spec.Ports = []corev1.ServicePort{
			{Name: "master", Port: MasterPort, TargetPort: intstr.FromInt32(MasterPort), Protocol: corev1.ProtocolTCP},
			{Name: "etcd", Port: EtcdPort, TargetPort: intstr.FromInt32(EtcdPort), Protocol: corev1.ProtocolTCP},
		}
		return svc
	}
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	for _, p := range ports(job) {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromInt32(p.ContainerPort), Protocol: p.Protocol})
	}
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
