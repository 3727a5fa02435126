package controller

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

var allRoles = []v1.Role{v1.RoleMaster, v1.RolePserver, v1.RoleTrainer}

func TestNamesAndLabels(t *testing.T) {
	tests := []struct {
		role          v1.Role
		name, label   string
		containerName string
	}{
		{v1.RoleMaster, "mnist-master", "paddle-job-master", "master"},
		{v1.RolePserver, "mnist-pserver", "paddle-job-pserver", "pserver"},
		{v1.RoleTrainer, "mnist-trainer", "paddle-job", "trainer"},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			job := builders.Job("mnist", testNamespace, builders.FaultTolerant())
			assert.Equal(t, tt.name, v1.ReplicaSetName("mnist", tt.role))
			assert.Equal(t, tt.name, v1.ServiceName("mnist", tt.role))
			assert.Equal(t, tt.label, v1.LabelFor(tt.role))

			rs := ReplicaSet(job, tt.role, 1, nil)
			assert.Equal(t, tt.name, rs.Name)
			assert.Equal(t, testNamespace, rs.Namespace)
			want := map[string]string{tt.label: "mnist"}
			assert.Equal(t, want, rs.Labels)
			assert.Equal(t, want, rs.Spec.Selector.MatchLabels)
			assert.Equal(t, want, rs.Spec.Template.Labels, "the selector must select the template's pods")
			require.Len(t, rs.Spec.Template.Spec.Containers, 1)
			assert.Equal(t, tt.containerName, rs.Spec.Template.Spec.Containers[0].Name)
		})
	}
}

func TestOwnerReference(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.FaultTolerant())
	want := []metav1.OwnerReference{{
		APIVersion:         "paddlepaddle.org/v1",
		Kind:               "TrainingJob",
		Name:               "mnist",
		UID:                "uid-mnist",
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
	for _, role := range allRoles {
		t.Run(string(role), func(t *testing.T) {
			assert.Equal(t, want, ReplicaSet(job, role, 1, nil).OwnerReferences)
			if role != v1.RoleTrainer {
				assert.Equal(t, want, Service(job, role).OwnerReferences)
			}
		})
	}
}

// TestStartCommands pins what the original swapped: fault-tolerant jobs start
// the etcd/master path (start_new_*), plain jobs the plain one.
func TestStartCommands(t *testing.T) {
	tests := []struct {
		name string
		job  *v1.TrainingJob
		role v1.Role
		want []string
	}{
		{"fault-tolerant master", builders.Job("a", testNamespace, builders.FaultTolerant()), v1.RoleMaster, []string{"paddle_k8s", "start_master"}},
		{"fault-tolerant pserver", builders.Job("a", testNamespace, builders.FaultTolerant()), v1.RolePserver, []string{"paddle_k8s", "start_new_pserver"}},
		{"fault-tolerant trainer", builders.Job("a", testNamespace, builders.FaultTolerant()), v1.RoleTrainer, []string{"paddle_k8s", "start_new_trainer"}},
		{"plain pserver", builders.Job("a", testNamespace), v1.RolePserver, []string{"paddle_k8s", "start_pserver"}},
		{"plain trainer", builders.Job("a", testNamespace), v1.RoleTrainer, []string{"paddle_k8s", "start_trainer"}},
		{"pserver entrypoint override", builders.Job("a", testNamespace, builders.Spec(func(s *v1.TrainingJobSpec) { s.Pserver.Entrypoint = "python ps.py" })),
			v1.RolePserver, []string{"sh", "-c", "python ps.py"}},
		{"pserver entrypoint override, fault-tolerant", builders.Job("a", testNamespace, builders.FaultTolerant(), builders.Spec(func(s *v1.TrainingJobSpec) { s.Pserver.Entrypoint = "python ps.py" })),
			v1.RolePserver, []string{"sh", "-c", "python ps.py"}},
		{"trainer entrypoint goes to ENTRY, not the command", builders.Job("a", testNamespace, builders.Spec(func(s *v1.TrainingJobSpec) { s.Trainer.Entrypoint = "python t.py" })),
			v1.RoleTrainer, []string{"paddle_k8s", "start_trainer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			container := PodTemplate(tt.job, tt.role, nil).Spec.Containers[0]
			assert.Equal(t, tt.want, container.Command)
			assert.Empty(t, container.Args)
		})
	}
}

func TestPorts(t *testing.T) {
	tests := []struct {
		name      string
		job       *v1.TrainingJob
		wantFirst int32
		wantCount int
	}{
		{"defaults", builders.Job("a", testNamespace), 7164, 2},
		{"dense and sparse", builders.Job("a", testNamespace, builders.Ports(7000, 2, 3)), 7000, 5},
		{"no sparse ports", builders.Job("a", testNamespace, builders.Ports(9000, 3, 0)), 9000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []corev1.ContainerPort
			var wantSvc []corev1.ServicePort
			for i := 0; i < tt.wantCount; i++ {
				name := "jobport-" + strconv.Itoa(i)
				port := tt.wantFirst + int32(i)
				want = append(want, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
				wantSvc = append(wantSvc, corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP})
			}
			assert.Equal(t, want, PodTemplate(tt.job, v1.RolePserver, nil).Spec.Containers[0].Ports)
			assert.Equal(t, want, PodTemplate(tt.job, v1.RoleTrainer, nil).Spec.Containers[0].Ports)

			svc := Service(tt.job, v1.RolePserver)
			assert.Equal(t, wantSvc, svc.Spec.Ports)
		})
	}
}

