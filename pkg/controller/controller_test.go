package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// healthyPods are the pods of a running job: a ready master (fault-tolerant
// jobs), ready pservers and running trainers.
func healthyPods(job *v1.TrainingJob, trainers int) []*corev1.Pod {
	var pods []*corev1.Pod
	if job.Spec.FaultTolerant {
		pods = append(pods, builders.RolePod(job, v1.RoleMaster, job.Name+"-master-0", builders.Ready()))
	}
	for i := 0; i < int(job.Spec.Pserver.MinInstance); i++ {
		pods = append(pods, builders.RolePod(job, v1.RolePserver, job.Name+"-pserver-"+string(rune('a'+i)), builders.Ready()))
	}
	for i := 0; i < trainers; i++ {
		pods = append(pods, builders.RolePod(job, v1.RoleTrainer, job.Name+"-trainer-"+string(rune('a'+i)), builders.Running()))
	}
	return pods
}

func eventPrefixes(events []string) []string {
	var out []string
	for _, e := range events {
		parts := strings.SplitN(e, " ", 3)
		out = append(out, strings.Join(parts[:2], " "))
	}
	return out
}

func TestSyncCreatesANewJob(t *testing.T) {
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		wantWrites []string
		wantEvents []string
	}{
		{
			name: "plain job",
			job:  builders.Job("mnist", testNamespace, builders.Trainers(3, 6)),
			wantWrites: []string{
				"create serviceaccounts mnist-trainer",
				"create roles mnist-progress",
				"create rolebindings mnist-progress",
				"create configmaps mnist-progress",
				"create services mnist-pserver",
				"create replicasets mnist-pserver",
				"create replicasets mnist-trainer",
				"update trainingjobs/status mnist",
			},
			wantEvents: []string{
				"Normal Created Created ConfigMap mnist-progress for the training's progress, writable by service account mnist-trainer alone",
				"Normal Created Created Service mnist-pserver",
				"Normal Created Created ReplicaSet mnist-pserver with 1 replicas",
				"Normal Created Created ReplicaSet mnist-trainer with 3 replicas",
			},
		},
		{
			name: "fault-tolerant job",
			job:  builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Trainers(3, 6), builders.Pservers(2)),
			wantWrites: []string{
				"create serviceaccounts mnist-trainer",
				"create roles mnist-progress",
				"create rolebindings mnist-progress",
				"create configmaps mnist-progress",
				"create services mnist-master",
				"create replicasets mnist-master",
				"create services mnist-pserver",
				"create replicasets mnist-pserver",
				"create replicasets mnist-trainer",
				"update trainingjobs/status mnist",
			},
			wantEvents: []string{
				"Normal Created Created ConfigMap mnist-progress for the training's progress, writable by service account mnist-trainer alone",
				"Normal Created Created Service mnist-master",
				"Normal Created Created ReplicaSet mnist-master with 1 replicas",
				"Normal Created Created Service mnist-pserver",
				"Normal Created Created ReplicaSet mnist-pserver with 2 replicas",
				"Normal Created Created ReplicaSet mnist-trainer with 3 replicas",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(tt.job)

			require.NoError(t, f.sync("mnist"))

			assert.Equal(t, tt.wantWrites, f.writeStrings())
			assert.Equal(t, tt.wantEvents, f.events())

			for _, a := range f.writes() {
				create, ok := a.(clienttesting.CreateAction)
				if !ok || a.GetVerb() != "create" {
					continue
				}
				assert.Equal(t, testNamespace, a.GetNamespace())
				switch obj := create.GetObject().(type) {
				case *appsv1.ReplicaSet:
					role := map[string]v1.Role{"mnist-master": v1.RoleMaster, "mnist-pserver": v1.RolePserver, "mnist-trainer": v1.RoleTrainer}[obj.Name]
					want := map[v1.Role]int32{v1.RoleMaster: 1, v1.RolePserver: tt.job.Spec.Pserver.MinInstance, v1.RoleTrainer: tt.job.Spec.Trainer.MinInstance}[role]
					assert.Equal(t, ReplicaSet(tt.job, role, want, nil), obj, "ReplicaSet %s", obj.Name)
				case *corev1.Service:
					role := map[string]v1.Role{"mnist-master": v1.RoleMaster, "mnist-pserver": v1.RolePserver}[obj.Name]
					assert.Equal(t, Service(tt.job, role), obj, "Service %s", obj.Name)
				case *corev1.ServiceAccount:
					assert.Equal(t, ProgressServiceAccount(tt.job), obj)
				case *rbacv1.Role:
					assert.Equal(t, ProgressRole(tt.job), obj)
				case *rbacv1.RoleBinding:
					assert.Equal(t, ProgressRoleBinding(tt.job), obj)
				case *corev1.ConfigMap:
					assert.Equal(t, ProgressConfigMap(tt.job), obj)
				default:
					t.Errorf("unexpected create of %T", obj)
				}
			}

			statuses := f.statusWrites()
			require.Len(t, statuses, 1)
			status := statuses[0].Status
			assert.Equal(t, v1.PhaseCreating, status.Phase)
			assert.Equal(t, v1.ReasonCreating, status.Reason)
			assert.Equal(t, int64(1), status.ObservedGeneration)
			assert.Equal(t, tt.job.Spec, statuses[0].Spec, "a status write carries the spec unchanged")
			assert.Equal(t, v1.PhaseCreating, f.getJob("mnist").Status.Phase, "the status reached the API server")
		})
	}
}

