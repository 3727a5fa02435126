package paddle

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework"
)

// Ports of the master pod: the master's own RPC port and the etcd beside it
// that holds the fault-tolerant task queue.
const (
	MasterPort = 8080
	EtcdPort   = 2379
)

// Framework is PaddlePaddle.
type Framework struct{}

var _ framework.Framework = Framework{}

// Roles are the pservers and trainers, with a master when fault tolerant.
func (Framework) Roles(spec *v1.TrainingJobSpec) []v1.Role {
	if spec.FaultTolerant {
		return []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer}
	}
	return []v1.Role{v1.RolePserver, v1.RoleTrainer}
}

// Container runs the launcher's command for the role, with its
// environment contract (Env) and the job's ports.
func (Framework) Container(job *v1.TrainingJob, role v1.Role, c *corev1.Container, gpus []corev1.ResourceName) {
	c.Command = command(job, role)
	c.Env = Env(job, role, gpus)
	if role == v1.RoleMaster {
		c.Ports = []corev1.ContainerPort{
			{Name: "master", ContainerPort: MasterPort, Protocol: corev1.ProtocolTCP},
			{Name: "etcd", ContainerPort: EtcdPort, Protocol: corev1.ProtocolTCP},
		}
		return
	}
	c.Ports = ports(job)
}

// Pod needs nothing beyond the container.
func (Framework) Pod(*v1.TrainingJob, v1.Role, *corev1.PodSpec) {}

// Service: the master's ClusterIP Service on its two ports, or the
// pservers' headless Service, which the trainers find by DNS.
func (Framework) Service(job *v1.TrainingJob, role v1.Role, svc *corev1.ServiceSpec) {
	if role == v1.RoleMaster {
		svc.Ports = []corev1.ServicePort{
			{Name: "master", Port: MasterPort, TargetPort: intstr.FromInt32(MasterPort), Protocol: corev1.ProtocolTCP},
			{Name: "etcd", Port: EtcdPort, TargetPort: intstr.FromInt32(EtcdPort), Protocol: corev1.ProtocolTCP},
		}
		return
	}
	svc.ClusterIP = corev1.ClusterIPNone
	for _, p := range ports(job) {
		svc.Ports = append(svc.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromInt32(p.ContainerPort), Protocol: p.Protocol})
	}
}

// Training is nil: the controller judges a PaddlePaddle job's pods.
func (Framework) Training() *framework.Training { return nil }

// command is the paddle_k8s launcher command of a role. Fault-tolerant jobs
// use the master/etcd path (start_new_*); the original swapped the two.
func command(job *v1.TrainingJob, role v1.Role) []string {
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
// documented in docs/api.md. gpus as for [Framework.Container].
func Env(job *v1.TrainingJob, role v1.Role, gpus []corev1.ResourceName) []corev1.EnvVar {
	spec := &job.Spec
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
		framework.FieldEnv("NAMESPACE", "metadata.namespace"),
		framework.FieldEnv("POD_NAME", "metadata.name"),
		framework.FieldEnv("POD_IP", "status.podIP"),
		framework.FieldEnv("PADDLE_CURRENT_IP", "status.podIP"),
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
