package controller

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// The pods of a PyTorch or Horovod job (docs/api.md, "PyTorch jobs").
const (
	// DefaultLastCallSeconds is the last_call_timeout EDL gives torchrun's
	// rendezvous unless elasticPolicy.rdzvConf sets one.
	DefaultLastCallSeconds = 3
	// TorchMaxRestarts is torchrun's own max_restarts (PET_MAX_RESTARTS):
	// 0, so that the agent exits when its worker group fails and the
	// trainer container restarts, which the controller sees and judges: a
	// failure of the training, or the work of a resize or of the master's
	// loss ([torchExit]). A growth restarts the workers inside the agent
	// without using a restart.
	TorchMaxRestarts = 0
	// HostsMountPath is where a Horovod job's master pod finds the
	// host-discovery file (hosts) and script (discover_hosts.sh).
	HostsMountPath = "/etc/edl"
	// StateDir is where a PyTorch trainer and a Horovod launcher keep, in
	// an emptyDir that outlives their container's restarts, the mark of a
	// training that ended (finished): the ReplicaSet's restartPolicy
	// Always starts such a container again, and it must not train again.
	StateDir = "/var/lib/edl"
)

// launchOnce runs a Horovod job's launcher, its argument, once: after it
// exited 0 the container's restarts only wait for the job's teardown. As
// the container's first process it passes SIGTERM on to the launcher.
const launchOnce = `f="$EDL_STATE_DIR/finished"
if [ -e "$f" ]; then
	echo "edl: the training ended (exit 0 at $(cat "$f")); not started again"
	trap 'exit 0' TERM INT
	while :; do sleep 3600 & wait $!; done
fi
sh -c "$1" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT
wait $pid
code=$?
while kill -0 $pid 2>/dev/null; do wait $pid; code=$?; done
if [ "$code" -eq 0 ]; then date -u +%Y-%m-%dT%H:%M:%SZ >"$f"; fi
exit $code`

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
		return []string{"sh", "-c", launchOnce, "edl-launcher", "exec horovodrun" +
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
	if keepsState(job, role) {
		env = append(env, corev1.EnvVar{Name: "EDL_STATE_DIR", Value: StateDir})
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

// keepsState: the role's container runs the training's end (a PyTorch
// trainer, a Horovod launcher) and keeps its mark in StateDir.
func keepsState(job *v1.TrainingJob, role v1.Role) bool {
	if job.Spec.FrameworkOrDefault() == v1.FrameworkHorovod {
		return role == v1.RoleMaster
	}
	return role == v1.RoleTrainer
}

// The master of a PyTorch or Horovod job, when spec.master.resources sets
// nothing: small and Guaranteed (requests equal to limits), so that it is
// among the last pods a node under memory pressure evicts. A c10d store
// (python3 with torch imported) or horovodrun's driver fits in it.
var (
	DefaultMasterCPU    = resource.MustParse("250m")
	DefaultMasterMemory = resource.MustParse("512Mi")
)

// masterResources are the master's resources: spec.master.resources, or
// the Guaranteed default.
func masterResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	if len(r.Requests) > 0 || len(r.Limits) > 0 {
		return r
	}
	list := corev1.ResourceList{corev1.ResourceCPU: DefaultMasterCPU, corev1.ResourceMemory: DefaultMasterMemory}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// GPUNodeLabel is the label GPU feature discovery (NVIDIA's GPU operator)
// puts on a node with GPUs; a master prefers nodes without it.
const GPUNodeLabel = "nvidia.com/gpu.present"

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

// elasticPod sets what a PyTorch or Horovod pod needs beyond the common
// template: a trainer's grace period, in which it checkpoints after
// SIGTERM; the master's default resources and its preference for nodes
// without GPUs; the state volume of the container that runs the training's
// end; a Horovod master's host-discovery volume. Every container's
// termination message falls back to the end of its log, so that a failure
// says why in status.resize.lastFailure.
func elasticPod(job *v1.TrainingJob, role v1.Role, pod *corev1.PodSpec) {
	c := &pod.Containers[0]
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	if keepsState(job, role) {
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
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "edl-hosts", MountPath: HostsMountPath, ReadOnly: true})
}
