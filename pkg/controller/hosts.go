package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// The keys of a Horovod job's host-discovery ConfigMap ([HostsConfigMap]).
const (
	// HostsKey lists the trainers horovodrun may use, <podIP>:<slots> one
	// per line.
	HostsKey = "hosts"
	// DiscoverHostsKey is the script horovodrun's --host-discovery-script
	// runs: it prints HostsKey.
	DiscoverHostsKey = "discover_hosts.sh"
)

// discoverHosts prints the hosts file next to it. The kubelet swaps the
// mounted ConfigMap's files atomically (a symlink), so a run never reads a
// half-written list.
const discoverHosts = "#!/bin/sh\nexec cat " + HostsMountPath + "/" + HostsKey + "\n"

// Hosts is the host-discovery list of a Horovod job whose trainer
// ReplicaSet runs replicas: the trainers that are Running, Ready and not
// being deleted, as <podIP>:<slotsPerHost>, sorted. It follows
// et-operator's order: a trainer leaves the list before its pod goes, so
// that horovodrun's driver, which runs the discovery script every second
// or so, stops using it first. So it leaves out the trainers the
// ReplicaSet is about to delete: those marked v1.DeletionCostRemove by the
// autoscaler, and, when replicas is below the trainers still counted, the
// ones the ReplicaSet controller deletes first — the marked, the pending
// and the not yet ready, then the newest. It returns the list, the names
// of the trainers it lists in the same order, and the ready trainers it
// leaves out for replicas alone (excess): the controller marks those for
// removal, so that the ReplicaSet deletes exactly them. Hosts is pure.
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

// HostsConfigMap is a Horovod job's host-discovery ConfigMap, controlled
// by the job, listing hosts, and naming the trainer pods they are in
// v1.AnnotationHostsPods; the master pod mounts it at HostsMountPath with
// mode 0755 ([elasticPod]).
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
		Data: map[string]string{HostsKey: list, DiscoverHostsKey: discoverHosts},
	}
}

// ensureHosts creates or updates the job's host-discovery ConfigMap when
// it differs from what [Hosts] lists for the trainer ReplicaSet's
// replicas; most syncs write nothing. The controller is its one writer.
// After an update it nudges the master pods ([Controller.nudgeMasters]), so
// that the file in them changes within a second or so. On a scale-down
// the ConfigMap drops a trainer before its pod goes (et-operator's order):
// the autoscaler marks the trainers it removes, waits until the ConfigMap
// no longer names them and v1.HostsSettle more, and only then lowers the
// replicas; when the controller lowers them (the job's max-instance was
// lowered), it marks the trainers Hosts leaves out for it and holds the
// ReplicaSet for v1.HostsSettle after the update ([hostsHolds]). A
// ConfigMap of that name the job does not control is left alone and
// reported.
func (c *Controller) ensureHosts(ctx context.Context, job *v1.TrainingJob, replicas int32, trainers, masters []*cluster.Pod, now time.Time) (err error) {
	defer func() {
		if err != nil {
			// The file may still list trainers a lower count removes:
			// hold the ReplicaSet as after an update, until a sync succeeds.
			c.holds.written(job.Namespace+"/"+job.Name, now)
		}
	}()
	hosts, names, excess := Hosts(job, replicas, trainers)
	if err := c.markForRemoval(ctx, excess, now); err != nil {
		return err
	}
	want := HostsConfigMap(job, hosts, names)
	key := job.Namespace + "/" + job.Name
	existing, err := c.configMaps.ConfigMaps(job.Namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		// No master runs without it: its volume is not optional.
		_, err := c.kubeClient.CoreV1().ConfigMaps(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; its event brings the job back
		}
		if err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", want.Name, err)
		}
		c.log.Info("created the host-discovery ConfigMap", "job", key, "hosts", len(hosts))
	case err != nil:
		return err
	case !controlledBy(existing, job):
		return fmt.Errorf("ConfigMap %s is in the way: the job %s/%s does not control it", want.Name, job.Namespace, job.Name)
	case !maps.Equal(existing.Data, want.Data) || existing.Annotations[v1.AnnotationHostsPods] != want.Annotations[v1.AnnotationHostsPods]:
		update := existing.DeepCopy()
		update.Data = want.Data
		if update.Annotations == nil {
			update.Annotations = map[string]string{}
		}
		update.Annotations[v1.AnnotationHostsPods] = want.Annotations[v1.AnnotationHostsPods]
		if _, err := c.kubeClient.CoreV1().ConfigMaps(job.Namespace).Update(ctx, update, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update ConfigMap %s: %w", want.Name, err)
		}
		c.holds.written(key, now)
		c.log.Debug("updated the host-discovery ConfigMap", "job", key, "hosts", len(hosts))
	}
	nudged, err := c.nudgeMasters(ctx, masters, hostsVersion(want.Data[HostsKey]))
	if nudged {
		c.holds.written(key, now)
	}
	return err
}

// hostsVersion is a short hash of a hosts file, stable across runs.
func hostsVersion(list string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(list))
	return strconv.FormatUint(h.Sum64(), 36)
}

// nudgeMasters writes the version of the host-discovery file the
// ConfigMap now holds ([hostsVersion]) into the v1.AnnotationHostsVersion
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
		current = rs.Spec.Replicas
		if current == nil {
			current = ptr.To(int32(1))
		}
	}
	return desiredReplicas(job, v1.RoleTrainer, current, final)
}
