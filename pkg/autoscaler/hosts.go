package autoscaler

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/frameworks"
)

// A Horovod job's scale-down follows et-operator's order: its
// host-discovery file drops a trainer before the trainer's pod is deleted,
// so that horovodrun's driver, which reads the file every second or so,
// stops using it first. The autoscaler marks the trainers it removes (the
// planner names them all for such a job: planner.Job.NamesRemovals); the
// controller, seeing the marks, writes the ConfigMap without them and
// nudges the master pods, whose kubelet then projects the new file at
// once; the autoscaler waits for that before it lowers the replicas.
const (
	// DefaultHostsDropTimeout bounds the wait for the ConfigMap to drop
	// the trainers: past it the scale-down goes ahead (a yield must not
	// wait on a controller that is down) with a Warning event.
	DefaultHostsDropTimeout = 15 * time.Second
	hostsPoll               = 100 * time.Millisecond
)

// awaitHostsDropped waits until the job's host-discovery ConfigMap names
// none of removed (v1.AnnotationHostsPods), then v1.HostsSettle more, or
// until ctx ends.
func (a *Autoscaler) awaitHostsDropped(ctx context.Context, job *v1.TrainingJob, removed []string) {
	name := v1.HostsConfigMapName(job.Name)
	timeout := a.cfg.HostsDropTimeout
	if timeout <= 0 {
		timeout = DefaultHostsDropTimeout
	}
	var listed []string
	err := wait.PollUntilContextTimeout(ctx, hostsPoll, timeout, true, func(ctx context.Context) (bool, error) {
		cm, err := a.kubeClient.CoreV1().ConfigMaps(job.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // the controller may yet create it; the timeout bounds the wait
		}
		listed = strings.Split(cm.Annotations[v1.AnnotationHostsPods], ",")
		return !slices.ContainsFunc(removed, func(p string) bool { return slices.Contains(listed, p) }), nil
	})
	if ctx.Err() != nil {
		return // stopped: the caller does not scale down
	}
	if err != nil {
		a.log.Warn("scaling down without the host-discovery file dropping the trainers removed", "job", job.Namespace+"/"+job.Name, "removed", strings.Join(removed, ","), "listed", strings.Join(listed, ","))
		a.recorder.Eventf(job, corev1.EventTypeWarning, v1.EventHostsNotUpdated,
			"Scaling down without ConfigMap %s dropping trainers %s within %s", name, strings.Join(removed, ","), timeout)
		return
	}
	// The kubelet's time, not the planning clock's.
	settle := time.NewTimer(v1.HostsSettle)
	defer settle.Stop()
	select {
	case <-ctx.Done():
	case <-settle.C:
	}
}

// leavesFirst: the job's trainers leave its host-discovery file before their
// pods go (a Horovod job): a scale-down names and marks the trainers it
// removes.
func leavesFirst(job *v1.TrainingJob) bool {
	tr := frameworks.Training(&job.Spec)
	return tr != nil && tr.LeavesFirst
}
