package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrainingJob is a distributed PaddlePaddle training job: a master (for
// fault-tolerant jobs), parameter servers and an elastic number of trainers.
// The controller creates one ReplicaSet per role; the autoscaler moves the
// trainer count between trainer.min-instance and trainer.max-instance.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=trainingjobs,singular=trainingjob,shortName=tj,scope=Namespaced,categories=paddle
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Trainers",type=string,JSONPath=`.status.trainers.summary`,description="Ready/desired trainers"
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.trainer.min-instance`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.trainer.max-instance`
// +kubebuilder:printcolumn:name="Limited By",type=string,JSONPath=`.status.conditions[?(@.type=="Scaling")].reason`,priority=1,description="What limits the trainers after the autoscaler's last plan"
// +kubebuilder:printcolumn:name="Resizes",type=integer,JSONPath=`.status.resize.count`,priority=1,description="Trainer resizes the autoscaler applied"
// +kubebuilder:printcolumn:name="Resize Cost",type=string,JSONPath=`.status.resize.lastCost`,priority=1,description="How long the last measured resize took until every trainer was Ready again"
// +kubebuilder:printcolumn:name="Progress",type=integer,JSONPath=`.status.progress.percent`,description="Percent of the work done, as the training reports it"
// +kubebuilder:printcolumn:name="Throughput",type=string,JSONPath=`.status.progress.throughput`,description="Work a second at the job's size"
// +kubebuilder:printcolumn:name="ETA",type=string,JSONPath=`.status.progress.eta`,description="Time left at the training's last report"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Queued",type=string,JSONPath=`.status.conditions[?(@.type=="Queued")].message`,priority=1,description="Position in the admission queue and what the job waits for"
//
// The job's name is in the names of the objects the controller derives from
// it, so the API server's rules for those names are the job's (see
// MaxNameLength). The rules run on create only (optionalOldSelf): a name
// never changes, and a job stored before a rule existed must still take
// status updates, which the controller needs to fail it as Invalid.
//
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 55",message="metadata.name must be no more than 55 characters: the job's Service <name>-pserver must be a DNS-1035 label of at most 63",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a lower-case letter and consist of lower-case letters, digits and '-' (no '.'): the job's Services <name>-master and <name>-pserver must be DNS-1035 labels",optionalOldSelf=true
type TrainingJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TrainingJobSpec   `json:"spec"`
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TrainingJobSpec describes what to run and how elastic it may be.
//
// +kubebuilder:validation:XValidation:rule="!has(self.port) || !has(self.ports_num) || !has(self.ports_num_for_sparse) || self.port + self.ports_num + self.ports_num_for_sparse - 1 <= 65535",message="port + ports_num + ports_num_for_sparse - 1 must not exceed 65535",fieldPath=".port"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeMounts) || self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))",message="volumeMounts: every mount's name must be the name of a volume in spec.volumes",messageExpression="'volumeMounts: a mount names ' + (has(self.volumes) ? self.volumeMounts.map(m, m.name).filter(n, !self.volumes.exists(v, v.name == n))[0] : self.volumeMounts[0].name) + ', which is not the name of a volume in spec.volumes'",fieldPath=".volumeMounts"
// +kubebuilder:validation:XValidation:rule="has(self.framework) && self.framework != 'PaddlePaddle' || has(self.pserver)",message="pserver is required for a PaddlePaddle job (framework PaddlePaddle, the default)",fieldPath=".pserver"
// +kubebuilder:validation:XValidation:rule="!has(self.framework) || self.framework == 'PaddlePaddle' || !has(self.pserver)",messageExpression="'pserver must not be set for a ' + self.framework + ' job: its trainers exchange gradients by all-reduce, without parameter servers'",fieldPath=".pserver"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || has(self.framework) && self.framework != 'PaddlePaddle'",message="elasticPolicy is for PyTorch and Horovod jobs: a PaddlePaddle job scales through its master's task queue (fault_tolerant)",fieldPath=".elasticPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.hostDiscovery) || has(self.framework) && self.framework == 'Horovod'",message="elasticPolicy.hostDiscovery is for Horovod jobs: a PyTorch job's trainers find each other through torchrun's rendezvous",fieldPath=".elasticPolicy.hostDiscovery"
// +kubebuilder:validation:XValidation:rule="!has(self.elasticPolicy) || !has(self.elasticPolicy.rdzvConf) || has(self.framework) && self.framework == 'PyTorch'",message="elasticPolicy.rdzvConf is for PyTorch jobs: horovodrun has no torchrun rendezvous to configure",fieldPath=".elasticPolicy.rdzvConf"
type TrainingJobSpec struct {
	// Framework is what the trainers run: PaddlePaddle (the launcher of
	// paddlepaddle/paddlecloud-job, with pservers and, when fault tolerant,
	// a master), PyTorch (torchrun, whose rendezvous store the master pod
	// hosts) or Horovod (horovodrun in the master pod, over the trainers
	// listed in a host-discovery file). It never changes.
	// +kubebuilder:validation:Enum=PaddlePaddle;PyTorch;Horovod
	// +kubebuilder:default=PaddlePaddle
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="framework cannot be changed"
	// +optional
	Framework Framework `json:"framework,omitempty"`

	// ElasticPolicy is how a PyTorch or Horovod job's trainers find each
	// other and what failures it survives; a PyTorch job without one gets
	// the defaults of every field.
	// +optional
	ElasticPolicy *ElasticPolicy `json:"elasticPolicy,omitempty"`

	// Image is the job image, normally based on paddlepaddle/paddlecloud-job,
	// whose paddle_k8s launcher starts every role.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^\\\\s]+$')",message="image must be a container image reference without spaces"
	Image string `json:"image"`

	// Port is the first of the ports the pservers listen on.
	// +kubebuilder:default=7164
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port *int32 `json:"port,omitempty"`

	// PortsNum is how many consecutive dense-parameter ports start at Port.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	PortsNum *int32 `json:"ports_num,omitempty"`

	// PortsNumForSparse is how many sparse-parameter ports follow the dense ones.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	PortsNumForSparse *int32 `json:"ports_num_for_sparse,omitempty"`

	// FaultTolerant jobs run a master with an etcd task queue, so trainers may
	// come and go; only fault-tolerant jobs are safe to scale.
	// +optional
	FaultTolerant bool `json:"fault_tolerant,omitempty"`

	// Passes is the number of passes over the data. The original example
	// wrote it under trainer; either place works, trainer.passes wins.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Passes int32 `json:"passes,omitempty"`

	// Volumes are added to every pod of the job. At most 128, so that the
	// API server can check every mount names one within its CEL budget.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts are added to every container of the job; each names a
	// volume of Volumes. At most 128.
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=128
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// ImagePullSecrets are added to every pod of the job.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// HostNetwork runs every pod of the job in the node's network namespace.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`

	// NodeSelector is added to every pod of the job.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are added to every pod of the job, so that it may run on
	// tainted nodes, such as a GPU pool tainted
	// nvidia.com/gpu=present:NoSchedule.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity is every pod's affinity: node affinity to choose a pool by
	// label expressions, pod (anti-)affinity to place the job's pods near or
	// apart from others. The autoscaler grows the trainers only onto nodes
	// their node selector, required node affinity and tolerations admit.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// SchedulerName is the scheduler, or the kube-scheduler profile, that
	// places every pod of the job (for example a bin-packing profile); empty
	// means the cluster's default scheduler.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// PriorityClassName is the trainers' priority class. The autoscaler takes
	// trainers from lower-priority jobs first and makes them yield to pending
	// pods of higher priority.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Master is the task-queue master of a fault-tolerant job.
	// +optional
	Master MasterSpec `json:"master,omitempty"`

	// Pserver is the parameter-server role of a PaddlePaddle job, which
	// requires it; PyTorch and Horovod jobs have none and must leave it out.
	// +optional
	Pserver PserverSpec `json:"pserver,omitempty,omitzero"`

	// Trainer is the elastic trainer role.
	Trainer TrainerSpec `json:"trainer"`

	// Suspend, when true, removes the job's pods: every ReplicaSet is scaled
	// to 0 and the job, its ReplicaSets and Services are kept (phase
	// Suspended). Set back to false, the job returns to the admission queue,
	// and is started whole once its minimum fits. The name and meaning are
	// those of batch/v1 Job's spec.suspend. A suspended job's ReplicaSets are
	// still created, so a job submitted suspended is ready to be resumed.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// RunPolicy is what is left of the job once it finishes: which pods
	// stay for their logs, and when the job itself goes.
	// +optional
	RunPolicy *RunPolicy `json:"runPolicy,omitempty"`
}

// TrainerSpec describes the trainers, the role the autoscaler scales.
//
// +kubebuilder:validation:XValidation:rule="self.min__dash__instance <= self.max__dash__instance",message="min-instance must be less than or equal to max-instance",fieldPath=".min-instance"
type TrainerSpec struct {
	// Entrypoint is the command the launcher runs in each trainer (ENTRY).
	// +optional
	Entrypoint string `json:"entrypoint,omitempty"`

	// Workspace is the directory holding the training package (TRAINER_PACKAGE).
	// +optional
	Workspace string `json:"workspace,omitempty"`

	// Passes is the number of passes over the data.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Passes int32 `json:"passes,omitempty"`

	// MinInstance is the fewest trainers the job runs with; the job is
	// created with this many and never scaled below it.
	// +kubebuilder:validation:Minimum=1
	MinInstance int32 `json:"min-instance"`

	// MaxInstance is the most trainers the autoscaler gives the job.
	// +kubebuilder:validation:Minimum=1
	MaxInstance int32 `json:"max-instance"`

	// MaxRestarts bounds the container restarts of any one trainer pod of a
	// fault-tolerant job; past it the job fails. Plain jobs fail on the
	// first non-zero exit.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRestarts *int32 `json:"max-restarts,omitempty"`

	// Resources of one trainer container.
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.requests) || !isQuantity(string(self.requests[k])) || !quantity(string(self.requests[k])).isLessThan(quantity('0')))",message="requests must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.requests && isQuantity(string(self.requests[k])) && quantity(string(self.requests[k])).isLessThan(quantity('0'))).map(k, 'requests must be non-negative quantities: requests[' + k + '] is ' + string(self.requests[k]))[0]"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.limits) || !isQuantity(string(self.limits[k])) || !quantity(string(self.limits[k])).isLessThan(quantity('0')))",message="limits must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.limits && isQuantity(string(self.limits[k])) && quantity(string(self.limits[k])).isLessThan(quantity('0'))).map(k, 'limits must be non-negative quantities: limits[' + k + '] is ' + string(self.limits[k]))[0]"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('cpu' in self.requests) || !('cpu' in self.limits) || !isQuantity(string(self.requests['cpu'])) || !isQuantity(string(self.limits['cpu'])) || !quantity(string(self.limits['cpu'])).isLessThan(quantity(string(self.requests['cpu'])))",message="a request must not exceed its limit: requests[cpu] is above limits[cpu]",fieldPath=".requests['cpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('memory' in self.requests) || !('memory' in self.limits) || !isQuantity(string(self.requests['memory'])) || !isQuantity(string(self.limits['memory'])) || !quantity(string(self.limits['memory'])).isLessThan(quantity(string(self.requests['memory'])))",message="a request must not exceed its limit: requests[memory] is above limits[memory]",fieldPath=".requests['memory']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('nvidia.com/gpu' in self.requests) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || !quantity(string(self.limits['nvidia.com/gpu'])).isLessThan(quantity(string(self.requests['nvidia.com/gpu'])))",message="a request must not exceed its limit: requests[nvidia.com/gpu] is above limits[nvidia.com/gpu]",fieldPath=".requests['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !('nvidia.com/gpu' in self.requests) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || quantity(string(self.requests['nvidia.com/gpu'])).isInteger()",message="nvidia.com/gpu must be a whole number",fieldPath=".requests['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || quantity(string(self.limits['nvidia.com/gpu'])).isInteger()",message="nvidia.com/gpu must be a whole number",fieldPath=".limits['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !('nvidia.com/gpu' in self.requests) || has(self.limits) && 'nvidia.com/gpu' in self.limits",message="an extended resource's request needs a limit equal to it",fieldPath=".limits['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('nvidia.com/gpu' in self.requests) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || quantity(string(self.requests['nvidia.com/gpu'])).compareTo(quantity(string(self.limits['nvidia.com/gpu']))) == 0",message="an extended resource's request must equal its limit",fieldPath=".requests['nvidia.com/gpu']"
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Template is the role's pod as its user writes it, Kubeflow's way: an
	// environment, Secrets, a service account, a security context, probes,
	// init containers and sidecars. EDL merges its own into it (labels,
	// environment, restart policy, rendezvous); containers[0] is the
	// role's, the rest run beside it. Where the template contradicts EDL,
	// the job fails as Invalid naming the field (docs/templates.md).
	// +optional
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
}

// PserverSpec describes the parameter servers. Their count is fixed at
// min-instance; max-instance is kept for the original's job files.
//
// +kubebuilder:validation:XValidation:rule="self.min__dash__instance <= self.max__dash__instance",message="min-instance must be less than or equal to max-instance",fieldPath=".min-instance"
type PserverSpec struct {
	// Entrypoint overrides the launcher's pserver command, when set.
	// +optional
	Entrypoint string `json:"entrypoint,omitempty"`

	// MinInstance is the number of parameter servers.
	// +kubebuilder:validation:Minimum=1
	MinInstance int32 `json:"min-instance"`

	// MaxInstance must be at least MinInstance.
	// +kubebuilder:validation:Minimum=1
	MaxInstance int32 `json:"max-instance"`

	// Resources of one pserver container.
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.requests) || !isQuantity(string(self.requests[k])) || !quantity(string(self.requests[k])).isLessThan(quantity('0')))",message="requests must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.requests && isQuantity(string(self.requests[k])) && quantity(string(self.requests[k])).isLessThan(quantity('0'))).map(k, 'requests must be non-negative quantities: requests[' + k + '] is ' + string(self.requests[k]))[0]"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.limits) || !isQuantity(string(self.limits[k])) || !quantity(string(self.limits[k])).isLessThan(quantity('0')))",message="limits must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.limits && isQuantity(string(self.limits[k])) && quantity(string(self.limits[k])).isLessThan(quantity('0'))).map(k, 'limits must be non-negative quantities: limits[' + k + '] is ' + string(self.limits[k]))[0]"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('cpu' in self.requests) || !('cpu' in self.limits) || !isQuantity(string(self.requests['cpu'])) || !isQuantity(string(self.limits['cpu'])) || !quantity(string(self.limits['cpu'])).isLessThan(quantity(string(self.requests['cpu'])))",message="a request must not exceed its limit: requests[cpu] is above limits[cpu]",fieldPath=".requests['cpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('memory' in self.requests) || !('memory' in self.limits) || !isQuantity(string(self.requests['memory'])) || !isQuantity(string(self.limits['memory'])) || !quantity(string(self.limits['memory'])).isLessThan(quantity(string(self.requests['memory'])))",message="a request must not exceed its limit: requests[memory] is above limits[memory]",fieldPath=".requests['memory']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('nvidia.com/gpu' in self.requests) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || !quantity(string(self.limits['nvidia.com/gpu'])).isLessThan(quantity(string(self.requests['nvidia.com/gpu'])))",message="a request must not exceed its limit: requests[nvidia.com/gpu] is above limits[nvidia.com/gpu]",fieldPath=".requests['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !('nvidia.com/gpu' in self.requests) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || quantity(string(self.requests['nvidia.com/gpu'])).isInteger()",message="nvidia.com/gpu must be a whole number",fieldPath=".requests['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || quantity(string(self.limits['nvidia.com/gpu'])).isInteger()",message="nvidia.com/gpu must be a whole number",fieldPath=".limits['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !('nvidia.com/gpu' in self.requests) || has(self.limits) && 'nvidia.com/gpu' in self.limits",message="an extended resource's request needs a limit equal to it",fieldPath=".limits['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('nvidia.com/gpu' in self.requests) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || quantity(string(self.requests['nvidia.com/gpu'])).compareTo(quantity(string(self.limits['nvidia.com/gpu']))) == 0",message="an extended resource's request must equal its limit",fieldPath=".requests['nvidia.com/gpu']"
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Template is the role's pod as its user writes it, Kubeflow's way: an
	// environment, Secrets, a service account, a security context, probes,
	// init containers and sidecars. EDL merges its own into it (labels,
	// environment, restart policy, rendezvous); containers[0] is the
	// role's, the rest run beside it. Where the template contradicts EDL,
	// the job fails as Invalid naming the field (docs/templates.md).
	// +optional
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
}

// MasterSpec describes the master of a fault-tolerant job.
type MasterSpec struct {
	// Resources of the master container.
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.requests) || !isQuantity(string(self.requests[k])) || !quantity(string(self.requests[k])).isLessThan(quantity('0')))",message="requests must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.requests && isQuantity(string(self.requests[k])) && quantity(string(self.requests[k])).isLessThan(quantity('0'))).map(k, 'requests must be non-negative quantities: requests[' + k + '] is ' + string(self.requests[k]))[0]"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.limits) || !isQuantity(string(self.limits[k])) || !quantity(string(self.limits[k])).isLessThan(quantity('0')))",message="limits must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.limits && isQuantity(string(self.limits[k])) && quantity(string(self.limits[k])).isLessThan(quantity('0'))).map(k, 'limits must be non-negative quantities: limits[' + k + '] is ' + string(self.limits[k]))[0]"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('cpu' in self.requests) || !('cpu' in self.limits) || !isQuantity(string(self.requests['cpu'])) || !isQuantity(string(self.limits['cpu'])) || !quantity(string(self.limits['cpu'])).isLessThan(quantity(string(self.requests['cpu'])))",message="a request must not exceed its limit: requests[cpu] is above limits[cpu]",fieldPath=".requests['cpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('memory' in self.requests) || !('memory' in self.limits) || !isQuantity(string(self.requests['memory'])) || !isQuantity(string(self.limits['memory'])) || !quantity(string(self.limits['memory'])).isLessThan(quantity(string(self.requests['memory'])))",message="a request must not exceed its limit: requests[memory] is above limits[memory]",fieldPath=".requests['memory']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('nvidia.com/gpu' in self.requests) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || !quantity(string(self.limits['nvidia.com/gpu'])).isLessThan(quantity(string(self.requests['nvidia.com/gpu'])))",message="a request must not exceed its limit: requests[nvidia.com/gpu] is above limits[nvidia.com/gpu]",fieldPath=".requests['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !('nvidia.com/gpu' in self.requests) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || quantity(string(self.requests['nvidia.com/gpu'])).isInteger()",message="nvidia.com/gpu must be a whole number",fieldPath=".requests['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || quantity(string(self.limits['nvidia.com/gpu'])).isInteger()",message="nvidia.com/gpu must be a whole number",fieldPath=".limits['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !('nvidia.com/gpu' in self.requests) || has(self.limits) && 'nvidia.com/gpu' in self.limits",message="an extended resource's request needs a limit equal to it",fieldPath=".limits['nvidia.com/gpu']"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || !('nvidia.com/gpu' in self.requests) || !('nvidia.com/gpu' in self.limits) || !isQuantity(string(self.requests['nvidia.com/gpu'])) || !isQuantity(string(self.limits['nvidia.com/gpu'])) || quantity(string(self.requests['nvidia.com/gpu'])).compareTo(quantity(string(self.limits['nvidia.com/gpu']))) == 0",message="an extended resource's request must equal its limit",fieldPath=".requests['nvidia.com/gpu']"
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Template is the role's pod as its user writes it, Kubeflow's way: an
	// environment, Secrets, a service account, a security context, probes,
	// init containers and sidecars. EDL merges its own into it (labels,
	// environment, restart policy, rendezvous); containers[0] is the
	// role's, the rest run beside it. Where the template contradicts EDL,
	// the job fails as Invalid naming the field (docs/templates.md).
	// +optional
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`

	// EtcdEndpoint is the etcd the master keeps its task queue in; empty
	// means the etcd the launcher runs beside the master.
	// +optional
	EtcdEndpoint string `json:"etcd-endpoint,omitempty"`
}

// TrainingJobPhase is where a job is in its life.
type TrainingJobPhase string

// The phases of a TrainingJob.
const (
	// PhasePending: not yet created, or waiting for its minimum to fit.
	PhasePending TrainingJobPhase = "Pending"
	// PhaseCreating: the ReplicaSets exist; pservers or min-instance
	// trainers are not running yet.
	PhaseCreating TrainingJobPhase = "Creating"
	// PhaseRunning: pservers ready and at least min-instance trainers running.
	PhaseRunning TrainingJobPhase = "Running"
	// PhaseSucceeded: a trainer exited 0; every ReplicaSet is scaled to 0.
	PhaseSucceeded TrainingJobPhase = "Succeeded"
	// PhaseFailed: the job cannot go on; reason and message say why.
	PhaseFailed TrainingJobPhase = "Failed"
	// PhaseQueued: the job waits for admission, its ReplicaSets at 0
	// replicas: the autoscaler admits the job once its whole minimum fits
	// its namespace's quota and the nodes (the condition Queued says its
	// position and what it waits for).
	PhaseQueued TrainingJobPhase = "Queued"
	// PhaseSuspended: spec.suspend is true; every ReplicaSet is scaled to 0
	// and the job holds no pod (the condition Suspended says since when).
	PhaseSuspended TrainingJobPhase = "Suspended"
)

// TrainingJobStatus is what the controller observed and decided.
type TrainingJobStatus struct {
	// Phase is a one-word summary of the job's state.
	// +kubebuilder:validation:Enum=Pending;Queued;Suspended;Creating;Running;Succeeded;Failed
	// +optional
	Phase TrainingJobPhase `json:"phase,omitempty"`

	// Reason is a CamelCase word for why the job is in its phase.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says the same for a person.
	// +optional
	Message string `json:"message,omitempty"`

	// Conditions are the job's observations, keyed by type.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Master counts the master's replicas.
	// +optional
	Master ReplicaStatus `json:"master,omitempty"`

	// Pservers counts the pservers' replicas.
	// +optional
	Pservers ReplicaStatus `json:"pservers,omitempty"`

	// Trainers counts the trainers' replicas.
	// +optional
	Trainers ReplicaStatus `json:"trainers,omitempty"`

	// LastScale is the autoscaler's last decision for this job.
	// +optional
	LastScale *ScaleRecord `json:"lastScale,omitempty"`

	// LastScaleDown is when the autoscaler last removed trainers of the job,
	// trainers no node took included: the job is not grown for
	// cooldownCycles intervals after it.
	// +optional
	LastScaleDown *metav1.Time `json:"lastScaleDown,omitempty"`

	// Requeues counts the times the autoscaler sent the job back to the
	// queue because its minimum was not all running within the start
	// deadline of its admission. Suspending the job resets it.
	// +optional
	Requeues int32 `json:"requeues,omitempty"`

	// RetryAfter is when a requeued job may be admitted again: the backoff
	// after a start that failed.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`

	// Resize counts the job's resizes and failures, with the cost of its
	// last resize.
	// +optional
	Resize ResizeStatus `json:"resize,omitempty,omitzero"`

	// Progress is what the job's training reports of its progress, with
	// its throughput at each size and the ETA (the progress contract).
	// +optional
	Progress *ProgressStatus `json:"progress,omitempty"`
}

// ReplicaStatus counts the replicas of one role.
type ReplicaStatus struct {
	// Desired is the role's ReplicaSet spec.replicas.
	Desired int32 `json:"desired"`
	// Current is the number of the role's pods that exist and are not finished.
	Current int32 `json:"current"`
	// Ready is the number of the role's pods that are ready.
	Ready int32 `json:"ready"`
	// Summary is "ready/desired", for kubectl's printer columns.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// ScaleRecord is one scaling decision of the autoscaler.
type ScaleRecord struct {
	// Time the decision was applied.
	Time metav1.Time `json:"time"`
	// From is the trainer count before.
	From int32 `json:"from"`
	// To is the trainer count after.
	To int32 `json:"to"`
	// Reason explains the decision with the numbers it was made on.
	Reason string `json:"reason"`
}

// TrainingJobList is a list of TrainingJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type TrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []TrainingJob `json:"items"`
}
