package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"

	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

func envMap(t *testing.T, env []corev1.EnvVar) map[string]corev1.EnvVar {
	t.Helper()
	out := map[string]corev1.EnvVar{}
	for _, e := range env {
		_, dup := out[e.Name]
		assert.False(t, dup, "duplicate env %s", e.Name)
		out[e.Name] = e
	}
	return out
}

func envValue(t *testing.T, env []corev1.EnvVar, name string) string {
	t.Helper()
	e, ok := envMap(t, env)[name]
	require.True(t, ok, "env %s missing", name)
	require.Nil(t, e.ValueFrom, "env %s should be a plain value", name)
	return e.Value
}

func TestEnvContract(t *testing.T) {
	job := builders.Job("mnist", testNamespace, builders.Trainers(3, 8), builders.Pservers(2), builders.Ports(7000, 2, 1), builders.Spec(func(s *v1.TrainingJobSpec) {
		s.Trainer.Entrypoint = "python train.py --epochs 2"
		s.Trainer.Workspace = "/workspace/mnist"
		s.Trainer.Passes = 4
	}))
	for _, role := range allRoles {
		t.Run(string(role), func(t *testing.T) {
			env := Env(job, role, nil)
			want := map[string]string{
				"PADDLE_JOB_NAME":                  "mnist",
				"PADDLE_TRAINING_ROLE":             string(role),
				"TRAINING_ROLE":                    string(role),
				"PADDLE_PORT":                      "7000",
				"PADDLE_PSERVERS_NUM":              "2",
				"PSERVERS":                         "2",
				"PADDLE_TRAINERS_NUM":              "3",
				"TRAINERS":                         "3",
				"ENTRY":                            "python train.py --epochs 2",
				"TOPOLOGY":                         "python train.py --epochs 2",
				"TRAINER_PACKAGE":                  "/workspace/mnist",
				"PADDLE_INIT_PORT":                 "7000",
				"PADDLE_INIT_PORTS_NUM":            "2",
				"PADDLE_INIT_PORTS_NUM_FOR_SPARSE": "1",
				"PADDLE_INIT_TRAINER_COUNT":        "1",
				"PADDLE_INIT_NUM_GRADIENT_SERVERS": "3",
				"PADDLE_INIT_NUM_PASSES":           "4",
				"PADDLE_INIT_USE_GPU":              "false",
			}
			for name, value := range want {
				assert.Equal(t, value, envValue(t, env, name), name)
			}
			downward := map[string]string{
				"POD_IP":            "status.podIP",
				"PADDLE_CURRENT_IP": "status.podIP",
				"POD_NAME":          "metadata.name",
				"NAMESPACE":         "metadata.namespace",
			}
			m := envMap(t, env)
			for name, path := range downward {
				e, ok := m[name]
				require.True(t, ok, "env %s missing", name)
				require.NotNil(t, e.ValueFrom, name)
				require.NotNil(t, e.ValueFrom.FieldRef, name)
				assert.Equal(t, path, e.ValueFrom.FieldRef.FieldPath, name)
				assert.Empty(t, e.Value, name)
			}
			for _, name := range []string{"PADDLE_MASTER_ENDPOINT", "PADDLE_ETCD_ENDPOINTS", "ETCD_ENDPOINTS"} {
				assert.NotContains(t, m, name, "a plain job has no master")
			}
			assert.Equal(t, env, PodTemplate(job, role, nil).Spec.Containers[0].Env, "the container carries the contract")
		})
	}
}

func TestEnvFaultTolerantEndpoints(t *testing.T) {
	tests := []struct {
		name       string
		job        *v1.TrainingJob
		master     string
		etcd       string
		noEndpoint bool
	}{
		{"plain job: none", builders.Job("mnist", testNamespace), "", "", true},
		{"fault-tolerant: the master Service", builders.Job("mnist", testNamespace, builders.FaultTolerant()),
			"mnist-master.team-a.svc:8080", "http://mnist-master.team-a.svc:2379", false},
		{"fault-tolerant with etcd-endpoint", withEtcd("http://etcd.infra:2379"),
			"mnist-master.team-a.svc:8080", "http://etcd.infra:2379", false},
		{"several endpoints, one not loopback: as given", withEtcd("127.0.0.1:2379,10.0.0.7:2379"),
			"mnist-master.team-a.svc:8080", "127.0.0.1:2379,10.0.0.7:2379", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, role := range allRoles {
				env := Env(tt.job, role, nil)
				m := envMap(t, env)
				if tt.noEndpoint {
					assert.NotContains(t, m, "PADDLE_MASTER_ENDPOINT")
					assert.NotContains(t, m, "PADDLE_ETCD_ENDPOINTS")
					assert.NotContains(t, m, "ETCD_ENDPOINTS")
					continue
				}
				assert.Equal(t, tt.master, envValue(t, env, "PADDLE_MASTER_ENDPOINT"), role)
				assert.Equal(t, tt.etcd, envValue(t, env, "PADDLE_ETCD_ENDPOINTS"), role)
				assert.Equal(t, tt.etcd, envValue(t, env, "ETCD_ENDPOINTS"), role)
			}
		})
	}
}

