package controller

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
)

// healthyPods are the pods of a running job: a ready master (fault-tolerant
// jobs), ready pservers and running trainers.
func healthyPods(job *v1.TrainingJob, trainers int) []*corev1.Pod {
	var pods []*corev1.Pod
	if job.Spec.FaultTolerant {
		pods = append(pods, newPod(job, RoleMaster, job.Name+"-master-0", ready()))
	}
	for i := 0; i < int(job.Spec.Pserver.MinInstance); i++ {
		pods = append(pods, newPod(job, RolePserver, job.Name+"-pserver-"+string(rune('a'+i)), ready()))
	}
	for i := 0; i < trainers; i++ {
		pods = append(pods, newPod(job, RoleTrainer, job.Name+"-trainer-"+string(rune('a'+i)), running()))
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
			job:  newJob("mnist", withTrainers(3, 6)),
			wantWrites: []string{
				"create services mnist-pserver",
				"create replicasets mnist-pserver",
				"create replicasets mnist-trainer",
				"update trainingjobs/status mnist",
			},
			wantEvents: []string{
				"Normal Created Created Service mnist-pserver",
				"Normal Created Created ReplicaSet mnist-pserver with 1 replicas",
				"Normal Created Created ReplicaSet mnist-trainer with 3 replicas",
			},
		},
		{
			name: "fault-tolerant job",
			job:  newJob("mnist", faultTolerant(), withTrainers(3, 6), withPservers(2)),
			wantWrites: []string{
				"create services mnist-master",
				"create replicasets mnist-master",
				"create services mnist-pserver",
				"create replicasets mnist-pserver",
				"create replicasets mnist-trainer",
				"update trainingjobs/status mnist",
			},
			wantEvents: []string{
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
					role := map[string]Role{"mnist-master": RoleMaster, "mnist-pserver": RolePserver, "mnist-trainer": RoleTrainer}[obj.Name]
					want := map[Role]int32{RoleMaster: 1, RolePserver: tt.job.Spec.Pserver.MinInstance, RoleTrainer: tt.job.Spec.Trainer.MinInstance}[role]
					assert.Equal(t, ReplicaSet(tt.job, role, want, nil), obj, "ReplicaSet %s", obj.Name)
				case *corev1.Service:
					role := map[string]Role{"mnist-master": RoleMaster, "mnist-pserver": RolePserver}[obj.Name]
					assert.Equal(t, Service(tt.job, role), obj, "Service %s", obj.Name)
				default:
					t.Errorf("unexpected create of %T", obj)
				}
			}

			statuses := f.statusWrites()
			require.Len(t, statuses, 1)
			status := statuses[0].Status
			assert.Equal(t, v1.PhaseCreating, status.Phase)
			assert.Equal(t, ReasonCreating, status.Reason)
			assert.Equal(t, int64(1), status.ObservedGeneration)
			assert.Equal(t, tt.job.Spec, statuses[0].Spec, "a status write carries the spec unchanged")
			assert.Equal(t, v1.PhaseCreating, f.getJob("mnist").Status.Phase, "the status reached the API server")
		})
	}
}

