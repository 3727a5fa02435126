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

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// Event handlers: they only map objects to job keys.

func TestEnqueueOwner(t *testing.T) {
	job := builders.Job("mnist", testNamespace)
	svcWithoutOwner := Service(job, v1.RoleMaster)
	svcWithoutOwner.OwnerReferences = nil
	tests := []struct {
		name      string
		jobExists bool
		obj       any
		want      []string
	}{
		{"owned ReplicaSet", true, builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil)), []string{"team-a/mnist"}},
		{"owned ReplicaSet of a job not in the cache", false, builders.ReplicaSet(ReplicaSet(job, v1.RolePserver, 2, nil)), []string{"team-a/mnist"}},
		{"owned Service", true, Service(job, v1.RolePserver), []string{"team-a/mnist"}},
		{"tombstone of an owned ReplicaSet", true,
			cache.DeletedFinalStateUnknown{Key: "team-a/mnist-trainer", Obj: builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil))}, []string{"team-a/mnist"}},
		{"ReplicaSet of a deleted job of the same name", true, builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.OwnerUID("old")), []string{"team-a/mnist"}},
		{"foreign ReplicaSet in a job's way", true, builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.NoOwner()), []string{"team-a/mnist"}},
		{"tombstone of a foreign ReplicaSet in a job's way", true,
			cache.DeletedFinalStateUnknown{Key: "team-a/mnist-trainer", Obj: builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.NoOwner())}, []string{"team-a/mnist"}},
		{"foreign Service in a job's way", true, svcWithoutOwner, []string{"team-a/mnist"}},
		{"foreign ReplicaSet with a job's name but no job", false, builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.NoOwner()), nil},
		// A Deployment's ReplicaSet in the way blocks the job as much as an
		// ownerless one does; when it goes away the job must hear of it.
		{"ReplicaSet of a Deployment in a job's way", true,
			builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.ControlledBy("apps/v1", "Deployment", "web")), []string{"team-a/mnist"}},
		{"ReplicaSet of a Deployment elsewhere", true, func() *appsv1.ReplicaSet {
			rs := builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.ControlledBy("apps/v1", "Deployment", "web"))
			rs.Name = "web-5d4f8"
			return rs
		}(), nil},
		{"unrelated ownerless ReplicaSet", true, func() *appsv1.ReplicaSet {
			rs := builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.NoOwner())
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
	job := builders.Job("mnist", testNamespace)
	otherNS := builders.RolePod(job, v1.RoleTrainer, "p")
	otherNS.Namespace = "team-b"
	unlabelled := builders.RolePod(job, v1.RoleTrainer, "p")
	unlabelled.Labels = map[string]string{"app": "web"}
	tests := []struct {
		name string
		obj  any
		want []string
	}{
		{"trainer", builders.RolePod(job, v1.RoleTrainer, "p"), []string{"team-a/mnist"}},
		{"pserver", builders.RolePod(job, v1.RolePserver, "p"), []string{"team-a/mnist"}},
		{"master", builders.RolePod(job, v1.RoleMaster, "p"), []string{"team-a/mnist"}},
		{"another namespace", otherNS, []string{"team-b/mnist"}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "team-a/p", Obj: builders.RolePod(job, v1.RoleTrainer, "p")}, []string{"team-a/mnist"}},
		{"cached", slim(builders.RolePod(job, v1.RoleTrainer, "p"))[0], []string{"team-a/mnist"}},
		{"cached, in a tombstone", cache.DeletedFinalStateUnknown{Key: "team-a/p", Obj: slim(builders.RolePod(job, v1.RoleTrainer, "p"))[0]}, []string{"team-a/mnist"}},
		{"not a job's pod", unlabelled, nil},
		{"not a pod", builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 1, nil)), nil},
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
	job := builders.Job("mnist", testNamespace)
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
	job := builders.Job("mnist", testNamespace)
	pod := func(rv string) *corev1.Pod { return builders.RolePod(job, v1.RoleTrainer, "p", builders.PodRV(rv)) }
	rs := func(rv string) *appsv1.ReplicaSet {
		return builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 2, nil), builders.ReplicaSetRV(rv))
	}
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
		{"job resync", builders.Job("mnist", testNamespace, func(j *v1.TrainingJob) { j.ResourceVersion = "5" }),
			builders.Job("mnist", testNamespace, func(j *v1.TrainingJob) { j.ResourceVersion = "5" }), func(c *Controller) func(any) { return c.enqueue }, 0},
		{"job changed", builders.Job("mnist", testNamespace, func(j *v1.TrainingJob) { j.ResourceVersion = "5" }),
			builders.Job("mnist", testNamespace, func(j *v1.TrainingJob) { j.ResourceVersion = "6" }), func(c *Controller) func(any) { return c.enqueue }, 1},
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
	job := builders.Job("mnist", testNamespace, builders.FaultTolerant())
	f.addPods(healthyPods(job, 2)...)
	f.addPods(healthyPods(builders.Job("other", testNamespace), 1)...)
	f.addPods(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: testNamespace}})

	objs, err := f.c.pods.ByIndex(jobIndex, "team-a/mnist")
	require.NoError(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.(*cluster.Pod).Name)
	}
	assert.ElementsMatch(t, []string{"mnist-master-0", "mnist-pserver-a", "mnist-trainer-a", "mnist-trainer-b"}, names)
}