// The original's example job names the etcd inside the master pod by a
// loopback address; the other pods reach that etcd through the master Service.
func TestEnvLoopbackEtcdIsTheMastersOwn(t *testing.T) {
	const service = "http://mnist-master.team-a.svc:2379"
	for _, endpoint := range []string{"127.0.0.1:2379", "http://localhost:2379", "[::1]:2379", "127.0.0.2:2379, http://127.0.0.1:2379"} {
		job := withEtcd(endpoint)
		want := map[v1.Role]string{v1.RoleMaster: endpoint, v1.RolePserver: service, v1.RoleTrainer: service}
		for role, w := range want {
			env := Env(job, role, nil)
			assert.Equal(t, w, envValue(t, env, "PADDLE_ETCD_ENDPOINTS"), "%s %s", endpoint, role)
			assert.Equal(t, w, envValue(t, env, "ETCD_ENDPOINTS"), "%s %s", endpoint, role)
		}
	}
}

// withEtcd is a fault-tolerant job with master.etcd-endpoint set.
func withEtcd(endpoint string) *v1.TrainingJob {
	return builders.Job("mnist", testNamespace, builders.FaultTolerant(), builders.Spec(func(s *v1.TrainingJobSpec) { s.Master.EtcdEndpoint = endpoint }))
}

func TestEnvTrainerCount(t *testing.T) {
	mig := []corev1.ResourceName{"nvidia.com/mig-1g.5gb", "nvidia.com/gpu"}
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		gpus      []corev1.ResourceName
		count     string
		useGPU    string
	}{
		{"nothing requested: one", corev1.ResourceRequirements{}, nil, "1", "false"},
		{"whole CPUs requested", corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "4")}, nil, "4", "false"},
		{"whole CPUs as limits", corev1.ResourceRequirements{Limits: builders.ResourceList("cpu", "3")}, nil, "3", "false"},
		{"less than one CPU: one", corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "500m")}, nil, "1", "false"},
		// "its whole CPUs": 2.5 CPUs hold two whole CPUs, not three.
		{"fractional CPUs: the whole ones", corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "2500m")}, nil, "2", "false"},
		{"GPUs as limits", corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "8"), Limits: builders.ResourceList("nvidia.com/gpu", "2")}, nil, "2", "true"},
		{"GPUs as requests", corev1.ResourceRequirements{Requests: builders.ResourceList("nvidia.com/gpu", "1", "cpu", "4")}, nil, "1", "true"},
		{"zero GPUs: CPUs", corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "2"), Limits: builders.ResourceList("nvidia.com/gpu", "0")}, nil, "2", "false"},
		{"-gpu_resources names MIG slices", corev1.ResourceRequirements{Limits: builders.ResourceList("nvidia.com/mig-1g.5gb", "2", "cpu", "4")}, mig, "2", "true"},
		{"a GPU not in -gpu_resources: CPUs", corev1.ResourceRequirements{Limits: builders.ResourceList("nvidia.com/mig-1g.5gb", "2", "cpu", "4")}, nil, "4", "false"},
		{"the first name counts", corev1.ResourceRequirements{Limits: builders.ResourceList("nvidia.com/gpu", "1", "nvidia.com/mig-1g.5gb", "3")}, mig, "3", "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Env(builders.Job("a", testNamespace, builders.TrainerResources(tt.resources)), v1.RoleTrainer, tt.gpus)
			assert.Equal(t, tt.count, envValue(t, env, "PADDLE_INIT_TRAINER_COUNT"))
			assert.Equal(t, tt.useGPU, envValue(t, env, "PADDLE_INIT_USE_GPU"))
		})
	}
}

func TestEnvPasses(t *testing.T) {
	tests := []struct {
		name          string
		spec, trainer int32
		want          string
	}{
		{"trainer.passes", 0, 3, "3"},
		{"spec.passes when trainer.passes is unset", 7, 0, "7"},
		{"trainer.passes wins", 7, 3, "3"},
		{"neither", 0, 0, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := builders.Job("a", testNamespace, builders.Spec(func(s *v1.TrainingJobSpec) { s.Passes, s.Trainer.Passes = tt.spec, tt.trainer }))
			assert.Equal(t, tt.want, envValue(t, Env(job, v1.RoleTrainer, nil), "PADDLE_INIT_NUM_PASSES"))
		})
	}
}