// TestSyncSteadyStateWritesNothing is defect 7 of the original: once the
// objects and the status are what the job asks for, a sync writes nothing
// and records no event.
func TestSyncSteadyStateWritesNothing(t *testing.T) {
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		trainers   int32 // the trainer ReplicaSet's replicas; 0: created by the controller
		pods       int   // running trainer pods (with the master and pservers ready); 0: none
		wantPhase  v1.TrainingJobPhase
		wantEvents []string // "type reason" of the events on the way
	}{
		{name: "new plain job", job: newJob("mnist"), wantPhase: v1.PhaseCreating,
			wantEvents: []string{"Normal Created", "Normal Created", "Normal Created"}},
		{name: "new fault-tolerant job", job: newJob("mnist", faultTolerant()), wantPhase: v1.PhaseCreating,
			wantEvents: []string{"Normal Created", "Normal Created", "Normal Created", "Normal Created", "Normal Created"}},
		{name: "running plain job", job: newJob("mnist"), trainers: 2, pods: 2, wantPhase: v1.PhaseRunning,
			wantEvents: []string{"Normal Running"}},
		{name: "running fault-tolerant job", job: newJob("mnist", faultTolerant()), trainers: 2, pods: 2, wantPhase: v1.PhaseRunning,
			wantEvents: []string{"Normal Running"}},
		{name: "running job the autoscaler grew", job: newJob("mnist", faultTolerant(), withTrainers(2, 6)), trainers: 5, pods: 5, wantPhase: v1.PhaseRunning,
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

func TestSyncClampsTrainerReplicas(t *testing.T) {
	tests := []struct {
		name      string
		replicas  int32
		wantPatch string // "" means no patch
		wantEvent string
		wantAfter int32
	}{
		{"below min-instance", 1, `[{"op":"replace","path":"/spec/replicas","value":2}]`, "Normal Scaled Scaled ReplicaSet mnist-trainer from 1 to 2: clamped into [2, 6]", 2},
		{"zero", 0, `[{"op":"replace","path":"/spec/replicas","value":2}]`, "Normal Scaled Scaled ReplicaSet mnist-trainer from 0 to 2: clamped into [2, 6]", 2},
		{"above max-instance", 99, `[{"op":"replace","path":"/spec/replicas","value":6}]`, "Normal Scaled Scaled ReplicaSet mnist-trainer from 99 to 6: clamped into [2, 6]", 6},
		{"inside the range: the autoscaler's", 4, "", "", 4},
		{"at max-instance", 6, "", "", 6},
		{"at min-instance", 2, "", "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := newJob("mnist", faultTolerant(), withTrainers(2, 6))
			f := newFixture(t)
			f.addJob(job)
			f.addJobObjects(job, 2)
			f.settle("mnist")

			// A foreign write (a person, another controller) sets the count.
			rs := f.getReplicaSet("mnist-trainer")
			rs.Spec.Replicas = &tt.replicas
			f.updateReplicaSet(rs)

			require.NoError(t, f.sync("mnist"))
			if tt.wantPatch == "" {
				assert.Empty(t, f.writesOf("replicasets"))
				assert.Empty(t, f.events())
			} else {
				assert.Equal(t, []string{"patch replicasets mnist-trainer"}, f.writesOf("replicasets"))
				assert.JSONEq(t, tt.wantPatch, string(f.patchOf("replicasets", "mnist-trainer")))
				assert.Equal(t, []string{tt.wantEvent}, f.events())
			}
			assert.Equal(t, tt.wantAfter, *f.getReplicaSet("mnist-trainer").Spec.Replicas)
			assert.Empty(t, f.writesOf("services"))

			f.feedBack()
			f.reset()
			require.NoError(t, f.sync("mnist"))
			assert.Empty(t, f.writesOf("replicasets"), "clamped once")
		})
	}
}

// TestSyncPatchesAChangedTemplate changes the job's spec and checks that the
// ReplicaSets' pod templates, once patched, are what the new spec builds.
func TestSyncPatchesAChangedTemplate(t *testing.T) {
	tests := []struct {
		name    string
		before  []jobMutator
		change  jobMutator
		trainer bool // only the trainer template changes
	}{
		{name: "image", change: withImage("paddlepaddle/paddlecloud-job:v2")},
		{name: "trainer entrypoint", change: withSpec(func(s *v1.TrainingJobSpec) { s.Trainer.Entrypoint = "python other.py" })},
		{
			name:   "volumes replaced",
			before: []jobMutator{withSpec(func(s *v1.TrainingJobSpec) { s.Volumes = []corev1.Volume{{Name: "a"}, {Name: "b"}} })},
			change: withSpec(func(s *v1.TrainingJobSpec) { s.Volumes = []corev1.Volume{{Name: "c"}} }),
		},
		{
			name:   "host network turned off",
			before: []jobMutator{withSpec(func(s *v1.TrainingJobSpec) { s.HostNetwork = true })},
			change: withSpec(func(s *v1.TrainingJobSpec) { s.HostNetwork = false }),
		},
		{
			name:   "a nodeSelector key removed",
			before: []jobMutator{withSpec(func(s *v1.TrainingJobSpec) { s.NodeSelector = map[string]string{"disk": "ssd", "zone": "a"} })},
			change: withSpec(func(s *v1.TrainingJobSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} }),
		},
		{
			name: "volumes removed",
			before: []jobMutator{withSpec(func(s *v1.TrainingJobSpec) {
				s.Volumes = []corev1.Volume{{Name: "data"}}
				s.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			})},
			change: withSpec(func(s *v1.TrainingJobSpec) { s.Volumes, s.VolumeMounts = nil, nil }),
		},
		{
			name:   "priority class cleared",
			before: []jobMutator{withSpec(func(s *v1.TrainingJobSpec) { s.PriorityClassName = "batch-low" })},
			change: withSpec(func(s *v1.TrainingJobSpec) { s.PriorityClassName = "" }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := newJob("mnist", append([]jobMutator{withTrainers(2, 6)}, tt.before...)...)
			f := newFixture(t)
			f.addJob(job)
			f.addJobObjects(job, 4) // the autoscaler's count
			f.settle("mnist")

			changed := f.getJob("mnist")
			tt.change(changed)
			changed.Generation = 2
			f.updateJob(changed)

			require.NoError(t, f.sync("mnist"))
			changedRoles := []Role{RolePserver, RoleTrainer}
			if tt.trainer {
				changedRoles = []Role{RoleTrainer}
			}
			var wantPatches []string
			for _, role := range changedRoles {
				wantPatches = append(wantPatches, "patch replicasets "+ReplicaSetName("mnist", role))
			}
			assert.Equal(t, wantPatches, f.writesOf("replicasets"))
			assert.Empty(t, f.events(), "a template patch is no scaling edge")

			for _, role := range changedRoles {
				name := ReplicaSetName("mnist", role)
				want := ReplicaSet(changed, role, 1, nil)
				var ops []jsonPatchOp
				require.NoError(t, json.Unmarshal(f.patchOf("replicasets", name), &ops))
				paths := map[string]any{}
				for _, op := range ops {
					paths[op.Path] = op.Value
				}
				assert.Equal(t, want.Annotations[AnnotationTemplateHash], paths["/metadata/annotations/edl.paddlepaddle.org~1template-hash"], name)
				assert.Contains(t, paths, "/spec/template", name)
				assert.NotContains(t, paths, "/spec/replicas", "%s: the count is not the template's business", name)

				stored := f.getReplicaSet(name)
				assert.Equal(t, want.Annotations[AnnotationTemplateHash], stored.Annotations[AnnotationTemplateHash], name)
				// The patched template must be the one the new spec builds:
				// its hash is on the annotation now, so no later sync fixes it.
				assert.Equal(t, templateFields(want.Spec.Template), templateFields(stored.Spec.Template), name)
				assert.Equal(t, want.Annotations[AnnotationTemplateHash], TemplateHash(&stored.Spec.Template),
					"%s: the stored template hashes to its annotation", name)
			}
			assert.Equal(t, int32(4), *f.getReplicaSet("mnist-trainer").Spec.Replicas, "the autoscaler's count is kept")
			assert.Equal(t, int64(2), f.getJob("mnist").Status.ObservedGeneration)

			f.feedBack()
			f.reset()
			require.NoError(t, f.sync("mnist"))
			assert.Empty(t, f.writesOf("replicasets"), "patched once")
		})
	}
}

