package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

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
			job := builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Trainers(2, 6))
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
		before  []builders.JobOption
		change  builders.JobOption
		trainer bool // only the trainer template changes
	}{
		{name: "image", change: builders.Image("paddlepaddle/paddlecloud-job:v2")},
		{name: "trainer entrypoint", change: builders.Spec(func(s *v1.TrainingJobSpec) { s.Trainer.Entrypoint = "python other.py" })},
		{
			name:   "volumes replaced",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) { s.Volumes = []corev1.Volume{{Name: "a"}, {Name: "b"}} })},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.Volumes = []corev1.Volume{{Name: "c"}} }),
		},
		{
			name:   "host network turned off",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) { s.HostNetwork = true })},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.HostNetwork = false }),
		},
		{
			name:   "a nodeSelector key removed",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) { s.NodeSelector = map[string]string{"disk": "ssd", "zone": "a"} })},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.NodeSelector = map[string]string{"disk": "ssd"} }),
		},
		{
			name: "tolerations removed",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			})},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.Tolerations = nil }),
		},
		{
			name:   "node affinity narrowed",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) { s.Affinity = poolAffinity("gpu-a", "gpu-b") })},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.Affinity = poolAffinity("gpu-a") }),
		},
		{
			name:   "scheduler name set",
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.SchedulerName = "bin-packing" }),
		},
		{
			name: "volumes removed",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) {
				s.Volumes = []corev1.Volume{{Name: "data"}}
				s.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			})},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.Volumes, s.VolumeMounts = nil, nil }),
		},
		{
			name:   "priority class cleared",
			before: []builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) { s.PriorityClassName = "batch-low" })},
			change: builders.Spec(func(s *v1.TrainingJobSpec) { s.PriorityClassName = "" }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := builders.Job("mnist", testNamespace, append([]builders.JobOption{builders.Trainers(2, 6)}, tt.before...)...)
			f := newFixture(t)
			f.addJob(job)
			f.addJobObjects(job, 4) // the autoscaler's count
			f.settle("mnist")

			changed := f.getJob("mnist")
			tt.change(changed)
			changed.Generation = 2
			f.updateJob(changed)

			require.NoError(t, f.sync("mnist"))
			changedRoles := []v1.Role{v1.RolePserver, v1.RoleTrainer}
			if tt.trainer {
				changedRoles = []v1.Role{v1.RoleTrainer}
			}
			var wantPatches []string
			for _, role := range changedRoles {
				wantPatches = append(wantPatches, "patch replicasets "+v1.ReplicaSetName("mnist", role))
			}
			assert.Equal(t, wantPatches, f.writesOf("replicasets"))
			assert.Empty(t, f.events(), "a template patch is no scaling edge")

			for _, role := range changedRoles {
				name := v1.ReplicaSetName("mnist", role)
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
	Tolerations              []corev1.Toleration
	Affinity                 *corev1.Affinity
	SchedulerName            string
	Volumes                  []string
	VolumeMounts             []string
}

// poolAffinity requires nodes whose label pool is one of pools.
func poolAffinity(pools ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: pools},
		}}},
	}}}
}

func templateFields(t corev1.PodTemplateSpec) podTemplateFields {
	c := t.Spec.Containers[0]
	out := podTemplateFields{
		Image: c.Image, PriorityClassName: t.Spec.PriorityClassName, DNSPolicy: t.Spec.DNSPolicy,
		Command: c.Command, HostNetwork: t.Spec.HostNetwork, NodeSelector: t.Spec.NodeSelector,
		Tolerations: t.Spec.Tolerations, Affinity: t.Spec.Affinity, SchedulerName: t.Spec.SchedulerName,
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
	job := builders.Job("mnist", testNamespace)
	foreignRS := func(muts ...builders.ReplicaSetOption) func(*fixture) string {
		return func(f *fixture) string {
			f.addReplicaSet(builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 3, nil), muts...))
			return "ReplicaSet mnist-trainer"
		}
	}
	tests := []struct {
		name string
		seed func(*fixture) string // seeds the foreign object, returns how it is named
	}{
		{"a ReplicaSet without owner", foreignRS(builders.NoOwner())},
		{"a ReplicaSet of a deleted job of the same name", foreignRS(builders.OwnerUID("uid-of-the-old-mnist"))},
		{"a ReplicaSet of a Deployment", foreignRS(builders.ControlledBy("apps/v1", "Deployment", "web"))},
		{"a Service without owner", func(f *fixture) string {
			svc := Service(job, v1.RolePserver)
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
			assert.Equal(t, v1.ReasonBlocked, status.Reason)
			assert.Contains(t, status.Message, what)
			blocked := condition(status, v1.ConditionBlocked)
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
		foreignRS(builders.NoOwner())(f)
		f.settle("mnist")
		assert.Equal(t, int32(3), *f.getReplicaSet("mnist-trainer").Spec.Replicas, "the foreign ReplicaSet is untouched")
		assert.Empty(t, f.getReplicaSet("mnist-trainer").OwnerReferences, "and not adopted")

		require.NoError(t, f.kube.Tracker().Delete(gvrReplicaSets, testNamespace, "mnist-trainer"))
		require.NoError(t, f.rsIndexer().Delete(builders.ReplicaSet(ReplicaSet(job, v1.RoleTrainer, 3, nil))))
		require.NoError(t, f.sync("mnist"))

		assert.Equal(t, []string{
			"create serviceaccounts mnist-trainer",
			"create roles mnist-progress",
			"create rolebindings mnist-progress",
			"create configmaps mnist-progress",
			"create services mnist-pserver",
			"create replicasets mnist-pserver",
			"create replicasets mnist-trainer",
			"update trainingjobs/status mnist",
		}, f.writeStrings())
		blocked := condition(f.getJob("mnist").Status, v1.ConditionBlocked)
		require.NotNil(t, blocked)
		assert.Equal(t, metav1.ConditionFalse, blocked.Status)
	})
}
