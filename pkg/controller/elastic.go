package controller

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// The pods of a PyTorch or Horovod job (docs/api.md, "PyTorch jobs").
const (
	// DefaultLastCallSeconds is the last_call_timeout EDL gives torchrun's
	// rendezvous unless elasticPolicy.rdzvConf sets one.
	DefaultLastCallSeconds = 3
	// TorchMaxRestarts is torchrun's own max_restarts (PET_MAX_RESTARTS):
	// every change of the trainers restarts the workers and uses one, so it
	// is set out of reach; the job's failure budget is EDL's
	// (spec.elasticPolicy.maxRestarts), counted over the trainer pods.
	TorchMaxRestarts = 1_000_000
	// HostsMountPath is where a Horovod job's master pod finds the
	// host-discovery file (hosts) and script (discover_hosts.sh).
	HostsMountPath = "/etc/edl"
)

// torchStore is the master of a PyTorch job: a c10d TCPStore that the
// trainers' torchrun agents rendezvous through (is_host=false), on the port
// given as its argument, kept up until the pod is deleted. It lives in a
// pod EDL never scales, since the store dies with the process hosting it.
const torchStore = "import sys, threading, torch.distributed as d; " +
	"s = d.TCPStore('0.0.0.0', int(sys.argv[1]), is_master=True, wait_for_workers=False); " +
	"print('rendezvous store listening on port', sys.argv[1], flush=True); threading.Event().wait()"

// torchLeave runs torchrun (its arguments are the trainer's) and makes a
// trainer EDL removes leave the job without ending it. torchrun's agent,
// sent SIGTERM, closes the job's rendezvous, after which every other agent
// ends its run too (torch.distributed.elastic's LocalElasticAgent._shutdown):
// a scale-down would stop the whole job. So the container's first process
// is this wrapper: on SIGTERM it kills the agent, which closes nothing, and
// passes SIGTERM to the agent's workers, which finish their step, stop the
// survivors' workers with them (the training script's contract: a
// checkpoint and an exit), and exit; it waits for them within the grace
// period. The survivors' agents restart their workers and re-rendezvous
// without it once its keep-alive lapses. On its own exit the agent's
// status is the trainer's.
const torchLeave = `import os, signal, subprocess, sys, time
agent = subprocess.Popen([sys.executable, "-m", "torch.distributed.run"] + sys.argv[1:])
def leave(signum, frame):
    try:
        workers = [int(p) for p in open("/proc/%d/task/%d/children" % (agent.pid, agent.pid)).read().split()]
    except OSError:
        workers = []
    agent.kill()
    for w in workers:
        try:
            os.kill(w, signal.SIGTERM)
        except OSError:
            pass
    print("edl: SIGTERM: the agent is killed, its workers %s told to stop" % workers, flush=True)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
sys.exit(agent.wait())
`

// elasticCommand is the command of a PyTorch or Horovod job's role.
func elasticCommand(job *v1.TrainingJob, role v1.Role) []string {
	spec := &job.Spec
	port := strconv.Itoa(int(spec.Elastic().RdzvPortOrDefault()))
	switch {
	case spec.FrameworkOrDefault() == v1.FrameworkPyTorch && role == v1.RoleMaster:
		return []string{"python3", "-c", torchStore, port}
	case spec.FrameworkOrDefault() == v1.FrameworkPyTorch:
		return append([]string{"python3", "-c", torchLeave}, torchArgs(spec.Trainer.Entrypoint)...)
	case role == v1.RoleMaster:
		slots := spec.Elastic().SlotsPerHost()
		return []string{"sh", "-c", "exec horovodrun" +
			" --min-np " + strconv.Itoa(int(spec.Trainer.MinInstance*slots)) +
			" --max-np " + strconv.Itoa(int(spec.Trainer.MaxInstance*slots)) +
			" --host-discovery-script " + HostsMountPath + "/discover_hosts.sh " + spec.Trainer.Entrypoint}
	}
	return nil // a Horovod trainer runs its image's command (an sshd)
}

// torchArgs are torchrun's arguments for the trainer's entrypoint: the
// training script and its arguments. torchrun starts a script with its own
// interpreter, so a leading python3 is dropped; any other program runs as
// it is (--no-python). An entrypoint that needs a shell (quotes, variables,
// redirections) runs under sh -c.
func torchArgs(entrypoint string) []string {
	if strings.ContainsAny(entrypoint, "'\"$`\\|&;<>()*?~#") {
		return []string{"--no-python", "sh", "-c", entrypoint}
	}
	args := strings.Fields(entrypoint)
	if len(args) > 0 && (args[0] == "python3" || args[0] == "python") {
		return args[1:]
	}
	return append([]string{"--no-python"}, args...)
}

