package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1 "github.com/paddlepaddle/edl/pkg/apis/paddlepaddle/v1"
	"github.com/paddlepaddle/edl/pkg/kubeflow"
)

// workerTemplate is where the Worker's pod template is in a PyTorchJob.
const workerTemplate = "spec.pytorchReplicaSpecs.Worker.template"

// pytorchJobMap is a PyTorchJob of two Workers running `torchrun train.py`
// in train:v1, decoded as convert decodes it, with each of sets (a dotted
// path, a list's index a number, to a YAML value) applied in the order of
// their paths.
func pytorchJobMap(t *testing.T, name string, sets map[string]string) map[string]any {
	t.Helper()
	doc := decodeYAML(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: `+name+`}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: "train:v1", command: [torchrun, train.py]}
`).(map[string]any)
	paths := make([]string, 0, len(sets))
	for p := range sets {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		value := decodeYAML(t, sets[p])
		keys := strings.Split(p, ".")
		var parent any = doc
		for _, k := range keys[:len(keys)-1] {
			parent = step(t, parent, k)
		}
		parent.(map[string]any)[keys[len(keys)-1]] = value
	}
	return doc
}

// step is index k of a list, or the value under key k of a map, a new
// empty map when the key is missing.
func step(t *testing.T, v any, k string) any {
	t.Helper()
	if list, ok := v.([]any); ok {
		i, err := strconv.Atoi(k)
		require.NoError(t, err)
		return list[i]
	}
	m := v.(map[string]any)
	if _, ok := m[k]; !ok {
		m[k] = map[string]any{}
	}
	return m[k]
}

// pytorchJob is pytorchJobMap as a YAML document.
func pytorchJob(t *testing.T, name string, sets map[string]string) string {
	t.Helper()
	data, err := yaml.Marshal(pytorchJobMap(t, name, sets))
	require.NoError(t, err)
	return string(data)
}

// decodeYAML decodes a YAML value as kubeflow.ConvertYAML does: whole
// numbers as int64.
func decodeYAML(t *testing.T, text string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	require.NoError(t, err)
	var value any
	require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(js, &value))
	return value
}

// TestConvertRules has a case per rule of the mapping: each converts a
// small PyTorchJob, checks the TrainingJob and the exact fields noted, and
// that the TrainingJob passes v1.Validate.
func TestConvertRules(t *testing.T) {
	cases := []struct {
		name  string
		sets  map[string]string
		check func(t *testing.T, job *v1.TrainingJob)
		notes []noted
		// refusedAt is the field v1.Validate refuses the TrainingJob at,
		// "" for a job it accepts.
		refusedAt string
	}{{
		name: "a job that is not elastic runs its Master and Workers, all trainers",
		sets: map[string]string{"spec.pytorchReplicaSpecs.Master": `{replicas: 1, template: {spec: {containers: [{name: pytorch, image: "train:v1", command: [torchrun, train.py]}]}}}`},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, [2]int32{3, 3}, instances(job))
			assert.Nil(t, job.Spec.ElasticPolicy)
		},
	}, {
		name:  "replicas default to 1",
		sets:  map[string]string{"spec.pytorchReplicaSpecs.Worker.replicas": "null"},
		check: func(t *testing.T, job *v1.TrainingJob) { assert.Equal(t, [2]int32{1, 1}, instances(job)) },
	}, {
		name:  "an elastic job runs between minReplicas and maxReplicas",
		sets:  map[string]string{"spec.elasticPolicy": "{minReplicas: 1, maxReplicas: 4, rdzvBackend: c10d}"},
		check: func(t *testing.T, job *v1.TrainingJob) { assert.Equal(t, [2]int32{1, 4}, instances(job)) },
	}, {
		name:  "a missing minReplicas falls back to the replicas",
		sets:  map[string]string{"spec.elasticPolicy": "{maxReplicas: 5}"},
		check: func(t *testing.T, job *v1.TrainingJob) { assert.Equal(t, [2]int32{2, 5}, instances(job)) },
	}, {
		name:  "a missing maxReplicas falls back to the replicas",
		sets:  map[string]string{"spec.elasticPolicy": "{minReplicas: 1}"},
		check: func(t *testing.T, job *v1.TrainingJob) { assert.Equal(t, [2]int32{1, 2}, instances(job)) },
	}, {
		name: "the rendezvous is EDL's",
		sets: map[string]string{"spec.elasticPolicy": "{rdzvBackend: etcd, rdzvHost: h, rdzvPort: 1234, rdzvId: x, standalone: true, metrics: [{type: Resource}]}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Nil(t, job.Spec.ElasticPolicy)
			assert.Equal(t, [2]int32{2, 2}, instances(job))
		},
		notes: []noted{
			{"spec.elasticPolicy.metrics", notCarried + "EDL's autoscaler decides"},
			{"spec.elasticPolicy.rdzvBackend", notCarried + "EDL's rendezvous is c10d"},
			{"spec.elasticPolicy.rdzvHost", notCarried + "EDL's rendezvous is its master Service"},
			{"spec.elasticPolicy.rdzvId", notCarried + "the job's UID"},
			{"spec.elasticPolicy.rdzvPort", notCarried + "spec.elasticPolicy.rdzvPort"},
			{"spec.elasticPolicy.standalone", notCarried},
		},
	}, {
		name: "rdzvConf without the settings EDL refuses",
		sets: map[string]string{"spec.elasticPolicy": `{rdzvConf: [{key: join_timeout, value: "600"}, {key: is_host, value: "true"}, {key: "a", value: "x,y"}, {key: join_timeout, value: "1"}]}`},
		check: func(t *testing.T, job *v1.TrainingJob) {
			require.NotNil(t, job.Spec.ElasticPolicy)
			assert.Equal(t, []v1.RdzvConf{{Key: "join_timeout", Value: "600"}}, job.Spec.ElasticPolicy.RdzvConf)
		},
		notes: []noted{
			{"spec.elasticPolicy.rdzvConf[1]", notCarried + "rdzvConf: key is_host is EDL's"},
			{"spec.elasticPolicy.rdzvConf[2]", notCarried + "rdzvConf: a=x,y must not contain a comma"},
			{"spec.elasticPolicy.rdzvConf[3]", notCarried + "key join_timeout is given before"},
		},
	}, {
		name: "a number of processes per node",
		sets: map[string]string{"spec.nprocPerNode": `"4"`},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, ptr.To(int32(4)), job.Spec.ElasticPolicy.NProcPerNode)
		},
	}, {
		name: "spec.nprocPerNode over the deprecated elasticPolicy.nProcPerNode",
		sets: map[string]string{"spec.nprocPerNode": `"2"`, "spec.elasticPolicy": "{nProcPerNode: 8}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, ptr.To(int32(2)), job.Spec.ElasticPolicy.NProcPerNode)
		},
		notes: []noted{{"spec.elasticPolicy.nProcPerNode", notCarried + "spec.nprocPerNode gives it"}},
	}, {
		name:  "processes per node auto",
		sets:  map[string]string{"spec.nprocPerNode": "auto"},
		check: func(t *testing.T, job *v1.TrainingJob) { assert.Nil(t, job.Spec.ElasticPolicy) },
		notes: []noted{{"spec.nprocPerNode", notCarried + "a number (default 1)"}},
	}, {
		name: "backoffLimit is the failure budget",
		sets: map[string]string{"spec.runPolicy": "{backoffLimit: 6}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, ptr.To(int32(6)), job.Spec.ElasticPolicy.MaxRestarts)
		},
	}, {
		name: "a clean-pod policy or TTL EDL has not",
		sets: map[string]string{"spec.runPolicy": "{cleanPodPolicy: Sometimes, ttlSecondsAfterFinished: -1}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Nil(t, job.Spec.RunPolicy)
		},
		notes: []noted{
			{"spec.runPolicy.cleanPodPolicy", notCarried + "None, Running or All"},
			{"spec.runPolicy.ttlSecondsAfterFinished", notCarried + "0 or more"},
		},
	}, {
		name: "maxRestarts over backoffLimit",
		sets: map[string]string{"spec.runPolicy": "{backoffLimit: 6}", "spec.elasticPolicy": "{maxRestarts: 2}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, ptr.To(int32(2)), job.Spec.ElasticPolicy.MaxRestarts)
		},
		notes: []noted{{"spec.runPolicy.backoffLimit", notCarried + "elasticPolicy.maxRestarts gives"}},
	}, {
		name: "the run policy: the pods kept, the TTL, priority and suspension carried, Kubeflow's deadline not",
		sets: map[string]string{"spec.runPolicy": "{cleanPodPolicy: Running, ttlSecondsAfterFinished: 60, activeDeadlineSeconds: 600, managedBy: kubeflow.org/training-operator, " +
			"suspend: true, schedulingPolicy: {priorityClass: high, queue: q, minAvailable: 2, minResources: {cpu: '2'}, scheduleTimeoutSeconds: 60}}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.True(t, job.Spec.Suspend)
			assert.Equal(t, "high", job.Spec.PriorityClassName)
			assert.Equal(t, &v1.RunPolicy{CleanPodPolicy: v1.CleanPodPolicyRunning, TTLSecondsAfterFinished: ptr.To(int32(60))}, job.Spec.RunPolicy)
		},
		notes: []noted{
			{"spec.runPolicy.activeDeadlineSeconds", notCarried + "no deadline"},
			{"spec.runPolicy.managedBy", notCarried},
			{"spec.runPolicy.schedulingPolicy.minAvailable", notCarried + "once its min-instance trainers fit"},
			{"spec.runPolicy.schedulingPolicy.minResources", notCarried + "once its min-instance trainers fit"},
			{"spec.runPolicy.schedulingPolicy.queue", notCarried + "TrainingQueues"},
			{"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", notCarried + "start deadline"},
		},
	}, {
		name: "the template's placement is the job's",
		sets: map[string]string{workerTemplate + ".spec": "{nodeSelector: {pool: gpu}, tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}], " +
			"affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}, " +
			"schedulerName: packer, priorityClassName: high, hostNetwork: true, containers: [{name: pytorch, image: 'train:v1', command: [torchrun, train.py]}]}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			s := job.Spec
			assert.Equal(t, map[string]string{"pool": "gpu"}, s.NodeSelector)
			assert.Equal(t, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, s.Tolerations)
			require.NotNil(t, s.Affinity)
			assert.NotNil(t, s.Affinity.PodAntiAffinity)
			assert.Equal(t, "packer", s.SchedulerName)
			assert.Equal(t, "high", s.PriorityClassName)
			assert.True(t, s.HostNetwork)
			pod := job.Spec.Trainer.Template.Spec
			assert.Empty(t, pod.NodeSelector)
			assert.Empty(t, pod.Tolerations)
			assert.Nil(t, pod.Affinity)
			assert.Empty(t, pod.SchedulerName+pod.PriorityClassName)
			assert.False(t, pod.HostNetwork)
		},
	}, {
		name: "what EDL keeps for itself in the template, the rest as written",
		sets: map[string]string{
			workerTemplate + ".metadata":                                 "{labels: {paddle-job: x, paddle-job-master: '', team: vision}, annotations: {sidecar.istio.io/inject: 'false'}}",
			workerTemplate + ".spec.restartPolicy":                       "OnFailure",
			workerTemplate + ".spec.terminationGracePeriodSeconds":       "120",
			workerTemplate + ".spec.serviceAccountName":                  "trainer",
			workerTemplate + ".spec.volumes":                             "[{name: data, emptyDir: {}}]",
			workerTemplate + ".spec.containers.0.env":                    "[{name: PET_NNODES, value: '4'}, {name: WANDB_MODE, value: offline}, {name: EDL_ROLE, value: x}]",
			workerTemplate + ".spec.containers.0.resources":              "{requests: {cpu: '1'}}",
			workerTemplate + ".spec.containers.0.volumeMounts":           "[{name: data, mountPath: /data}]",
			workerTemplate + ".spec.containers.0.readinessProbe":         "{exec: {command: [cat, /tmp/ready]}}",
			workerTemplate + ".spec.containers.0.securityContext":        "{runAsUser: 1000}",
			workerTemplate + ".spec.containers.0.envFrom":                "[{secretRef: {name: keys}}]",
			workerTemplate + ".spec.containers.0.imagePullPolicy":        "Always",
			workerTemplate + ".spec.initContainers":                      "[{name: fetch, image: busybox, command: [sh, -c, 'true']}]",
			workerTemplate + ".spec.containers.0.ports":                  "[{name: pytorchjob-port, containerPort: 23456}]",
			workerTemplate + ".spec.containers.0.terminationMessagePath": "/dev/termination-log",
		},
		check: func(t *testing.T, job *v1.TrainingJob) {
			tmpl := job.Spec.Trainer.Template
			assert.Equal(t, map[string]string{"team": "vision"}, tmpl.Labels)
			assert.Equal(t, map[string]string{"sidecar.istio.io/inject": "false"}, tmpl.Annotations)
			assert.Empty(t, tmpl.Spec.RestartPolicy)
			assert.Nil(t, tmpl.Spec.TerminationGracePeriodSeconds)
			assert.Equal(t, "trainer", tmpl.Spec.ServiceAccountName)
			assert.Len(t, tmpl.Spec.Volumes, 1)
			assert.Len(t, tmpl.Spec.InitContainers, 1)
			c := tmpl.Spec.Containers[0]
			assert.Equal(t, []corev1.EnvVar{{Name: "WANDB_MODE", Value: "offline"}}, c.Env)
			assert.Equal(t, "keys", c.EnvFrom[0].SecretRef.Name)
			assert.Equal(t, "1", c.Resources.Requests.Cpu().String())
			assert.NotNil(t, c.ReadinessProbe)
			assert.Equal(t, ptr.To(int64(1000)), c.SecurityContext.RunAsUser)
			assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
			assert.Len(t, c.Ports, 1)
		},
		notes: []noted{
			{workerTemplate + ".metadata.labels[paddle-job-master]", notCarried + "label paddle-job-master is EDL's"},
			{workerTemplate + ".metadata.labels[paddle-job]", notCarried + "label paddle-job is EDL's"},
			{workerTemplate + ".spec.containers[0].env[0]", notCarried + "PET_NNODES is EDL's"},
			{workerTemplate + ".spec.containers[0].env[2]", notCarried + "EDL_ROLE is EDL's"},
			{workerTemplate + ".spec.restartPolicy", restartsAlways},
			{workerTemplate + ".spec.terminationGracePeriodSeconds", notCarried + "a trainer's grace period is EDL's"},
		},
	}, {
		name: "torchrun's options that EDL owns leave the line, --opt=value and --opt value, - and _",
		sets: map[string]string{workerTemplate + ".spec.containers.0.command": "[torchrun, --nnodes=1:4, --nproc_per_node, '2', --log-dir=/tmp/l, " +
			"--standalone, --rdzv-endpoint, 'h:29400', --max_restarts=3, -r, '3', train.py, --nnodes, '3']"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			c := job.Spec.Trainer.Template.Spec.Containers[0]
			assert.Equal(t, []string{"torchrun", "--log-dir=/tmp/l", "-r", "3", "train.py", "--nnodes", "3"}, c.Command,
				"the script's own arguments are its own")
			assert.Equal(t, ptr.To(int32(2)), job.Spec.ElasticPolicy.NProcPerNode, "--nproc_per_node 2 carried")
		},
		notes: []noted{
			{workerTemplate + ".spec.containers[0].command[1]", notCarried + "torchrun's --nnodes is EDL's: it comes from spec.trainer.min-instance and max-instance"},
			{workerTemplate + ".spec.containers[0].command[2]", "carried: spec.elasticPolicy.nProcPerNode"},
			{workerTemplate + ".spec.containers[0].command[5]", notCarried + "torchrun's --standalone is EDL's"},
			{workerTemplate + ".spec.containers[0].command[6]", notCarried + "torchrun's --rdzv-endpoint is EDL's"},
			{workerTemplate + ".spec.containers[0].command[8]", notCarried + "torchrun's --max-restarts is EDL's"},
		},
	}, {
		name: "the spec's number of processes over the torchrun line's",
		sets: map[string]string{
			"spec.nprocPerNode":                           `"4"`,
			workerTemplate + ".spec.containers.0.command": "[torchrun, --nproc-per-node=8, train.py]",
		},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, ptr.To(int32(4)), job.Spec.ElasticPolicy.NProcPerNode)
			assert.Equal(t, []string{"torchrun", "train.py"}, job.Spec.Trainer.Template.Spec.Containers[0].Command)
		},
		notes: []noted{{workerTemplate + ".spec.containers[0].command[1]", notCarried + "spec.nprocPerNode gives it"}},
	}, {
		name: "the torchrun line's number of processes where the spec's is not a number",
		sets: map[string]string{
			"spec.nprocPerNode":                           "auto",
			workerTemplate + ".spec.containers.0.command": "[torchrun, --nproc_per_node=2, train.py]",
		},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, ptr.To(int32(2)), job.Spec.ElasticPolicy.NProcPerNode)
		},
		notes: []noted{
			{"spec.nprocPerNode", notCarried + "a number (default 1)"},
			{workerTemplate + ".spec.containers[0].command[1]", "carried: spec.elasticPolicy.nProcPerNode"},
		},
	}, {
		name: "a torchrun line's --nproc-per-node gpu is not a number",
		sets: map[string]string{workerTemplate + ".spec.containers.0.command": "[torchrun, --nproc-per-node, gpu, train.py]"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Nil(t, job.Spec.ElasticPolicy)
			assert.Equal(t, []string{"torchrun", "train.py"}, job.Spec.Trainer.Template.Spec.Containers[0].Command)
		},
		notes: []noted{{workerTemplate + ".spec.containers[0].command[1]", notCarried + "a number (default 1)"}},
	}, {
		name: "a torchrun line split between command and args",
		sets: map[string]string{
			workerTemplate + ".spec.containers.0.command": "[python3, -m, torch.distributed.run]",
			workerTemplate + ".spec.containers.0.args":    "[--rdzv_id, job, train.py, --epochs, '3']",
		},
		check: func(t *testing.T, job *v1.TrainingJob) {
			c := job.Spec.Trainer.Template.Spec.Containers[0]
			assert.Equal(t, []string{"python3", "-m", "torch.distributed.run"}, c.Command)
			assert.Equal(t, []string{"train.py", "--epochs", "3"}, c.Args)
		},
		notes: []noted{{workerTemplate + ".spec.containers[0].args[0]", notCarried + "torchrun's --rdzv-id is EDL's"}},
	}, {
		name: "a container without command and args ran its image's ENTRYPOINT",
		sets: map[string]string{workerTemplate + ".spec.containers.0.command": "null"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Empty(t, job.Spec.Trainer.Template.Spec.Containers[0].Command)
		},
		notes: []noted{{workerTemplate + ".spec.containers[0].command", "must be set before applying: the image's ENTRYPOINT ran the training"}},
		// A PyTorch job without a launch line: EDL refuses it.
		refusedAt: "spec.trainer.entrypoint",
	}, {
		name: "the pytorch container comes first",
		sets: map[string]string{workerTemplate + ".spec.containers": "[{name: logs, image: busybox, command: [sh]}, {name: pytorch, image: 'train:v1', command: [torchrun, train.py]}]"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			c := job.Spec.Trainer.Template.Spec.Containers
			require.Len(t, c, 2)
			assert.Equal(t, "pytorch", c[0].Name)
			assert.Equal(t, "train:v1", job.Spec.Image)
			assert.Equal(t, "busybox", c[1].Image, "a sidecar keeps its image")
		},
		notes: []noted{{workerTemplate + ".spec.containers[1]", "moved to spec.trainer.template.spec.containers[0]"}},
	}, {
		name: "the Master's template when it differs from the Worker's",
		sets: map[string]string{"spec.pytorchReplicaSpecs.Master": `{replicas: 1, restartPolicy: Never, template: {spec: {containers: [{name: pytorch, image: "other:v1", command: [torchrun, train.py]}]}}}`},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, "train:v1", job.Spec.Image)
			assert.Equal(t, [2]int32{3, 3}, instances(job))
		},
		notes: []noted{
			{"spec.pytorchReplicaSpecs.Master.restartPolicy", restartsAlways},
			{"spec.pytorchReplicaSpecs.Master.template", notCarried + "every trainer runs the Worker's"},
		},
	}, {
		name: "a Master alone",
		sets: map[string]string{
			"spec.pytorchReplicaSpecs.Master": `{template: {spec: {containers: [{name: pytorch, image: "m:v1", command: [python3, train.py]}]}}}`,
			"spec.pytorchReplicaSpecs.Worker": "null",
		},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, "m:v1", job.Spec.Image)
			assert.Equal(t, [2]int32{1, 1}, instances(job))
		},
	}, {
		name: "the fields EDL has not are reported",
		sets: map[string]string{
			"spec.successPolicy":                      "AllWorkers",
			"spec.pytorchReplicaSpecs.Evaluator":      "{replicas: 1}",
			"spec.pytorchReplicaSpecs.Worker.extra":   "1",
			workerTemplate + ".spec.containers.0.gpu": "1",
			"status": "{conditions: []}",
		},
		notes: []noted{
			{"spec.pytorchReplicaSpecs.Evaluator", notCarried + "EDL has no such field"},
			{"spec.pytorchReplicaSpecs.Worker.extra", notCarried + "EDL has no such field"},
			{workerTemplate + ".spec.containers[0].gpu", notCarried + "not a field of a pod template"},
			{"spec.successPolicy", notCarried + "EDL has no such field"},
			{"status", notCarried + "EDL's controller"},
		},
	}, {
		name: "metadata: name, namespace, labels and annotations",
		sets: map[string]string{"metadata": "{name: job, namespace: team, uid: 0a, resourceVersion: '7', creationTimestamp: '2025-01-01T00:00:00Z', " +
			"labels: {app: mnist}, annotations: {note: x, kubectl.kubernetes.io/last-applied-configuration: '{}'}}"},
		check: func(t *testing.T, job *v1.TrainingJob) {
			assert.Equal(t, "team", job.Namespace)
			assert.Equal(t, map[string]string{"app": "mnist"}, job.Labels)
			assert.Equal(t, map[string]string{"note": "x"}, job.Annotations)
		},
		notes: []noted{
			{"metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", notCarried + "kubectl's record"},
			{"metadata.creationTimestamp", notCarried + "the API server sets it"},
			{"metadata.resourceVersion", notCarried + "the API server sets it"},
			{"metadata.uid", notCarried + "the API server sets it"},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := kubeflow.Convert(pytorchJobMap(t, "job", c.sets))
			require.NoError(t, err)
			job := got.TrainingJob
			assert.Equal(t, v1.FrameworkPyTorch, job.Spec.Framework)
			if c.check != nil {
				c.check(t, job)
			}
			var lines []string
			for _, n := range got.Notes {
				lines = append(lines, "convert: "+n.String())
			}
			assertNotes(t, strings.Join(lines, "\n"), "", c.notes)
			if c.refusedAt != "" {
				assert.Equal(t, []string{c.refusedAt}, validated(job), "v1.Validate refuses the TrainingJob at one field")
			} else {
				assert.Empty(t, validated(job), "v1.Validate refuses the TrainingJob")
			}
		})
	}
}

// instances is the trainers' min-instance and max-instance.
func instances(job *v1.TrainingJob) [2]int32 {
	return [2]int32{job.Spec.Trainer.MinInstance, job.Spec.Trainer.MaxInstance}
}
