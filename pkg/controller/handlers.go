package controller

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// jobIndex is the pod-informer index from a pod to the key of its job.
const jobIndex = "edl-job"

// podJobKeys indexes a pod under the key of the job its role label names.
func podJobKeys(obj any) ([]string, error) {
	pod, ok := cluster.PodOf(obj)
	if !ok {
		return nil, nil
	}
	if job, _, ok := v1.JobOf(pod.Labels); ok {
		return []string{pod.Namespace + "/" + job}, nil
	}
	return nil, nil
}

// enqueue adds a job's key; it takes jobs and their tombstones.
func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// enqueueIfChanged skips the periodic resync's updates of unchanged objects.
func (c *Controller) enqueueIfChanged(old, cur any, enqueue func(any)) {
	o, err1 := objectMeta(old)
	n, err2 := objectMeta(cur)
	if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
		return
	}
	enqueue(cur)
}

func objectMeta(obj any) (metav1.Object, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	// meta.Accessor also reads a cached *cluster.Pod.
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return m, nil
}

// enqueueOwner maps a ReplicaSet or Service to its job: its controller when
// that is a TrainingJob, else the job its name belongs to (a foreign object
// in a job's way), so that the job notices when the object goes away.
func (c *Controller) enqueueOwner(obj any) {
	m, err := objectMeta(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "TrainingJob" &&
		strings.HasPrefix(ref.APIVersion, v1.SchemeGroupVersion.Group+"/") {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
		return
	}
	if name, _, ok := v1.JobOfName(m.GetName()); ok {
		if _, err := c.jobs.TrainingJobs(m.GetNamespace()).Get(name); err == nil {
			c.queue.Add(m.GetNamespace() + "/" + name)
		}
	}
}

// enqueuePodJob maps a pod, or its tombstone, to its job's key.
func (c *Controller) enqueuePodJob(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	keys, _ := podJobKeys(obj)
	for _, k := range keys {
		c.queue.Add(k)
	}
}
