package horovod

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework"
)

// The host-discovery file of a Horovod job: the ConfigMap
// v1.HostsConfigMapName(job), mounted in the master pod at MountPath.
const (
	// MountPath is where the master pod finds the file and the script.
	MountPath = "/etc/edl"
	// HostsKey lists the trainers horovodrun may use, <podIP>:<slots> one
	// per line.
	HostsKey = "hosts"
	// DiscoverHostsKey is the script horovodrun's --host-discovery-script
	// runs: it prints HostsKey.
	DiscoverHostsKey = "discover_hosts.sh"
)

// DiscoverHosts prints the hosts file next to it. The kubelet swaps the
// mounted ConfigMap's files atomically (a symlink), so a run never reads a
// half-written list.
const DiscoverHosts = "#!/bin/sh\nexec cat " + MountPath + "/" + HostsKey + "\n"

// launchOnce runs the launcher, its argument, once: after it exited 0 the
// container's restarts only wait for the job's teardown. As the
// container's first process it passes SIGTERM on to the launcher.
const launchOnce = `f="$EDL_STATE_DIR/finished"
if [ -e "$f" ]; then
	echo "edl: the training ended (exit 0 at $(cat "$f")); not started again"
	trap 'kill $! 2>/dev/null; exit 0' TERM INT
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

// Framework is Horovod.
type Framework struct{}

var _ framework.Framework = Framework{}

// Roles are the master (the launcher) and the trainers.
func (Framework) Roles(*v1.TrainingJobSpec) []v1.Role {
	return []v1.Role{v1.RoleMaster, v1.RoleTrainer}
}

// Container runs horovodrun, once, in the master, between the trainers'
// bounds in slots and over the host-discovery script; a trainer runs its
// image's command.
func (Framework) Container(job *v1.TrainingJob, role v1.Role, c *corev1.Container, _ []corev1.ResourceName) {
	c.Env = framework.ElasticEnv(job, role, role == v1.RoleMaster)
	if role != v1.RoleMaster {
		return
	}
	spec := &job.Spec
	slots := spec.Elastic().SlotsPerHost()
	c.Command = []string{"sh", "-c", launchOnce, "edl-launcher", "exec horovodrun" +
		" --min-np " + strconv.Itoa(int(spec.Trainer.MinInstance*slots)) +
		" --max-np " + strconv.Itoa(int(spec.Trainer.MaxInstance*slots)) +
		" --host-discovery-script " + MountPath + "/" + DiscoverHostsKey + " " + spec.Trainer.Entrypoint}
}

// Pod: what every elastic pod gets, and the master's host-discovery volume.
func (Framework) Pod(job *v1.TrainingJob, role v1.Role, pod *corev1.PodSpec) {
	framework.ElasticPod(role, pod, role == v1.RoleMaster)
	if role != v1.RoleMaster {
		return
	}
	mode := int32(0o755)
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "edl-hosts", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: v1.HostsConfigMapName(job.Name)},
			// The controller creates it before the ReplicaSets: a
			// launcher never starts without it.
			Optional:    ptr.To(false),
			DefaultMode: &mode,
		},
	}})
	c := &pod.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "edl-hosts", MountPath: MountPath, ReadOnly: true})
}

// Service: a headless Service; the launcher serves nothing.
func (Framework) Service(_ *v1.TrainingJob, _ v1.Role, svc *corev1.ServiceSpec) {
	svc.ClusterIP = corev1.ClusterIPNone
}

// Training: the launcher's exits are the training's; horovodrun itself
// rides out the trainers that come and go, and a trainer leaves the
// host-discovery file before its pod goes.
func (Framework) Training() *framework.Training { return training }

// training is shared and read-only: the controller and the autoscaler ask
// for it on every sync and cycle.
var training = &framework.Training{Ender: v1.RoleMaster, Judge: judge, LeavesFirst: true}

func judge(t *cluster.Termination, _ *metav1.Time, _ time.Time) framework.Judgement {
	if t.ExitCode == 0 {
		return framework.Excused
	}
	return framework.Failed
}

// Hosts is the host-discovery list of a job whose trainer ReplicaSet runs
// replicas: the trainers that are Running, Ready and not being deleted, as
// <podIP>:<slotsPerHost>, sorted. It follows et-operator's order: a
// trainer leaves the list before its pod goes, so that horovodrun's
// driver, which runs the discovery script every second or so, stops using
// it first. So it leaves out the trainers the ReplicaSet is about to
// delete: those marked v1.DeletionCostRemove, and, when replicas is below
// the trainers still counted, the ones the ReplicaSet controller deletes
// first — the marked, the pending and the not yet ready, then the newest.
// It returns the list, the names of the trainers it lists in the same
// order, and the ready trainers it leaves out for replicas alone (excess):
// the controller marks those for removal, so that the ReplicaSet deletes
// exactly them. Hosts is pure, and the one model of the ReplicaSet's
// deletion order for a Horovod job.
func Hosts(job *v1.TrainingJob, replicas int32, trainers []*cluster.Pod) (hosts, names []string, excess []*cluster.Pod) {
	var active, ready []*cluster.Pod
	doomed := 0 // active trainers the ReplicaSet deletes before any listed one
	for _, p := range trainers {
		if p.DeletionTimestamp != nil || p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed {
			continue // not counted by the ReplicaSet any more
		}
		active = append(active, p)
		if p.DeletionCost == v1.DeletionCostRemove || p.Phase != corev1.PodRunning || !p.Ready || p.PodIP == "" {
			doomed++
			continue
		}
		ready = append(ready, p)
	}
	// The newest go first when the ReplicaSet deletes more than the
	// marked and the not ready (its ranking by age, for equal costs).
	slices.SortStableFunc(ready, func(a, b *cluster.Pod) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	if n := len(active) - int(replicas) - doomed; n > 0 {
		excess, ready = ready[:min(n, len(ready))], ready[min(n, len(ready)):]
	}
	slices.SortFunc(ready, func(a, b *cluster.Pod) int { return strings.Compare(a.PodIP, b.PodIP) })
	slots := strconv.Itoa(int(job.Spec.Elastic().SlotsPerHost()))
	hosts, names = make([]string, 0, len(ready)), make([]string, 0, len(ready))
	for _, p := range ready {
		hosts = append(hosts, p.PodIP+":"+slots)
		names = append(names, p.Name)
	}
	return hosts, names, excess
}

// Version is a short hash of a hosts file, stable across runs: the
// controller writes it into the master pods' v1.AnnotationHostsVersion.
func Version(list string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(list))
	return strconv.FormatUint(h.Sum64(), 36)
}
