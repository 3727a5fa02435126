package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Framework is what a job's trainers run, and so which pods the controller
// derives from the job and what a resize costs it.
type Framework string

// The frameworks of a TrainingJob.
const (
	// FrameworkPaddlePaddle: the paddlepaddle/paddlecloud-job launcher, with
	// pservers and, for a fault-tolerant job, a master whose etcd task queue
	// lets trainers come and go for free.
	FrameworkPaddlePaddle Framework = "PaddlePaddle"
	// FrameworkPyTorch: torchrun (torch.distributed.run) in every trainer,
	// with a c10d rendezvous store in the master pod. Every change of the
	// trainers stops and restarts every worker.
	FrameworkPyTorch Framework = "PyTorch"
	// FrameworkHorovod: horovodrun in the master pod (the launcher), over
	// the trainers a host-discovery file lists.
	FrameworkHorovod Framework = "Horovod"
)

// The defaults of an ElasticPolicy; the CRD's schema applies the same.
const (
	DefaultRdzvBackend         = "c10d"
	DefaultRdzvPort      int32 = 29400
	DefaultNProcPerNode  int32 = 1
	DefaultElasticBudget int32 = 3
	// DefaultGracePeriodSeconds is the trainers' terminationGracePeriodSeconds
	// in a PyTorch or Horovod job: the time a removed trainer has to write a
	// checkpoint after SIGTERM.
	DefaultGracePeriodSeconds int64 = 30
	// DefaultSlotsPerHost is a Horovod trainer's slots in the host file.
	DefaultSlotsPerHost int32 = 1
)

// ElasticPolicy is how a PyTorch or Horovod job's trainers rendezvous and
// how many real failures the job survives. Its field names are those of
// Kubeflow's PyTorchJob elasticPolicy; min and max are the trainer's
// min-instance and max-instance, and the rendezvous host is always the
// master Service, so neither is repeated here.
type ElasticPolicy struct {
	// RdzvBackend is torchrun's rendezvous backend; c10d, whose store the
	// master pod hosts, is the only one.
	// +kubebuilder:validation:Enum=c10d
	// +kubebuilder:default=c10d
	// +optional
	RdzvBackend string `json:"rdzvBackend,omitempty"`

	// RdzvPort is the port of the rendezvous store in the master pod, and of
	// the master Service.
	// +kubebuilder:default=29400
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	RdzvPort *int32 `json:"rdzvPort,omitempty"`

	// RdzvConf is passed to torchrun's rendezvous (PET_RDZV_CONF) after
	// is_host=false, which EDL sets: the store is the master's, never a
	// trainer's. At most 32 entries.
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=32
	// +optional
	RdzvConf []RdzvConf `json:"rdzvConf,omitempty"`

	// NProcPerNode is the worker processes torchrun starts in each trainer
	// pod (PET_NPROC_PER_NODE), one per GPU as a rule.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	NProcPerNode *int32 `json:"nProcPerNode,omitempty"`

	// MaxRestarts is the job's failure budget: the failures of its
	// training it survives; one more fails the job. A PyTorch job fails
	// when its worker group fails (torchrun's max_restarts is 0, so its
	// agent exits and the trainer container restarts), except where a
	// resize or the loss of its master ended the run; a Horovod job when
	// its launcher (horovodrun) exits non-zero.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// ResizeCooldownSeconds is the least time between two resizes of the
	// job that the autoscaler keeps, above the cool-down it derives from
	// the job's measured resize cost; a yield to pods of a higher priority
	// does not wait for it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	ResizeCooldownSeconds *int32 `json:"resizeCooldownSeconds,omitempty"`

	// HostDiscovery, for a Horovod job only, sets its host-discovery
	// file: the controller keeps the ConfigMap <job>-hosts listing the
	// Running trainers (<podIP>:<slots>, one per line), mounted in the
	// master pod at /etc/edl with a discover_hosts.sh that prints it. Every
	// Horovod job has the file; unset, its slots per host are 1.
	// +optional
	HostDiscovery *HostDiscovery `json:"hostDiscovery,omitempty"`
}

// RdzvConf is one key=value of the rendezvous configuration.
//
// +kubebuilder:validation:XValidation:rule="self.key != 'is_host'",message="rdzvConf: key is_host is EDL's: the rendezvous store is the master pod's, never a trainer's"
// +kubebuilder:validation:XValidation:rule="!self.key.contains(',') && !self.key.contains('=') && !self.value.contains(',')",messageExpression="'rdzvConf: ' + self.key + '=' + self.value + ' must not contain a comma, nor its key an equals sign: PET_RDZV_CONF is key=value,key=value'"
type RdzvConf struct {
	// Key is the name of a rendezvous setting, e.g. join_timeout.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Key string `json:"key"`
	// Value is the setting's value.
	// +kubebuilder:validation:MaxLength=253
	Value string `json:"value"`
}