// TestSyncSteadyStateWritesNothing: unlike the original, which updated every
// job every cycle, once the objects and the status are what the job asks
// for, a sync writes nothing and records no event.
func TestSyncSteadyStateWritesNothing(t *testing.T) {
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		trainers   int32 // the trainer ReplicaSet's replicas; 0: created by the controller
		pods       int   // running trainer pods (with the master and pservers ready); 0: none
		wantPhase  v1.TrainingJobPhase
		wantEvents []string // "type reason" of the events on the way
	}{
		{name: "new plain job", job: builders.Job("mnist", testNamespace), wantPhase: v1.PhaseCreating,
			wantEvents: []string{"Normal Created", "Normal Created", "Normal Created", "Normal Created"}},
		{name: "new fault-tolerant job", job: builders.Job("mnist", testNamespace, builders.FaultTolerant()), wantPhase: v1.PhaseCreating,
			wantEvents: []string{"Normal Created", "Normal Created", "Normal Created", "Normal Created", "Normal Created", "Normal Created"}},
		{name: "running plain job", job: builders.Job("mnist", testNamespace), trainers: 2, pods: 2, wantPhase: v1.PhaseRunning,
			wantEvents: []string{"Normal Running"}},
		{name: "running fault-tolerant job", job: builders.Job("mnist", testNamespace, builders.FaultTolerant()), trainers: 2, pods: 2, wantPhase: v1.PhaseRunning,
			wantEvents: []string{"Normal Running"}},
		{name: "running job the autoscaler grew", job: builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Trainers(2, 6)), trainers: 5, pods: 5, wantPhase: v1.PhaseRunning,
			wantEvents: []string{"Normal Running"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(tt.job)
			if tt.trainers > 0 {
				f.addJobObjects(tt.job, tt.trainers)
			}
			f.addPods(healthyPods(tt.job, tt.pods)...)

			events := f.settle("mnist")
			assert.Equal(t, tt.wantEvents, eventPrefixes(events), "events mark edges only: %v", events)
			assert.Equal(t, tt.wantPhase, f.getJob("mnist").Status.Phase)

			for i := 0; i < 3; i++ {
				require.NoError(t, f.sync("mnist"))
			}
			assert.Empty(t, f.writeStrings(), "no write when nothing changed")
			assert.Empty(t, f.events(), "no event when nothing changed")
			if tt.trainers > 0 {
				assert.Equal(t, tt.trainers, *f.getReplicaSet("mnist-trainer").Spec.Replicas)
			}
		})
	}
}

