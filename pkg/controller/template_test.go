package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/cluster"
	"github.com/paddlepaddle/edl/pkg/framework/pytorch"
	"github.com/paddlepaddle/edl/pkg/frameworks"
	"github.com/paddlepaddle/edl/pkg/testing/builders"
)

// frameworkJobs is a job of each framework, every role it runs present.
func frameworkJobs() map[v1.Framework]*v1.TrainingJob {
	return map[v1.Framework]*v1.TrainingJob{
		v1.FrameworkPaddlePaddle: builders.Job("paddle", testNamespace, builders.Trainers(1, 4), builders.Pservers(2), builders.Spec(func(s *v1.TrainingJobSpec) {
			s.FaultTolerant = true
			s.Trainer.Entrypoint = "python train.py"
		})),
		v1.FrameworkPyTorch: builders.Job("torch", testNamespace, builders.Trainers(1, 4), builders.Spec(func(s *v1.TrainingJobSpec) {
			s.Framework = v1.FrameworkPyTorch
			s.Pserver = v1.PserverSpec{}
			s.Trainer.Entrypoint = "python3 train.py"
		})),
		v1.FrameworkHorovod: builders.Job("hvd", testNamespace, builders.Trainers(1, 4), builders.Spec(func(s *v1.TrainingJobSpec) {
			s.Framework = v1.FrameworkHorovod
			s.Pserver = v1.PserverSpec{}
			s.Trainer.Entrypoint = "python3 train.py"
		})),
	}
}

// TestWhatEDLGivesIsReserved: every variable and volume EDL gives a role's
// pod, in every framework, is one validation refuses in a template, so a
// template can never contradict EDL unseen.
func TestWhatEDLGivesIsReserved(t *testing.T) {
	for f, job := range frameworkJobs() {
		require.Empty(t, v1.Validate(job), "%s", f)
		for _, role := range frameworks.For(&job.Spec).Roles(&job.Spec) {
			pod := PodTemplate(job, role, nil)
			for _, e := range pod.Spec.Containers[0].Env {
				assert.True(t, v1.ReservedEnv(f, e.Name), "%s %s: EDL gives %s, which a template may set", f, role, e.Name)
			}
			for _, v := range pod.Spec.Volumes {
				assert.True(t, v1.ReservedVolumes.Has(v.Name), "%s %s: EDL adds volume %s, which a template may name", f, role, v.Name)
			}
		}
	}
	assert.False(t, v1.ReservedEnv(v1.FrameworkPyTorch, "LD_LIBRARY_PATH"), "a PaddlePaddle variable is a PyTorch job's own")
	assert.False(t, v1.ReservedEnv(v1.FrameworkPyTorch, "WANDB_API_KEY"))
}

// torchWithTemplate is a PyTorch job whose trainers have a template of
// their own, as a Kubeflow user writes one.
func torchWithTemplate() *v1.TrainingJob {
	job := frameworkJobs()[v1.FrameworkPyTorch]
	job.Spec.Trainer.Entrypoint = ""
	job.Spec.NodeSelector = map[string]string{"pool": "train"}
	job.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	job.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	cache := []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
	job.Spec.Trainer.Template = &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "vision"}, Annotations: map[string]string{"note": "x"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "trainer",
			SecurityContext:    &corev1.PodSecurityContext{FSGroup: ptr.To(int64(1000))},
			InitContainers: []corev1.Container{
				{Name: "fetch", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "3")}},
				{Name: "logs", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Resources: corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "250m")}},
			},
			Containers: []corev1.Container{{
				Name:    "pytorch",
				Image:   "example/torch:v2",
				Command: []string{"torchrun", "--log-dir=/cache/torchrun", "/workspace/train.py"},
				Args:    []string{"--epochs", "10"},
				Env: []corev1.EnvVar{{Name: "WANDB_API_KEY", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "wandb"}, Key: "key"}}}},
				VolumeMounts: cache,
				Resources:    corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "1")},
				Ports:        []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9400}},
			}, {
				Name: "exporter", Image: "example/exporter", Resources: corev1.ResourceRequirements{Requests: builders.ResourceList("cpu", "500m")},
			}},
			Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	return job
}