func TestServices(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Ports(7164, 1, 1))

	t.Run("pserver is headless with the job ports", func(t *testing.T) {
		svc := Service(job, v1.RolePserver)
		assert.Equal(t, "mnist-pserver", svc.Name)
		assert.Equal(t, testNamespace, svc.Namespace)
		assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
		assert.Equal(t, map[string]string{"paddle-job-pserver": "mnist"}, svc.Spec.Selector)
		assert.Equal(t, map[string]string{"paddle-job-pserver": "mnist"}, svc.Labels)
		assert.Equal(t, []corev1.ServicePort{
			{Name: "jobport-0", Port: 7164, TargetPort: intstr.FromInt32(7164), Protocol: corev1.ProtocolTCP},
			{Name: "jobport-1", Port: 7165, TargetPort: intstr.FromInt32(7165), Protocol: corev1.ProtocolTCP},
		}, svc.Spec.Ports)
	})
	t.Run("master serves 8080 and etcd 2379", func(t *testing.T) {
		svc := Service(job, v1.RoleMaster)
		assert.Equal(t, "mnist-master", svc.Name)
		assert.Empty(t, svc.Spec.ClusterIP, "the master Service gets a cluster IP")
		assert.Equal(t, map[string]string{"paddle-job-master": "mnist"}, svc.Spec.Selector)
		assert.Equal(t, []corev1.ServicePort{
			{Name: "master", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
			{Name: "etcd", Port: 2379, TargetPort: intstr.FromInt32(2379), Protocol: corev1.ProtocolTCP},
		}, svc.Spec.Ports)
		assert.Equal(t, []corev1.ContainerPort{
			{Name: "master", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "etcd", ContainerPort: 2379, Protocol: corev1.ProtocolTCP},
		}, PodTemplate(job, v1.RoleMaster, nil).Spec.Containers[0].Ports)
	})
}

