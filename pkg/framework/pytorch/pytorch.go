package pytorch

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework"
)

// The pods of a PyTorch job (docs/api.md, "PyTorch jobs").
const (
	// DefaultLastCallSeconds is the last_call_timeout EDL gives torchrun's
	// rendezvous unless elasticPolicy.rdzvConf sets one.
	DefaultLastCallSeconds = 3
	// MaxRestarts is torchrun's own max_restarts (PET_MAX_RESTARTS): 0, so
	// that the agent exits when its worker group fails and the trainer
	// container restarts, which the controller sees and judges ([Judge]).
	// A growth restarts the workers inside the agent without using one.
	MaxRestarts = 0
)

// The windows in which an exit of a trainer is not the training's failure
// (docs/api.md, "What ends a job").
const (
	// ResizeWindow: a trainer whose run began before a resize and ended
	// within this long after it was stopped by the resize. A scale-down's
	// survivors lose their peers when the removed trainers stop, within
	// their grace period; their agents then exit, to start again in the
	// next rendezvous round.
	ResizeWindow = time.Duration(v1.DefaultGracePeriodSeconds)*time.Second + time.Minute
	// MasterLossWindow: a trainer whose run began before its master's
	// current run began and ended within this long after it lost its
	// rendezvous store: its agent exits, and its next run finds the new
	// store through the master Service.
	MasterLossWindow = 2 * time.Minute
)

// store is the master of a PyTorch job: a c10d TCPStore that the trainers'
// torchrun agents rendezvous through (is_host=false), on the port given as
// its argument, kept up until the pod is deleted. It lives in a pod EDL
// never scales, since the store dies with the process hosting it. It runs
// in the trainers' image: the store must speak the trainers' torch.
const store = "import sys, threading, torch.distributed as d; " +
	"s = d.TCPStore('0.0.0.0', int(sys.argv[1]), is_master=True, wait_for_workers=False); " +
	"print('rendezvous store listening on port', sys.argv[1], flush=True); threading.Event().wait()"

// Framework is PyTorch: torchrun in every trainer, behind [Wrapper], with
// its c10d rendezvous store in the master pod.
type Framework struct{}

var _ framework.Framework = Framework{}

// Roles are the master (the rendezvous store) and the trainers.
func (Framework) Roles(*v1.TrainingJobSpec) []v1.Role {
	return []v1.Role{v1.RoleMaster, v1.RoleTrainer}
}