// HostDiscovery is the host-discovery file of a Horovod job.
type HostDiscovery struct {
	// SlotsPerHost is the slots each trainer offers (its GPUs, as a rule).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	SlotsPerHost *int32 `json:"slotsPerHost,omitempty"`
}

// PodRestarts is how many restarts of one trainer pod a job's failure
// budget has counted.
type PodRestarts struct {
	// Pod is the trainer pod's name.
	Pod string `json:"pod"`
	// Restarts are its containers' restarts counted.
	Restarts int32 `json:"restarts"`
}

// ResizeStatus is what the controller observed of a job's resizes and
// failures (status.resize).
type ResizeStatus struct {
	// Count is the trainer resizes the autoscaler applied to the job.
	// +optional
	Count int32 `json:"count,omitempty"`

	// Last is the time of the last resize counted: status.lastScale's.
	// +optional
	Last *metav1.Time `json:"last,omitempty"`

	// LastCost is how long the last measured resize took: from the resize
	// until every trainer pod was Ready again. Measured on growth; a
	// scale-down's survivors restart inside their pods, which readiness
	// does not see, so it keeps the figure of the last growth.
	// +optional
	LastCost *metav1.Duration `json:"lastCost,omitempty"`

	// Measured is true once LastCost is the cost of the resize at Last.
	// +optional
	Measured bool `json:"measured,omitempty"`

	// Failures are the failures of the job's training counted against
	// spec.elasticPolicy.maxRestarts (the budget used).
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// LastFailure is the last failure counted.
	// +optional
	LastFailure *Failure `json:"lastFailure,omitempty"`

	// Counted are the live trainer pods whose restarts Failures counted,
	// so that a restart is counted once and a pod that goes keeps its
	// count in Failures.
	// +listType=map
	// +listMapKey=pod
	// +optional
	Counted []PodRestarts `json:"counted,omitempty"`
}

// Failure is one failure of a job's training: the container whose exit
// was counted against the budget.
type Failure struct {
	// Time is when the container exited.
	Time metav1.Time `json:"time"`
	// Pod is the pod the container ran in.
	Pod string `json:"pod"`
	// ExitCode is the container's exit code.
	ExitCode int32 `json:"exitCode"`
	// Reason is the kubelet's reason for the termination (Error,
	// OOMKilled, ...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is the end of the container's termination message: the last
	// lines of its log.
	// +optional
	Message string `json:"message,omitempty"`
}

// ReasonTooManyFailures: the trainers of a PyTorch or Horovod job failed
// more often than spec.elasticPolicy.maxRestarts.
const ReasonTooManyFailures = "TooManyFailures"

// FrameworkOrDefault is spec.framework after defaulting.
func (s *TrainingJobSpec) FrameworkOrDefault() Framework {
	if s.Framework == "" {
		return FrameworkPaddlePaddle
	}
	return s.Framework
}

// Elastic is spec.elasticPolicy, or an empty one.
func (s *TrainingJobSpec) Elastic() ElasticPolicy {
	if s.ElasticPolicy == nil {
		return ElasticPolicy{}
	}
	return *s.ElasticPolicy
}

// RdzvPortOrDefault is elasticPolicy.rdzvPort after defaulting.
func (p ElasticPolicy) RdzvPortOrDefault() int32 { return valueOr(p.RdzvPort, DefaultRdzvPort) }

// NProcPerNodeOrDefault is elasticPolicy.nProcPerNode after defaulting.
func (p ElasticPolicy) NProcPerNodeOrDefault() int32 {
	return valueOr(p.NProcPerNode, DefaultNProcPerNode)
}

// MaxRestartsOrDefault is elasticPolicy.maxRestarts after defaulting.
func (p ElasticPolicy) MaxRestartsOrDefault() int32 {
	return valueOr(p.MaxRestarts, DefaultElasticBudget)
}

// ResizeCooldown is elasticPolicy.resizeCooldownSeconds, 0 when unset.
func (p ElasticPolicy) ResizeCooldown() int32 { return valueOr(p.ResizeCooldownSeconds, 0) }

// SlotsPerHost is hostDiscovery.slotsPerHost after defaulting.
func (p ElasticPolicy) SlotsPerHost() int32 {
	if p.HostDiscovery == nil {
		return DefaultSlotsPerHost
	}
	return valueOr(p.HostDiscovery.SlotsPerHost, DefaultSlotsPerHost)
}