func TestResourcesPerRole(t *testing.T) {
	master := corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "500m", "memory", "256Mi")}
	pserver := corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "4", "memory", "5Gi"), Limits: builders.ResourceList("memory", "6Gi")}
	trainer := corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "5", "memory", "8Gi"), Limits: builders.ResourceList("nvidia.com/gpu", "1")}
	job := builders.Job("a", testNamespace, builders.FaultTolerant(), builders.Spec(func(s *v1.TrainingJobSpec) {
		s.Master.Resources, s.Pserver.Resources, s.Trainer.Resources = master, pserver, trainer
	}))
	for role, want := range map[v1.Role]corev1.ResourceRequirements{v1.RoleMaster: master, v1.RolePserver: pserver, v1.RoleTrainer: trainer} {
		t.Run(string(role), func(t *testing.T) {
			got := PodTemplate(job, role, nil).Spec.Containers[0].Resources
			assert.Equal(t, want, got)
			// The template owns its copy: changing it leaves the job alone.
			got.Requests[corev1.ResourceCPU] = builders.ResourceList("cpu", "99")[corev1.ResourceCPU]
			assert.Equal(t, want, resourcesOf(job, role))
		})
	}
}

func TestPodSpecOptions(t *testing.T) {
	volumes := []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}}
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	secrets := []corev1.LocalObjectReference{{Name: "registry"}}
	selector := map[string]string{"disk": "ssd"}
	tolerations := []corev1.Toleration{
		{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
	}
	affinity := &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-a", "gpu-b"}},
			}}},
		}},
		PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 10,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				TopologyKey:   "kubernetes.io/hostname",
			},
		}}},
	}
	job := builders.Job("a", testNamespace, builders.FaultTolerant(), builders.Image("registry.example/paddle:1.0"), builders.Spec(func(s *v1.TrainingJobSpec) {
		s.Volumes, s.VolumeMounts, s.ImagePullSecrets, s.NodeSelector = volumes, mounts, secrets, selector
		s.Tolerations, s.Affinity, s.SchedulerName = tolerations, affinity, "bin-packing"
		s.HostNetwork = true
		s.PriorityClassName = "batch-low"
	}))
	for _, role := range allRoles {
		t.Run(string(role), func(t *testing.T) {
			pod := PodTemplate(job, role, nil).Spec
			c := pod.Containers[0]
			assert.Equal(t, "registry.example/paddle:1.0", c.Image)
			assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
			assert.Equal(t, mounts, c.VolumeMounts)
			assert.Equal(t, volumes, pod.Volumes)
			assert.Equal(t, secrets, pod.ImagePullSecrets)
			assert.Equal(t, selector, pod.NodeSelector)
			// Where the job may run and who places it are every role's: a
			// master or pserver without the tolerations could not follow
			// its trainers onto a tainted pool.
			assert.Equal(t, tolerations, pod.Tolerations)
			assert.Equal(t, affinity, pod.Affinity)
			assert.Equal(t, "bin-packing", pod.SchedulerName)
			assert.True(t, pod.HostNetwork)
			assert.Equal(t, corev1.DNSClusterFirstWithHostNet, pod.DNSPolicy, "host-network pods must still resolve cluster names")
			assert.Equal(t, corev1.RestartPolicyAlways, pod.RestartPolicy)
			// Every role: a master or pserver at the default priority 0 would
			// be the first pod the scheduler preempts for any other work.
			assert.Equal(t, "batch-low", pod.PriorityClassName)
		})
	}

	t.Run("no host network keeps the default DNS policy", func(t *testing.T) {
		pod := PodTemplate(builders.Job("a", testNamespace), v1.RoleTrainer, nil).Spec
		assert.False(t, pod.HostNetwork)
		assert.Empty(t, pod.DNSPolicy)
		assert.Nil(t, pod.Tolerations)
		assert.Nil(t, pod.Affinity)
		assert.Empty(t, pod.SchedulerName, "empty: the API server defaults it to default-scheduler")
	})
	t.Run("the template does not alias the job's slices and maps", func(t *testing.T) {
		pod := PodTemplate(job, v1.RoleTrainer, nil).Spec
		pod.NodeSelector["disk"] = "hdd"
		pod.Volumes[0].Name = "changed"
		pod.Tolerations[0].Key = "changed"
		*pod.Tolerations[1].TolerationSeconds = 0
		pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] = "cpu"
		assert.Equal(t, "ssd", job.Spec.NodeSelector["disk"])
		assert.Equal(t, "data", job.Spec.Volumes[0].Name)
		assert.Equal(t, "nvidia.com/gpu", job.Spec.Tolerations[0].Key)
		assert.Equal(t, int64(30), *job.Spec.Tolerations[1].TolerationSeconds)
		assert.Equal(t, "gpu-a", job.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0])
	})
}