func TestSyncInvalidJob(t *testing.T) {
	tests := []struct {
		name  string
		mut   builders.JobOption
		field string
	}{
		{"trainer min-instance 0", builders.Trainers(0, 6), "spec.trainer.min-instance"},
		{"trainer min-instance above max-instance", builders.Trainers(7, 6), "spec.trainer.min-instance"},
		{"no image", builders.Image(""), "spec.image"},
		{"pserver min-instance 0", builders.Pservers(0), "spec.pserver.min-instance"},
		{"ports_num 0", builders.Ports(7164, 0, 1), "spec.ports_num"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(builders.Job("mnist", testNamespace, tt.mut))

			require.NoError(t, f.sync("mnist"), "a spec error is permanent: no requeue")

			assert.Equal(t, []string{"update trainingjobs/status mnist"}, f.writeStrings(), "nothing created for an invalid job")
			status := f.getJob("mnist").Status
			assert.Equal(t, v1.PhaseFailed, status.Phase)
			assert.Equal(t, v1.ReasonInvalid, status.Reason)
			assert.Contains(t, status.Message, tt.field)
			assert.Equal(t, int64(1), status.ObservedGeneration)
			failed := condition(status, v1.ConditionFailed)
			require.NotNil(t, failed)
			assert.Equal(t, metav1.ConditionTrue, failed.Status)
			events := f.events()
			require.Len(t, events, 1)
			assert.True(t, strings.HasPrefix(events[0], "Warning Invalid "), events[0])
			assert.Contains(t, events[0], tt.field)

			f.feedBack()
			f.reset()
			require.NoError(t, f.sync("mnist"))
			assert.Empty(t, f.writeStrings())
			assert.Empty(t, f.events())
		})
	}
}

// TestSyncInvalidSpecOfAFinishedJob: Succeeded and Failed are final. A job
// that finished under an older, laxer CRD must not turn from Succeeded into
// Failed (with Complete and Failed both True) when a newer controller
// validates it again.
func TestSyncInvalidSpecOfAFinishedJob(t *testing.T) {
	f := newFixture(t)
	f.addJob(builders.Job("mnist", testNamespace, builders.Trainers(0, 6),
		builders.JobPhase(v1.PhaseSucceeded, v1.ReasonSucceeded, "trainer pod mnist-trainer-a container trainer exited with code 0"),
		builders.Condition(v1.ConditionComplete, metav1.ConditionTrue, v1.ReasonSucceeded)))

	require.NoError(t, f.sync("mnist"))

	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseSucceeded, status.Phase, "a final phase is final")
	assert.Nil(t, condition(status, v1.ConditionFailed))
	assert.Empty(t, f.writeStrings())
	assert.Empty(t, f.events())
}

