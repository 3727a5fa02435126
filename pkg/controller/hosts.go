package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework/horovod"
)

// HostsConfigMap is a Horovod job's host-discovery ConfigMap, controlled
// by the job, listing hosts, and naming the trainer pods they are in
// v1.AnnotationHostsPods; the master pod mounts it at horovod.MountPath
// with mode 0755.
func HostsConfigMap(job *v1.TrainingJob, hosts, names []string) *corev1.ConfigMap {
	list := strings.Join(hosts, "\n")
	if list != "" {
		list += "\n"
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            v1.HostsConfigMapName(job.Name),
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelFor(v1.RoleMaster): job.Name},
			Annotations:     map[string]string{v1.AnnotationHostsPods: strings.Join(names, ",")},
			OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
		},
		Data: map[string]string{horovod.HostsKey: list, horovod.DiscoverHostsKey: horovod.DiscoverHosts},
	}
}

// ensureHosts creates or updates the job's host-discovery ConfigMap when
// it differs from what [horovod.Hosts] lists for the trainer ReplicaSet's
// replicas; most syncs write nothing. The controller is its one writer.
// After an update it nudges the master pods ([Controller.nudgeMasters]), so
// that the file in them changes within a second or so, and reports
// whether the file was acked: as wanted, and carried by every master pod.
// On a scale-down the ConfigMap drops a trainer before its pod goes
// (et-operator's order): the trainers removed are marked — by the
// autoscaler, which leaves the replicas to the controller
// (v1.AnnotationScaleDownTo), or here for the count replicas asks (the
// job's max-instance was lowered) — and [Controller.ensureReplicaSet]
// lowers the replicas once the file without them is acked and
// v1.HostsSettle passed ([hostsHolds]). A ConfigMap of that name the job
// does not control is left alone and reported.
func (c *Controller) ensureHosts(ctx context.Context, job *v1.TrainingJob, replicas int32, trainers, masters []*cluster.Pod, now time.Time) (acked bool, err error) {
	defer func() {
		if err != nil {
			// The file may still list trainers a lower count removes:
			// hold the ReplicaSet as after an update, until a sync succeeds.
			c.holds.written(job.Namespace+"/"+job.Name, now)
		}
	}()
	hosts, names, excess := horovod.Hosts(job, replicas, trainers)
	if err := c.markForRemoval(ctx, excess, now); err != nil {
		return false, err
	}
	want := HostsConfigMap(job, hosts, names)
	key := job.Namespace + "/" + job.Name
	existing, err := c.configMaps.ConfigMaps(job.Namespace).Get(want.Name)
	written := true
	switch {
	case apierrors.IsNotFound(err):
		// No master runs without it: its volume is not optional.
		_, err := c.kubeClient.CoreV1().ConfigMaps(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return false, nil // the cache is behind; its event brings the job back
		}
		if err != nil {
			return false, fmt.Errorf("create ConfigMap %s: %w", want.Name, err)
		}
		c.log.Info("created the host-discovery ConfigMap", "job", key, "hosts", len(hosts))
	case err != nil:
		return false, err
	case !controlledBy(existing, job):
		return false, fmt.Errorf("ConfigMap %s is in the way: the job %s/%s does not control it", want.Name, job.Namespace, job.Name)
	case !maps.Equal(existing.Data, want.Data) || existing.Annotations[v1.AnnotationHostsPods] != want.Annotations[v1.AnnotationHostsPods]:
		update := existing.DeepCopy()
		update.Data = want.Data
		if update.Annotations == nil {
			update.Annotations = map[string]string{}
		}
		update.Annotations[v1.AnnotationHostsPods] = want.Annotations[v1.AnnotationHostsPods]
		if _, err := c.kubeClient.CoreV1().ConfigMaps(job.Namespace).Update(ctx, update, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("update ConfigMap %s: %w", want.Name, err)
		}
		c.holds.written(key, now)
		c.log.Debug("updated the host-discovery ConfigMap", "job", key, "hosts", len(hosts))
	default:
		written = false
	}
	nudged, err := c.nudgeMasters(ctx, masters, horovod.Version(want.Data[horovod.HostsKey]))
	if nudged {
		c.holds.written(key, now)
	}
	// Acked: the file was as wanted and every master pod carried its
	// version already; a write or a nudge of this sync is acked by the
	// events of a later one.
	return !written && !nudged && err == nil, err
}

// nudgeMasters writes the version of the host-discovery file the
// ConfigMap now holds ([horovod.Version]) into the v1.AnnotationHostsVersion
// of the master pods that do not carry it yet, and reports whether it
// wrote any. A kubelet projects a changed ConfigMap into a pod's volume
// when it syncs the pod: on its periodic sync, up to a minute and more
// later, or at once when the pod changes. horovodrun reads the file every
// second or so. Comparing with each pod's annotation, not nudging after an
// update only, lets the next sync retry a nudge that failed; a new master
// pod, which mounted the current file, is written once.
func (c *Controller) nudgeMasters(ctx context.Context, masters []*cluster.Pod, version string) (bool, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1.AnnotationHostsVersion: version}}})
	if err != nil {
		return false, err
	}
	nudged := false
	for _, p := range masters {
		if p.DeletionTimestamp != nil || p.NodeName == "" || p.HostsVersion == version {
			continue
		}
		_, err := c.kubeClient.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nudged, fmt.Errorf("annotate master pod %s with the hosts version: %w", p.Name, err)
		default:
			nudged = true
		}
	}
	return nudged, nil
}

// markForRemoval gives the trainers the lowest pod-deletion-cost
// (v1.DeletionCostRemove) with the time of the mark, as the autoscaler
// does, so that the ReplicaSet controller deletes them first.
func (c *Controller) markForRemoval(ctx context.Context, trainers []*cluster.Pod, now time.Time) error {
	patch := v1.RemovalMarkPatch(now)
	for _, p := range trainers {
		_, err := c.kubeClient.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("mark trainer pod %s for removal: %w", p.Name, err)
		}
	}
	return nil
}

// hostsHolds remembers when the controller last updated each Horovod
// job's host-discovery ConfigMap, so that it lowers the job's trainer
// ReplicaSet no sooner than v1.HostsSettle later. Its zero value is ready;
// the sync workers share it.
type hostsHolds struct {
	mu sync.Mutex
	at map[string]time.Time // by job key
}

func (h *hostsHolds) written(key string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[string]time.Time{}
	}
	h.at[key] = now
}

// wait is how long a scale-down of the job's trainers must still wait at
// now; 0 forgets the job's last update.
func (h *hostsHolds) wait(key string, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	left := h.at[key].Add(v1.HostsSettle).Sub(now)
	if left <= 0 {
		delete(h.at, key)
		return 0
	}
	return left
}

// trainerReplicas is what the trainer ReplicaSet runs once this sync's
// writes are done ([Controller.ensureReplicaSet]).
func trainerReplicas(job *v1.TrainingJob, obs observed, final bool, stop string) int32 {
	if stop != "" {
		return 0
	}
	var current *int32
	if rs := obs.replicaSets[v1.RoleTrainer]; rs != nil {
		target, _ := scaleDownTarget(rs)
		current = &target
	}
	return desiredReplicas(job, v1.RoleTrainer, current, final)
}