// templateFields are the parts of a pod template the tests change, compact
// enough to read in a failure.
type podTemplateFields struct {
	Image, PriorityClassName string
	DNSPolicy                corev1.DNSPolicy
	Command                  []string
	HostNetwork              bool
	NodeSelector             map[string]string
	Volumes                  []string
	VolumeMounts             []string
}

func templateFields(t corev1.PodTemplateSpec) podTemplateFields {
	c := t.Spec.Containers[0]
	out := podTemplateFields{
		Image: c.Image, PriorityClassName: t.Spec.PriorityClassName, DNSPolicy: t.Spec.DNSPolicy,
		Command: c.Command, HostNetwork: t.Spec.HostNetwork, NodeSelector: t.Spec.NodeSelector,
	}
	for _, v := range t.Spec.Volumes {
		out.Volumes = append(out.Volumes, v.Name)
	}
	for _, m := range c.VolumeMounts {
		out.VolumeMounts = append(out.VolumeMounts, m.Name+":"+m.MountPath)
	}
	return out
}

func TestSyncLeavesForeignObjectsAlone(t *testing.T) {
	job := newJob("mnist")
	foreignRS := func(muts ...rsMutator) func(*fixture) string {
		return func(f *fixture) string {
			f.addReplicaSet(ownedReplicaSet(job, RoleTrainer, 3, muts...))
			return "ReplicaSet mnist-trainer"
		}
	}
	tests := []struct {
		name string
		seed func(*fixture) string // seeds the foreign object, returns how it is named
	}{
		{"a ReplicaSet without owner", foreignRS(noOwner())},
		{"a ReplicaSet of a deleted job of the same name", foreignRS(ownedByUID("uid-of-the-old-mnist"))},
		{"a ReplicaSet of a Deployment", foreignRS(controlledByKind("apps/v1", "Deployment", "web"))},
		{"a Service without owner", func(f *fixture) string {
			svc := Service(job, RolePserver)
			svc.OwnerReferences = nil
			f.addService(svc)
			return "Service mnist-pserver"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(job)
			what := tt.seed(f)
			before := f.kubeObjects()

			require.NoError(t, f.sync("mnist"))

			assert.Equal(t, []string{"update trainingjobs/status mnist"}, f.writeStrings(), "nothing created, patched or deleted")
			status := f.getJob("mnist").Status
			assert.Equal(t, v1.PhasePending, status.Phase)
			assert.Equal(t, ReasonBlocked, status.Reason)
			assert.Contains(t, status.Message, what)
			blocked := condition(status, ConditionBlocked)
			require.NotNil(t, blocked)
			assert.Equal(t, metav1.ConditionTrue, blocked.Status)
			assert.Contains(t, blocked.Message, what)
			events := f.events()
			require.Len(t, events, 1)
			assert.True(t, strings.HasPrefix(events[0], "Warning Blocked "), events[0])
			assert.Contains(t, events[0], what)

			f.feedBack()
			f.reset()
			require.NoError(t, f.sync("mnist"))
			assert.Empty(t, f.writeStrings(), "still blocked: nothing to write")
			assert.Empty(t, f.events(), "one Blocked event per edge")
			assert.Equal(t, before, f.kubeObjects(), "the foreign object is untouched")
		})
	}

	t.Run("the job proceeds once the object is gone", func(t *testing.T) {
		f := newFixture(t)
		f.addJob(job)
		foreignRS(noOwner())(f)
		f.settle("mnist")
		assert.Equal(t, int32(3), *f.getReplicaSet("mnist-trainer").Spec.Replicas, "the foreign ReplicaSet is untouched")
		assert.Empty(t, f.getReplicaSet("mnist-trainer").OwnerReferences, "and not adopted")

		require.NoError(t, f.kube.Tracker().Delete(gvrReplicaSets, testNamespace, "mnist-trainer"))
		require.NoError(t, f.rsIndexer().Delete(ownedReplicaSet(job, RoleTrainer, 3)))
		require.NoError(t, f.sync("mnist"))

		assert.Equal(t, []string{
			"create services mnist-pserver",
			"create replicasets mnist-pserver",
			"create replicasets mnist-trainer",
			"update trainingjobs/status mnist",
		}, f.writeStrings())
		blocked := condition(f.getJob("mnist").Status, ConditionBlocked)
		require.NotNil(t, blocked)
		assert.Equal(t, metav1.ConditionFalse, blocked.Status)
	})
}

