package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// and the not yet ready, then the newest. Hosts is pure.
func Hosts(job *v1.TrainingJob, replicas int32, trainers []*cluster.Pod) []string {
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
	if excess := len(active) - int(replicas) - doomed; excess > 0 {
		ready = ready[min(excess, len(ready)):]
	}
	slots := strconv.Itoa(int(job.Spec.Elastic().SlotsPerHost()))
	hosts := make([]string, 0, len(ready))
	for _, p := range ready {
		hosts = append(hosts, p.PodIP+":"+slots)
	}
	slices.Sort(hosts)
	return hosts
}

// HostsConfigMap is a Horovod job's host-discovery ConfigMap, controlled
// by the job, listing hosts; the master pod mounts it at HostsMountPath
// with mode 0755 ([elasticPod]).
func HostsConfigMap(job *v1.TrainingJob, hosts []string) *corev1.ConfigMap {
	list := strings.Join(hosts, "\n")
	if list != "" {
		list += "\n"
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            HostsConfigMapName(job.Name),
			Namespace:       job.Namespace,
			Labels:          map[string]string{v1.LabelFor(v1.RoleMaster): job.Name},
			OwnerReferences: []metav1.OwnerReference{ownerReference(job)},
		},
		Data: map[string]string{HostsKey: list, DiscoverHostsKey: discoverHosts},
	}
}

// ensureHosts creates or updates the job's host-discovery ConfigMap when
// its data differs from what [Hosts] lists for the trainer ReplicaSet's
// replicas; most syncs write nothing. The controller is its one writer.
// The autoscaler marks the trainers it removes and lowers the replicas
// right after; it does not yet wait for this write, so on its scale-downs
// the order holds only when the controller syncs first. A ConfigMap of that name the
// job does not control is left alone and reported.
func (c *Controller) ensureHosts(ctx context.Context, job *v1.TrainingJob, replicas int32, trainers []*cluster.Pod) error {
	hosts := Hosts(job, replicas, trainers)
	want := HostsConfigMap(job, hosts)
	existing, err := c.configMaps.ConfigMaps(job.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		_, err := c.kubeClient.CoreV1().ConfigMaps(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; its event brings the job back
		}
		if err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", want.Name, err)
		}
		c.log.Info("created the host-discovery ConfigMap", "job", job.Namespace+"/"+job.Name, "hosts", len(hosts))
		return nil
	}
	if err != nil {
		return err
	}
	if !controlledBy(existing, job) {
		return fmt.Errorf("ConfigMap %s is in the way: the job %s/%s does not control it", want.Name, job.Namespace, job.Name)
	}
	if maps.Equal(existing.Data, want.Data) {
		return nil
	}
	update := existing.DeepCopy()
	update.Data = want.Data
	if _, err := c.kubeClient.CoreV1().ConfigMaps(job.Namespace).Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", want.Name, err)
	}
	c.log.Debug("updated the host-discovery ConfigMap", "job", job.Namespace+"/"+job.Name, "hosts", len(hosts))
	return nil
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
