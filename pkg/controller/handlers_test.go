package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
)

// Event handlers: they only map objects to job keys.

func TestEnqueueOwner(t *testing.T) {
	job := newJob("mnist")
	svcWithoutOwner := Service(job, v1.RoleMaster)
	svcWithoutOwner.OwnerReferences = nil
	tests := []struct {
		name      string
		jobExists bool
		obj       any
		want      []string
	}{
		{"owned ReplicaSet", true, ownedReplicaSet(job, v1.RoleTrainer, 2), []string{"team-a/mnist"}},
		{"owned ReplicaSet of a job not in the cache", false, ownedReplicaSet(job, v1.RolePserver, 2), []string{"team-a/mnist"}},
		{"owned Service", true, Service(job, v1.RolePserver), []string{"team-a/mnist"}},
		{"tombstone of an owned ReplicaSet", true,
			cache.DeletedFinalStateUnknown{Key: "team-a/mnist-trainer", Obj: ownedReplicaSet(job, v1.RoleTrainer, 2)}, []string{"team-a/mnist"}},
		{"ReplicaSet of a deleted job of the same name", true, ownedReplicaSet(job, v1.RoleTrainer, 2, ownedByUID("old")), []string{"team-a/mnist"}},
		{"foreign ReplicaSet in a job's way", true, ownedReplicaSet(job, v1.RoleTrainer, 2, noOwner()), []string{"team-a/mnist"}},
		{"tombstone of a foreign ReplicaSet in a job's way", true,
			cache.DeletedFinalStateUnknown{Key: "team-a/mnist-trainer", Obj: ownedReplicaSet(job, v1.RoleTrainer, 2, noOwner())}, []string{"team-a/mnist"}},
		{"foreign Service in a job's way", true, svcWithoutOwner, []string{"team-a/mnist"}},
		{"foreign ReplicaSet with a job's name but no job", false, ownedReplicaSet(job, v1.RoleTrainer, 2, noOwner()), nil},
		// A Deployment's ReplicaSet in the way blocks the job as much as an
		// ownerless one does; when it goes away the job must hear of it.
		{"ReplicaSet of a Deployment in a job's way", true,
			ownedReplicaSet(job, v1.RoleTrainer, 2, controlledByKind("apps/v1", "Deployment", "web")), []string{"team-a/mnist"}},
		{"ReplicaSet of a Deployment elsewhere", true, func() *appsv1.ReplicaSet {
			rs := ownedReplicaSet(job, v1.RoleTrainer, 2, controlledByKind("apps/v1", "Deployment", "web"))
			rs.Name = "web-5d4f8"
			return rs
		}(), nil},
		{"unrelated ownerless ReplicaSet", true, func() *appsv1.ReplicaSet {
			rs := ownedReplicaSet(job, v1.RoleTrainer, 2, noOwner())
			rs.Name = "web"
			return rs
		}(), nil},
		{"not an object", true, "garbage", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.jobExists {
				require.NoError(t, f.jobIndexer().Add(job))
			}
			f.c.enqueueOwner(tt.obj)
			assert.Equal(t, tt.want, f.queued())
		})
	}
}

func TestEnqueuePodJob(t *testing.T) {
	job := newJob("mnist")
	otherNS := newPod(job, v1.RoleTrainer, "p")
	otherNS.Namespace = "team-b"
	unlabelled := newPod(job, v1.RoleTrainer, "p")
	unlabelled.Labels = map[string]string{"app": "web"}
	tests := []struct {
		name string
		obj  any
		want []string
	}{
		{"trainer", newPod(job, v1.RoleTrainer, "p"), []string{"team-a/mnist"}},
		{"pserver", newPod(job, v1.RolePserver, "p"), []string{"team-a/mnist"}},
		{"master", newPod(job, v1.RoleMaster, "p"), []string{"team-a/mnist"}},
		{"another namespace", otherNS, []string{"team-b/mnist"}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "team-a/p", Obj: newPod(job, v1.RoleTrainer, "p")}, []string{"team-a/mnist"}},
		{"cached", slim(newPod(job, v1.RoleTrainer, "p"))[0], []string{"team-a/mnist"}},
		{"cached, in a tombstone", cache.DeletedFinalStateUnknown{Key: "team-a/p", Obj: slim(newPod(job, v1.RoleTrainer, "p"))[0]}, []string{"team-a/mnist"}},
		{"not a job's pod", unlabelled, nil},
		{"not a pod", ownedReplicaSet(job, v1.RoleTrainer, 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.c.enqueuePodJob(tt.obj)
			assert.Equal(t, tt.want, f.queued())
		})
	}
}