// elasticEnv is the environment of a PyTorch or Horovod job's container.
// torchrun reads its options from PET_* variables; PET_LOCAL_ADDR, the pod
// IP, is what torch 2.6's torchrun advertises as MASTER_ADDR, so that no
// trainer's hostname needs to resolve.
func elasticEnv(job *v1.TrainingJob, role v1.Role) []corev1.EnvVar {
	spec := &job.Spec
	p := spec.Elastic()
	env := []corev1.EnvVar{
		{Name: "EDL_JOB_NAME", Value: job.Name},
		{Name: "EDL_FRAMEWORK", Value: string(spec.FrameworkOrDefault())},
		{Name: "EDL_ROLE", Value: role.Name()},
		{Name: "PYTHONUNBUFFERED", Value: "1"},
		fieldEnv("NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_IP", "status.podIP"),
	}
	if spec.FrameworkOrDefault() != v1.FrameworkPyTorch || role != v1.RoleTrainer {
		return env
	}
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
	return append(env,
		corev1.EnvVar{Name: "PET_NNODES", Value: strconv.Itoa(int(spec.Trainer.MinInstance)) + ":" + strconv.Itoa(int(spec.Trainer.MaxInstance))},
		corev1.EnvVar{Name: "PET_NPROC_PER_NODE", Value: strconv.Itoa(int(p.NProcPerNodeOrDefault()))},
		corev1.EnvVar{Name: "PET_RDZV_BACKEND", Value: v1.DefaultRdzvBackend},
		corev1.EnvVar{Name: "PET_RDZV_ENDPOINT", Value: v1.ServiceName(job.Name, v1.RoleMaster) + ":" + strconv.Itoa(int(p.RdzvPortOrDefault()))},
		corev1.EnvVar{Name: "PET_RDZV_ID", Value: string(job.UID)},
		corev1.EnvVar{Name: "PET_RDZV_CONF", Value: conf},
		corev1.EnvVar{Name: "PET_MAX_RESTARTS", Value: strconv.Itoa(TorchMaxRestarts)},
		fieldEnv("PET_LOCAL_ADDR", "status.podIP"),
		// torch 2.6's agents share one TCPStore for the workers' bootstrap,
		// hosted by the rank 0 of the first round, and keep its address for
		// every later round: once a resize gives rank 0 to another trainer,
		// the workers of a trainer that stayed dial the old address and wait
		// forever. Without the sharing, each round's rank 0 publishes its own.
		corev1.EnvVar{Name: "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", Value: "1"},
	)
}

// elasticPorts are the ports of a PyTorch job's master: the rendezvous
// store's. torchrun's workers pick theirs; a Horovod launcher serves none.
func elasticPorts(job *v1.TrainingJob, role v1.Role) []corev1.ContainerPort {
	if job.Spec.FrameworkOrDefault() != v1.FrameworkPyTorch || role != v1.RoleMaster {
		return nil
	}
	return []corev1.ContainerPort{{Name: "rdzv", ContainerPort: job.Spec.Elastic().RdzvPortOrDefault(), Protocol: corev1.ProtocolTCP}}
}

// elasticPod sets what a PyTorch or Horovod pod needs beyond the common
// template: a trainer's grace period, in which it checkpoints after
// SIGTERM, and a Horovod master's host-discovery volume.
func elasticPod(job *v1.TrainingJob, role v1.Role, pod *corev1.PodSpec) {
	if role == v1.RoleTrainer {
		grace := v1.DefaultGracePeriodSeconds
		pod.TerminationGracePeriodSeconds = &grace
		return
	}
	if !job.Spec.HasHostDiscovery() {
		return
	}
	mode := int32(0o755)
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "edl-hosts", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: v1.HostsConfigMapName(job.Name)},
			// The controller creates it before the ReplicaSets
			// ([Controller.ensureHosts]): a launcher never starts without it.
			Optional:    ptr.To(false),
			DefaultMode: &mode,
		},
	}})
	c := &pod.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "edl-hosts", MountPath: HostsMountPath, ReadOnly: true})
}