func TestSyncFinishedJobScalesToZero(t *testing.T) {
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		finisher   *corev1.Pod
		wantPhase  v1.TrainingJobPhase
		wantReason string
		wantEvent  string
	}{
		{"a trainer exited 0", builders.Job("mnist", testNamespace), trainerPod("mnist-trainer-z", builders.Exited(0)),
			v1.PhaseSucceeded, v1.ReasonSucceeded, "Normal Succeeded trainer pod mnist-trainer-z container trainer exited with code 0; every ReplicaSet is scaled to 0"},
		{"a fault-tolerant trainer exited 0 in its last run", builders.Job("mnist", testNamespace, builders.FaultTolerant()), trainerPod("mnist-trainer-z", builders.Running(), builders.LastExited(0), builders.Restarts(1)),
			v1.PhaseSucceeded, v1.ReasonSucceeded, "Normal Succeeded trainer pod mnist-trainer-z container trainer exited with code 0; every ReplicaSet is scaled to 0"},
		{"a plain trainer failed, the job keeping none of its pods", builders.Job("mnist", testNamespace, builders.CleanPods(v1.CleanPodPolicyAll)), trainerPod("mnist-trainer-z", builders.Exited(2)),
			v1.PhaseFailed, v1.ReasonTrainerFailed, "Warning Failed trainer pod mnist-trainer-z container trainer exited with code 2; the job is not fault tolerant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(tt.job)
			f.addJobObjects(tt.job, 3)
			f.addPods(healthyPods(tt.job, 3)...)
			f.settle("mnist")
			require.Equal(t, v1.PhaseRunning, f.getJob("mnist").Status.Phase)

			f.addPods(tt.finisher)
			require.NoError(t, f.sync("mnist"))

			var wantPatches, wantScaled []string
			for _, role := range roles(tt.job) {
				name := v1.ReplicaSetName("mnist", role)
				wantPatches = append(wantPatches, "patch replicasets "+name)
				assert.JSONEq(t, `[{"op":"replace","path":"/spec/replicas","value":0}]`, string(f.patchOf("replicasets", name)))
				assert.Equal(t, int32(0), *f.getReplicaSet(name).Spec.Replicas)
				wantScaled = append(wantScaled, "Normal Scaled")
			}
			assert.Equal(t, wantPatches, f.writesOf("replicasets"))
			// The verdict is stored first, then the ReplicaSets scale to 0.
			events := f.events()
			assert.Equal(t, append([]string{strings.Join(strings.SplitN(tt.wantEvent, " ", 3)[:2], " ")}, wantScaled...), eventPrefixes(events))
			assert.Contains(t, events, tt.wantEvent)
			for _, e := range events[1:] {
				assert.Contains(t, e, "the job finished")
			}
			status := f.getJob("mnist").Status
			assert.Equal(t, tt.wantPhase, status.Phase)
			assert.Equal(t, tt.wantReason, status.Reason)

			// The ReplicaSets delete their pods; later syncs keep everything at 0.
			f.feedBack()
			for _, obj := range f.podIndexer().List() {
				require.NoError(t, f.podIndexer().Delete(obj))
			}
			f.settle("mnist")
			require.NoError(t, f.sync("mnist"))
			assert.Empty(t, f.writeStrings())
			assert.Empty(t, f.events())
			for _, role := range roles(tt.job) {
				assert.Equal(t, int32(0), *f.getReplicaSet(v1.ReplicaSetName("mnist", role)).Spec.Replicas)
			}
			assert.Equal(t, tt.wantPhase, f.getJob("mnist").Status.Phase)

			// Someone (the autoscaler, a person) scales trainers up again.
			rs := f.getReplicaSet("mnist-trainer")
			rs.Spec.Replicas = ptr.To[int32](3)
			f.updateReplicaSet(rs)
			require.NoError(t, f.sync("mnist"))
			assert.JSONEq(t, `[{"op":"replace","path":"/spec/replicas","value":0}]`, string(f.patchOf("replicasets", "mnist-trainer")))
		})
	}
}

// TestSyncStoresTheVerdictBeforeItScalesToZero: a sync whose status write
// of Succeeded loses a race leaves the ReplicaSets alone, so that the
// trainer whose exit 0 is the verdict's evidence is still there for the
// next sync. (The live trace replay met it: the autoscaler's record of a
// resize won the race, the trainers were scaled to 0 and deleted, and the
// next sync, finding no exit, judged the finished job Running and scaled
// it up again.)
func TestSyncStoresTheVerdictBeforeItScalesToZero(t *testing.T) {
	job := builders.Job("mnist", testNamespace)
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	f.settle("mnist")
	require.Equal(t, v1.PhaseRunning, f.getJob("mnist").Status.Phase)

	f.addPods(trainerPod("mnist-trainer-z", builders.Exited(0)))
	conflicts := 1
	f.tj.PrependReactor("update", "trainingjobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(v1.Resource("trainingjobs"), "mnist", errors.New("the object has been modified"))
	})
	require.Error(t, f.sync("mnist"))
	assert.Empty(t, f.writesOf("replicasets"), "no ReplicaSet scaled before the verdict is stored")
	assert.Equal(t, int32(2), *f.getReplicaSet("mnist-trainer").Spec.Replicas)

	require.NoError(t, f.sync("mnist"))
	assert.Equal(t, v1.PhaseSucceeded, f.getJob("mnist").Status.Phase)
	assert.Equal(t, int32(0), *f.getReplicaSet("mnist-trainer").Spec.Replicas)
}