func TestEnqueueJob(t *testing.T) {
	job := newJob("mnist")
	for name, obj := range map[string]any{
		"job":       job,
		"tombstone": cache.DeletedFinalStateUnknown{Key: "team-a/mnist", Obj: job},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.c.enqueue(obj)
			assert.Equal(t, []string{"team-a/mnist"}, f.queued())
		})
	}
}

func TestEnqueueIfChanged(t *testing.T) {
	job := newJob("mnist")
	pod := func(rv string) *corev1.Pod { return newPod(job, v1.RoleTrainer, "p", withPodRV(rv)) }
	rs := func(rv string) *appsv1.ReplicaSet { return ownedReplicaSet(job, v1.RoleTrainer, 2, withRSRV(rv)) }
	tests := []struct {
		name     string
		old, cur any
		enqueue  func(*Controller) func(any)
		wantLen  int
	}{
		{"pod resync with the same resourceVersion", pod("7"), pod("7"), func(c *Controller) func(any) { return c.enqueuePodJob }, 0},
		{"pod changed", pod("7"), pod("8"), func(c *Controller) func(any) { return c.enqueuePodJob }, 1},
		{"cached pod resync", slim(pod("7"))[0], slim(pod("7"))[0], func(c *Controller) func(any) { return c.enqueuePodJob }, 0},
		{"cached pod changed", slim(pod("7"))[0], slim(pod("8"))[0], func(c *Controller) func(any) { return c.enqueuePodJob }, 1},
		{"ReplicaSet resync", rs("3"), rs("3"), func(c *Controller) func(any) { return c.enqueueOwner }, 0},
		{"ReplicaSet changed", rs("3"), rs("4"), func(c *Controller) func(any) { return c.enqueueOwner }, 1},
		{"job resync", newJob("mnist", func(j *v1.TrainingJob) { j.ResourceVersion = "5" }),
			newJob("mnist", func(j *v1.TrainingJob) { j.ResourceVersion = "5" }), func(c *Controller) func(any) { return c.enqueue }, 0},
		{"job changed", newJob("mnist", func(j *v1.TrainingJob) { j.ResourceVersion = "5" }),
			newJob("mnist", func(j *v1.TrainingJob) { j.ResourceVersion = "6" }), func(c *Controller) func(any) { return c.enqueue }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.c.enqueueIfChanged(tt.old, tt.cur, tt.enqueue(f.c))
			assert.Equal(t, tt.wantLen, f.c.queue.Len())
			if tt.wantLen > 0 {
				assert.Equal(t, []string{"team-a/mnist"}, f.queued())
			}
		})
	}
}

func TestPodIndexMapsPodsToJobs(t *testing.T) {
	f := newFixture(t)
	job := newJob("mnist", faultTolerant())
	f.addPods(healthyPods(job, 2)...)
	f.addPods(healthyPods(newJob("other"), 1)...)
	f.addPods(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: testNamespace}})

	objs, err := f.c.pods.ByIndex(jobIndex, "team-a/mnist")
	require.NoError(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.(*cluster.Pod).Name)
	}
	assert.ElementsMatch(t, []string{"mnist-master-0", "mnist-pserver-a", "mnist-trainer-a", "mnist-trainer-b"}, names)
}