// Container runs the store in the master, the wrapper and torchrun in a
// trainer, with torchrun's options as PET_* variables.
func (Framework) Container(job *v1.TrainingJob, role v1.Role, c *corev1.Container, _ []corev1.ResourceName) {
	port := job.Spec.Elastic().RdzvPortOrDefault()
	c.Env = framework.ElasticEnv(job, role, role == v1.RoleTrainer)
	if role == v1.RoleMaster {
		c.Command = []string{"python3", "-c", store, strconv.Itoa(int(port))}
		c.Ports = []corev1.ContainerPort{{Name: "rdzv", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		return
	}
	launch := Args(job.Spec.Trainer.Entrypoint)
	if argv := job.Spec.Trainer.TemplateCommand(); job.Spec.Trainer.Entrypoint == "" && argv != nil {
		launch = ArgvArgs(argv)
	}
	c.Command, c.Args = append([]string{"python3", "-c", Wrapper}, launch...), nil
	c.Env = append(c.Env, torchEnv(job)...)
}

// Pod: a trainer's grace period and state volume, the master's defaults.
func (Framework) Pod(_ *v1.TrainingJob, role v1.Role, pod *corev1.PodSpec) {
	framework.ElasticPod(role, pod, role == v1.RoleTrainer)
}

// Service: the master's ClusterIP Service on the store's port.
func (Framework) Service(job *v1.TrainingJob, _ v1.Role, svc *corev1.ServiceSpec) {
	port := job.Spec.Elastic().RdzvPortOrDefault()
	svc.Ports = []corev1.ServicePort{{Name: "rdzv", Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}}
}

// Training: the trainers' exits are the training's, judged by [Judge].
func (Framework) Training() *framework.Training { return training }

// training is shared and read-only: the controller and the autoscaler ask
// for it on every sync and cycle.
var training = &framework.Training{Ender: v1.RoleTrainer, Judge: Judge}

// Judge judges an exit of a trainer, whose agent exits when its worker
// group fails: a failure, unless the run it ended began before the last
// resize and ended within ResizeWindow of it, or began before the master's
// current run and ended within MasterLossWindow of that run's start. While
// no master runs, a trainer's exit waits to be judged.
func Judge(t *cluster.Termination, lastResize *metav1.Time, master time.Time) framework.Judgement {
	switch {
	case t.ExitCode == 0:
		return framework.Excused
	case lastResize != nil && t.StartedAt.Before(lastResize) && t.FinishedAt.Time.Before(lastResize.Add(ResizeWindow)):
		return framework.Excused
	case master.IsZero():
		return framework.Later
	case t.StartedAt.Time.Before(master) && t.FinishedAt.Time.Before(master.Add(MasterLossWindow)):
		return framework.Excused
	}
	return framework.Failed
}

// Args are torchrun's arguments for the trainer's entrypoint (or its
// template's command and args, ArgvArgs), the line as the user wrote it:
//   - their own torchrun line, `torchrun ARGS` or `python3 -m
//     torch.distributed.run ARGS`: ARGS as written (EDL's options come
//     through PET_* variables, and validation refuses a line that sets
//     them);
//   - `python3 script args`: the script and its arguments, which torchrun
//     runs with its own interpreter, unbuffered;
//   - `python3 -u script args`, or any interpreter option: the line as it
//     is (--no-python), so that the options reach the interpreter;
//   - any other program: as it is (--no-python);
//   - a line that needs a shell (quotes, variables, redirections): under
//     sh -c.
func Args(entrypoint string) []string {
	if _, ok := v1.TorchrunArgs(entrypoint); !ok && strings.ContainsAny(entrypoint, v1.ShellChars) {
		return []string{"--no-python", "sh", "-c", entrypoint}
	}
	return ArgvArgs(strings.Fields(entrypoint))
}

// ArgvArgs is Args of a launch line given as its words (a trainer
// template's command and args), which no shell needs to split.
func ArgvArgs(args []string) []string {
	if a, ok := v1.TorchrunArgv(args); ok {
		return a
	}
	if len(args) > 1 && v1.IsPython(args[0]) && !strings.HasPrefix(args[1], "-") {
		return args[1:]
	}
	return append([]string{"--no-python"}, args...)
}

// torchEnv is torchrun's part of a trainer's environment: torchrun reads
// its options from PET_* variables; PET_LOCAL_ADDR, the pod IP, is what
// torch 2.6's torchrun advertises as MASTER_ADDR, so that no trainer's
// hostname needs to resolve.
func torchEnv(job *v1.TrainingJob) []corev1.EnvVar {
	spec := &job.Spec
	p := spec.Elastic()
	conf := "is_host=false"
	lastCall := false
	for _, c := range p.RdzvConf {
		conf += "," + c.Key + "=" + c.Value
		lastCall = lastCall || c.Key == "last_call_timeout"
	}
	if !lastCall {
		// A round that reached its minimum waits last_call_timeout (30 s
		// by torchrun's default) for more agents before it closes. EDL
		// grows a job in one step, so its new agents arrive together and
		// the round closes at once when they reach the maximum; after a
		// scale-down, or a growth short of the maximum, the survivors
		// would wait out the whole default for nobody.
		conf += ",last_call_timeout=" + strconv.Itoa(DefaultLastCallSeconds)
	}
	return []corev1.EnvVar{
		{Name: "PET_NNODES", Value: strconv.Itoa(int(spec.Trainer.MinInstance)) + ":" + strconv.Itoa(int(spec.Trainer.MaxInstance))},
		{Name: "PET_NPROC_PER_NODE", Value: strconv.Itoa(int(p.NProcPerNodeOrDefault()))},
		{Name: "PET_RDZV_BACKEND", Value: v1.DefaultRdzvBackend},
		{Name: "PET_RDZV_ENDPOINT", Value: v1.ServiceName(job.Name, v1.RoleMaster) + ":" + strconv.Itoa(int(p.RdzvPortOrDefault()))},
		{Name: "PET_RDZV_ID", Value: string(job.UID)},
		{Name: "PET_RDZV_CONF", Value: conf},
		{Name: "PET_MAX_RESTARTS", Value: strconv.Itoa(MaxRestarts)},
		framework.FieldEnv("PET_LOCAL_ADDR", "status.podIP"),
		// torch 2.6's agents share one TCPStore for the workers' bootstrap,
		// hosted by the rank 0 of the first round, and keep its address for
		// every later round: once a resize gives rank 0 to another trainer,
		// the workers of a trainer that stayed dial the old address and wait
		// forever. Without the sharing, each round's rank 0 publishes its own.
		{Name: "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", Value: "1"},
	}
}