func TestSyncJobNotFound(t *testing.T) {
	for _, key := range []string{"team-a/ghost", "other/mnist"} {
		t.Run(key, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(builders.Job("mnist", testNamespace))
			require.NoError(t, f.c.sync(f.ctx, key))
			assert.Empty(t, f.kube.Actions())
			assert.Empty(t, f.tj.Actions())
			assert.Empty(t, f.events())
		})
	}
	t.Run("a malformed key is dropped", func(t *testing.T) {
		f := newFixture(t)
		assert.NoError(t, f.c.sync(f.ctx, "a/b/c"))
		assert.Empty(t, f.kube.Actions())
	})
}

func TestSyncObservesPodsThroughTheIndex(t *testing.T) {
	f := newFixture(t)
	job := builders.Job("mnist", testNamespace)
	f.addJob(job)
	f.addJob(builders.Job("other", testNamespace))
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	// Pods of another job and of another namespace with the same job name
	// must not count.
	f.addPods(healthyPods(builders.Job("other", testNamespace), 2)...)
	stranger := builders.RolePod(job, v1.RoleTrainer, "mnist-trainer-x", builders.Exited(1))
	stranger.Namespace = "team-b"
	f.addPods(stranger)

	require.NoError(t, f.sync("mnist"))
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
	assert.Equal(t, v1.ReplicaStatus{Desired: 2, Current: 2, Ready: 0, Summary: "0/2"}, status.Trainers)
	assert.Equal(t, v1.ReplicaStatus{Desired: 1, Current: 1, Ready: 1, Summary: "1/1"}, status.Pservers)
}

// TestEventsWaitForTheStatusWrite: an edge is recorded only once the status
// that marks it is stored. A sync from a stale cache computes the same edge,
// and its write fails on the old resourceVersion; it must not repeat the
// event.
func TestEventsWaitForTheStatusWrite(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.Trainers(2, 6))
	f := newFixture(t)
	f.addJob(job)
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	f.tj.PrependReactor("update", "trainingjobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(v1.Resource("trainingjobs"), "mnist", errors.New("the object has been modified"))
	})
	require.Error(t, f.sync("mnist"))
	assert.Empty(t, f.events(), "no Running event for a status that was not stored")
}

// edl's -gpu_resources reaches the trainers' environment: a trainer with a
// MIG slice is told to use its GPU only when the slice is named.
func TestSyncCountsTheNamedGPUResources(t *testing.T) {
	mig := corev1.ResourceName("nvidia.com/mig-1g.5gb")
	resources := corev1.ResourceRequirements{Limits: builders.ResourceList(string(mig), "2", "cpu", "4")}
	for _, c := range []struct {
		configure     []func(*Config)
		count, useGPU string
	}{
		{nil, "4", "false"},
		{[]func(*Config){withGPUResources([]corev1.ResourceName{mig})}, "2", "true"},
	} {
		f := newFixture(t, c.configure...)
		f.addJob(builders.Job("mnist", testNamespace, builders.TrainerResources(resources)))
		require.NoError(t, f.sync("mnist"))
		env := f.getReplicaSet("mnist-trainer").Spec.Template.Spec.Containers[0].Env
		assert.Equal(t, c.count, envValue(t, env, "PADDLE_INIT_TRAINER_COUNT"))
		assert.Equal(t, c.useGPU, envValue(t, env, "PADDLE_INIT_USE_GPU"))
	}
}