func TestPodTemplateMergesTheRolesTemplate(t *testing.T) {
	job := torchWithTemplate()
	require.Empty(t, v1.Validate(job))
	tpl := PodTemplate(job, v1.RoleTrainer, nil)
	pod := tpl.Spec

	assert.Equal(t, map[string]string{"team": "vision", v1.LabelTrainer: job.Name}, tpl.Labels, "the template's labels and EDL's")
	assert.Equal(t, map[string]string{"note": "x"}, tpl.Annotations)
	require.Len(t, pod.Containers, 2, "the role's container and the template's other")
	c := pod.Containers[0]
	assert.Equal(t, "pytorch", c.Name, "the template's name is kept")
	assert.Equal(t, "example/torch:v2", c.Image, "the template's image, over spec.image")
	assert.Equal(t, []string{"python3", "-c", pytorch.Wrapper, "--log-dir=/cache/torchrun", "/workspace/train.py", "--epochs", "10"}, c.Command,
		"the template's torchrun line, under EDL's wrapper, its options as written")
	assert.Empty(t, c.Args, "the args are part of the launch line")
	env := envMap(t, c.Env)
	assert.Equal(t, "wandb", env["WANDB_API_KEY"].ValueFrom.SecretKeyRef.Name, "the template's variable from a Secret")
	assert.Equal(t, "WANDB_API_KEY", c.Env[0].Name, "the template's variables first")
	assert.Contains(t, env, "PET_NNODES", "and EDL's")
	assert.Contains(t, env, EnvProgressConfigMap)
	assert.Equal(t, []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "data", MountPath: "/data"}, {Name: "edl-state", MountPath: "/var/lib/edl"}}, c.VolumeMounts)
	assert.Equal(t, "1", c.Resources.Requests.Cpu().String(), "the template's resources")
	assert.Equal(t, "metrics", c.Ports[0].Name)
	assert.Equal(t, "exporter", pod.Containers[1].Name, "a sidecar as written")
	assert.Len(t, pod.InitContainers, 2)

	assert.Equal(t, "trainer", pod.ServiceAccountName, "the template's account")
	assert.Equal(t, int64(1000), *pod.SecurityContext.FSGroup)
	assert.Equal(t, corev1.RestartPolicyAlways, pod.RestartPolicy)
	assert.Equal(t, map[string]string{"pool": "train"}, pod.NodeSelector, "placement is the job's")
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	assert.Equal(t, []string{"cache", "data", "edl-state"}, volumes)
	assert.Equal(t, int64(v1.DefaultGracePeriodSeconds), *pod.TerminationGracePeriodSeconds)

	// The progress contract's binding follows the template's account.
	assert.Equal(t, "trainer", TrainerAccount(job))
	assert.Equal(t, "trainer", ProgressRoleBinding(job).Subjects[0].Name)
	assert.Equal(t, v1.ProgressServiceAccountName(job.Name), TrainerAccount(frameworkJobs()[v1.FrameworkPyTorch]))

	// The job's own object is left as it was.
	assert.Len(t, job.Spec.Trainer.Template.Spec.Containers[0].Env, 1)
	assert.Len(t, job.Spec.Trainer.Template.Spec.Volumes, 1)
}

// TestTheTemplatesPodIsPriced: the autoscaler prices one more trainer from
// the trainer ReplicaSet's pod template, so an init container and a
// sidecar count as the API server counts them: the sidecar (an init
// container that restarts always) beside the containers, the largest of
// the init containers (each with the sidecars started before it) if more.
func TestTheTemplatesPodIsPriced(t *testing.T) {
	job := torchWithTemplate()
	rs := ReplicaSet(job, v1.RoleTrainer, 1, nil)
	kubeInf := informers.NewSharedInformerFactory(k8sfake.NewClientset(), 0)
	tracker, err := cluster.New(cluster.Config{PodInformer: kubeInf.Core().V1().Pods(), NodeInformer: kubeInf.Core().V1().Nodes()})
	require.NoError(t, err)
	req := tracker.PodRequest(&rs.Spec.Template.Spec)
	// Containers 1 + 0.5, the sidecar 0.25: 1.75; the init container
	// fetch runs alone (before the sidecar): 3.
	assert.Equal(t, int64(3000), req.CPUMilli, "the init container's 3 CPUs bound the pod")

	job.Spec.Trainer.Template.Spec.InitContainers[0].Resources.Requests = builders.ResourceList("cpu", "1")
	rs = ReplicaSet(job, v1.RoleTrainer, 1, nil)
	req = tracker.PodRequest(&rs.Spec.Template.Spec)
	assert.Equal(t, int64(1750), req.CPUMilli, "the containers and the sidecar")
}

// TestATemplateWithoutCommandKeepsTheEntrypoint: a template that gives no
// command leaves the launch line to spec.trainer.entrypoint.
func TestATemplateWithoutCommandKeepsTheEntrypoint(t *testing.T) {
	job := torchWithTemplate()
	job.Spec.Trainer.Template.Spec.Containers[0].Command = nil
	job.Spec.Trainer.Template.Spec.Containers[0].Args = nil
	job.Spec.Trainer.Entrypoint = "python3 -u train.py"
	require.Empty(t, v1.Validate(job))
	c := PodTemplate(job, v1.RoleTrainer, nil).Spec.Containers[0]
	assert.Equal(t, "--no-python python3 -u train.py", strings.Join(c.Command[3:], " "))
}

// TestJobsWithoutTemplatesKeepTheirPods: a job without templates gets the
// pods it got before templates existed, to the hash: an upgrade of edl
// must not roll every running job's pods. (The hashes were taken from the
// PodTemplate of the release before templates. The PyTorch trainer's
// changed once since, with its wrapper (edl_torchrun.py), which now prints
// the failure of the run before first: a changed template reaches the
// trainers created after the upgrade, and restarts no running one.)
func TestJobsWithoutTemplatesKeepTheirPods(t *testing.T) {
	jobs := frameworkJobs()
	for _, c := range []struct {
		f    v1.Framework
		role v1.Role
		hash string
	}{
		{v1.FrameworkPaddlePaddle, v1.RoleMaster, "g5krgrn4hv9b"},
		{v1.FrameworkPaddlePaddle, v1.RolePserver, "2x8i56igtmj94"},
		{v1.FrameworkPaddlePaddle, v1.RoleTrainer, "sy9o8ihszzh9"},
		{v1.FrameworkPyTorch, v1.RoleMaster, "1rt5kvm3ew0uj"},
		{v1.FrameworkPyTorch, v1.RoleTrainer, "1idipvu1jexx9"},
		{v1.FrameworkHorovod, v1.RoleMaster, "3h1tlkh4oq651"},
		{v1.FrameworkHorovod, v1.RoleTrainer, "2l1uex109e4i8"},
	} {
		tpl := PodTemplate(jobs[c.f], c.role, nil)
		assert.Equal(t, c.hash, TemplateHash(&tpl), "%s %s", c.f, c.role)
	}
}