func TestTemplateHash(t *testing.T) {
	base := func(muts ...builders.JobOption) string {
		job := builders.Job("a", testNamespace, append([]builders.JobOption{builders.Spec(func(s *v1.TrainingJobSpec) {
			s.NodeSelector = map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
		})}, muts...)...)
		tpl := PodTemplate(job, v1.RoleTrainer, nil)
		return TemplateHash(&tpl)
	}
	first := base()
	require.NotEmpty(t, first)

	t.Run("stable across builds", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			require.Equal(t, first, base(), "map order must not change the hash")
		}
	})
	t.Run("the ReplicaSet carries its template's hash", func(t *testing.T) {
		rs := ReplicaSet(builders.Job("a", testNamespace), v1.RoleTrainer, 2, nil)
		assert.Equal(t, TemplateHash(&rs.Spec.Template), rs.Annotations[AnnotationTemplateHash])
	})
	t.Run("replicas do not change it", func(t *testing.T) {
		job := builders.Job("a", testNamespace)
		assert.Equal(t, ReplicaSet(job, v1.RoleTrainer, 2, nil).Annotations, ReplicaSet(job, v1.RoleTrainer, 5, nil).Annotations)
	})
	changes := []struct {
		name string
		mut  builders.JobOption
	}{
		{"image", builders.Image("paddlepaddle/paddlecloud-job:v2")},
		{"entrypoint", builders.Spec(func(s *v1.TrainingJobSpec) { s.Trainer.Entrypoint = "python other.py" })},
		{"resources", builders.TrainerResources(corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "2")})},
		{"host network", builders.Spec(func(s *v1.TrainingJobSpec) { s.HostNetwork = true })},
	}
	for _, c := range changes {
		t.Run("changes with "+c.name, func(t *testing.T) {
			assert.NotEqual(t, first, base(c.mut))
		})
	}
}

func TestReplicaSetReplicas(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Trainers(2, 6), builders.Pservers(3))
	tests := []struct {
		name    string
		role    v1.Role
		current *int32
		final   bool
		want    int32
	}{
		{"new trainer ReplicaSet starts at min-instance", v1.RoleTrainer, nil, false, 2},
		{"trainers below min are raised", v1.RoleTrainer, ptr.To[int32](1), false, 2},
		{"trainers above max are lowered", v1.RoleTrainer, ptr.To[int32](99), false, 6},
		{"trainers inside the range are the autoscaler's", v1.RoleTrainer, ptr.To[int32](4), false, 4},
		{"pservers are min-instance", v1.RolePserver, ptr.To[int32](1), false, 3},
		{"one master", v1.RoleMaster, ptr.To[int32](0), false, 1},
		{"a finished job runs nothing", v1.RoleTrainer, ptr.To[int32](4), true, 0},
		{"a finished job runs no pservers", v1.RolePserver, ptr.To[int32](3), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, desiredReplicas(job, tt.role, tt.current, tt.final))
		})
	}

	t.Run("the builder takes the replicas", func(t *testing.T) {
		rs := ReplicaSet(job, v1.RoleTrainer, desiredReplicas(job, v1.RoleTrainer, nil, false), nil)
		require.NotNil(t, rs.Spec.Replicas)
		assert.Equal(t, int32(2), *rs.Spec.Replicas)
	})
}