func TestSyncInvalidJob(t *testing.T) {
	tests := []struct {
		name  string
		mut   jobMutator
		field string
	}{
		{"trainer min-instance 0", withTrainers(0, 6), "spec.trainer.min-instance"},
		{"trainer min-instance above max-instance", withTrainers(7, 6), "spec.trainer.min-instance"},
		{"no image", withImage(""), "spec.image"},
		{"pserver min-instance 0", withPservers(0), "spec.pserver.min-instance"},
		{"ports_num 0", withPorts(7164, 0, 1), "spec.ports_num"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(newJob("mnist", tt.mut))

			require.NoError(t, f.sync("mnist"), "a spec error is permanent: no requeue")

			assert.Equal(t, []string{"update trainingjobs/status mnist"}, f.writeStrings(), "nothing created for an invalid job")
			status := f.getJob("mnist").Status
			assert.Equal(t, v1.PhaseFailed, status.Phase)
			assert.Equal(t, ReasonInvalid, status.Reason)
			assert.Contains(t, status.Message, tt.field)
			assert.Equal(t, int64(1), status.ObservedGeneration)
			failed := condition(status, ConditionFailed)
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
	f.addJob(newJob("mnist", withTrainers(0, 6),
		withPhase(v1.PhaseSucceeded, ReasonSucceeded, "trainer pod mnist-trainer-a container trainer exited with code 0"),
		withCondition(ConditionComplete, metav1.ConditionTrue, ReasonSucceeded)))

	require.NoError(t, f.sync("mnist"))

	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseSucceeded, status.Phase, "a final phase is final")
	assert.Nil(t, condition(status, ConditionFailed))
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
		{"a trainer exited 0", newJob("mnist"), trainerPod("mnist-trainer-z", exited(0)),
			v1.PhaseSucceeded, ReasonSucceeded, "Normal Succeeded trainer pod mnist-trainer-z container trainer exited with code 0; every ReplicaSet is scaled to 0"},
		{"a fault-tolerant trainer exited 0 in its last run", newJob("mnist", faultTolerant()), trainerPod("mnist-trainer-z", running(), lastExited(0), restarts(1)),
			v1.PhaseSucceeded, ReasonSucceeded, "Normal Succeeded trainer pod mnist-trainer-z container trainer exited with code 0; every ReplicaSet is scaled to 0"},
		{"a plain trainer failed", newJob("mnist"), trainerPod("mnist-trainer-z", exited(2)),
			v1.PhaseFailed, ReasonTrainerFailed, "Warning Failed trainer pod mnist-trainer-z container trainer exited with code 2; the job is not fault tolerant"},
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
				name := ReplicaSetName("mnist", role)
				wantPatches = append(wantPatches, "patch replicasets "+name)
				assert.JSONEq(t, `[{"op":"replace","path":"/spec/replicas","value":0}]`, string(f.patchOf("replicasets", name)))
				assert.Equal(t, int32(0), *f.getReplicaSet(name).Spec.Replicas)
				wantScaled = append(wantScaled, "Normal Scaled")
			}
			assert.Equal(t, wantPatches, f.writesOf("replicasets"))
			events := f.events()
			assert.Equal(t, append(wantScaled, strings.Join(strings.SplitN(tt.wantEvent, " ", 3)[:2], " ")), eventPrefixes(events))
			assert.Contains(t, events, tt.wantEvent)
			for _, e := range events[:len(wantScaled)] {
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
				assert.Equal(t, int32(0), *f.getReplicaSet(ReplicaSetName("mnist", role)).Spec.Replicas)
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

func TestSyncJobNotFound(t *testing.T) {
	for _, key := range []string{"team-a/ghost", "other/mnist"} {
		t.Run(key, func(t *testing.T) {
			f := newFixture(t)
			f.addJob(newJob("mnist"))
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
	job := newJob("mnist")
	f.addJob(job)
	f.addJob(newJob("other"))
	f.addJobObjects(job, 2)
	f.addPods(healthyPods(job, 2)...)
	// Pods of another job and of another namespace with the same job name
	// must not count.
	f.addPods(healthyPods(newJob("other"), 2)...)
	stranger := newPod(job, RoleTrainer, "mnist-trainer-x", exited(1))
	stranger.Namespace = "team-b"
	f.addPods(stranger)

	require.NoError(t, f.sync("mnist"))
	status := f.getJob("mnist").Status
	assert.Equal(t, v1.PhaseRunning, status.Phase, status.Message)
	assert.Equal(t, v1.ReplicaStatus{Desired: 2, Current: 2, Ready: 0, Summary: "0/2"}, status.Trainers)
	assert.Equal(t, v1.ReplicaStatus{Desired: 1, Current: 1, Ready: 1, Summary: "1/1"}, status.Pservers)
}

// ---------------------------------------------------------------------------
// Event handlers: they only map objects to job keys.

func TestEnqueueOwner(t *testing.T) {
	job := newJob("mnist")
	svcWithoutOwner := Service(job, RoleMaster)
	svcWithoutOwner.OwnerReferences = nil
	tests := []struct {
		name      string
		jobExists bool
		obj       any
		want      []string
	}{
		{"owned ReplicaSet", true, ownedReplicaSet(job, RoleTrainer, 2), []string{"team-a/mnist"}},
		{"owned ReplicaSet of a job not in the cache", false, ownedReplicaSet(job, RolePserver, 2), []string{"team-a/mnist"}},
		{"owned Service", true, Service(job, RolePserver), []string{"team-a/mnist"}},
		{"tombstone of an owned ReplicaSet", true,
			cache.DeletedFinalStateUnknown{Key: "team-a/mnist-trainer", Obj: ownedReplicaSet(job, RoleTrainer, 2)}, []string{"team-a/mnist"}},
		{"ReplicaSet of a deleted job of the same name", true, ownedReplicaSet(job, RoleTrainer, 2, ownedByUID("old")), []string{"team-a/mnist"}},
		{"foreign ReplicaSet in a job's way", true, ownedReplicaSet(job, RoleTrainer, 2, noOwner()), []string{"team-a/mnist"}},
		{"tombstone of a foreign ReplicaSet in a job's way", true,
			cache.DeletedFinalStateUnknown{Key: "team-a/mnist-trainer", Obj: ownedReplicaSet(job, RoleTrainer, 2, noOwner())}, []string{"team-a/mnist"}},
		{"foreign Service in a job's way", true, svcWithoutOwner, []string{"team-a/mnist"}},
		{"foreign ReplicaSet with a job's name but no job", false, ownedReplicaSet(job, RoleTrainer, 2, noOwner()), nil},
		// A Deployment's ReplicaSet in the way blocks the job as much as an
		// ownerless one does; when it goes away the job must hear of it.
		{"ReplicaSet of a Deployment in a job's way", true,
			ownedReplicaSet(job, RoleTrainer, 2, controlledByKind("apps/v1", "Deployment", "web")), []string{"team-a/mnist"}},
		{"ReplicaSet of a Deployment elsewhere", true, func() *appsv1.ReplicaSet {
			rs := ownedReplicaSet(job, RoleTrainer, 2, controlledByKind("apps/v1", "Deployment", "web"))
			rs.Name = "web-5d4f8"
			return rs
		}(), nil},
		{"unrelated ownerless ReplicaSet", true, func() *appsv1.ReplicaSet {
			rs := ownedReplicaSet(job, RoleTrainer, 2, noOwner())
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
	otherNS := newPod(job, RoleTrainer, "p")
	otherNS.Namespace = "team-b"
	unlabelled := newPod(job, RoleTrainer, "p")
	unlabelled.Labels = map[string]string{"app": "web"}
	tests := []struct {
		name string
		obj  any
		want []string
	}{
		{"trainer", newPod(job, RoleTrainer, "p"), []string{"team-a/mnist"}},
		{"pserver", newPod(job, RolePserver, "p"), []string{"team-a/mnist"}},
		{"master", newPod(job, RoleMaster, "p"), []string{"team-a/mnist"}},
		{"another namespace", otherNS, []string{"team-b/mnist"}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "team-a/p", Obj: newPod(job, RoleTrainer, "p")}, []string{"team-a/mnist"}},
		{"not a job's pod", unlabelled, nil},
		{"not a pod", ownedReplicaSet(job, RoleTrainer, 1), nil},
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
	pod := func(rv string) *corev1.Pod { return newPod(job, RoleTrainer, "p", withPodRV(rv)) }
	rs := func(rv string) *appsv1.ReplicaSet { return ownedReplicaSet(job, RoleTrainer, 2, withRSRV(rv)) }
	tests := []struct {
		name     string
		old, cur any
		enqueue  func(*Controller) func(any)
		wantLen  int
	}{
		{"pod resync with the same resourceVersion", pod("7"), pod("7"), func(c *Controller) func(any) { return c.enqueuePodJob }, 0},
		{"pod changed", pod("7"), pod("8"), func(c *Controller) func(any) { return c.enqueuePodJob }, 1},
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
		names = append(names, o.(*corev1.Pod).Name)
	}
	assert.ElementsMatch(t, []string{"mnist-master-0", "mnist-pserver-a", "mnist-trainer-a", "mnist-trainer-b"}, names)
}

// TestEventsWaitForTheStatusWrite: an edge is recorded only once the status
// that marks it is stored. A sync from a stale cache computes the same edge,
// and its write fails on the old resourceVersion; it must not repeat the
// event.
func TestEventsWaitForTheStatusWrite(t *testing.T) {
	job := newJob("mnist", withTrainers(2, 6))
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
	resources := corev1.ResourceRequirements{Limits: resourceList(string(mig), "2", "cpu", "4")}
	for _, c := range []struct {
		opts          []Option
		count, useGPU string
	}{
		{nil, "4", "false"},
		{[]Option{WithGPUResources([]corev1.ResourceName{mig})}, "2", "true"},
	} {
		f := newFixture(t, c.opts...)
		f.addJob(newJob("mnist", withTrainerResources(resources)))
		require.NoError(t, f.sync("mnist"))
		env := f.getReplicaSet("mnist-trainer").Spec.Template.Spec.Containers[0].Env
		assert.Equal(t, c.count, envValue(t, env, "PADDLE_INIT_TRAINER_COUNT"))
		assert.Equal(t, c.useGPU, envValue(t, env, "PADDLE_INIT_USE_GPU"))
	}
}
