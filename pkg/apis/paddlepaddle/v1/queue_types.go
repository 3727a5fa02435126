package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrainingQueue is a team's share of the cluster: the namespaces whose
// TrainingJobs are the team's, its weight in the weighted fair share, the
// resources its jobs' minimums are guaranteed, and the most it may use. The
// autoscaler lends the idle share of a team to other teams' elastic trainers
// and takes it back by shrinking trainers above their minimum. A namespace
// that no TrainingQueue names belongs to the default team, of weight 1; a
// cluster without TrainingQueues shares by job, as before teams existed.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=trainingqueues,singular=trainingqueue,shortName=tq,scope=Cluster,categories=paddle
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="Deserved",type=string,JSONPath=`.status.deserved.cpu`,description="CPU of the team's weighted fair share at the autoscaler's last plan"
// +kubebuilder:printcolumn:name="Used",type=string,JSONPath=`.status.used.cpu`,description="CPU the team's pods request"
// +kubebuilder:printcolumn:name="Borrowed",type=string,JSONPath=`.status.borrowed.cpu`,description="CPU used above the deserved share, lent by idle teams"
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.runningJobs`
// +kubebuilder:printcolumn:name="Queued",type=integer,JSONPath=`.status.queuedJobs`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TrainingQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TrainingQueueSpec   `json:"spec"`
	Status TrainingQueueStatus `json:"status,omitempty"`
}

// TrainingQueueSpec names a team's namespaces and its share.
//
// +kubebuilder:validation:XValidation:rule="!has(self.guarantee) || !has(self.limit) || ['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self.guarantee) || !(k in self.limit) || !isQuantity(string(self.guarantee[k])) || !isQuantity(string(self.limit[k])) || !quantity(string(self.limit[k])).isLessThan(quantity(string(self.guarantee[k]))))",message="spec.guarantee must not exceed spec.limit",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self.guarantee && k in self.limit && isQuantity(string(self.guarantee[k])) && isQuantity(string(self.limit[k])) && quantity(string(self.limit[k])).isLessThan(quantity(string(self.guarantee[k])))).map(k, 'spec.guarantee must not exceed spec.limit: guarantee[' + k + '] is above limit[' + k + ']')[0]",fieldPath=".guarantee"
type TrainingQueueSpec struct {
	// Namespaces are the team's namespaces: every TrainingJob in them is the
	// team's. A namespace belongs to one team; one named by two
	// TrainingQueues belongs to the default team, and both queues report it
	// (condition Conflict).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces"`

	// Weight is the team's weight in the weighted fair share: a team of
	// weight 2 deserves twice the share of a team of weight 1 while both
	// have demand.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Weight *int32 `json:"weight,omitempty"`

	// Guarantee is what the team's jobs' minimums are guaranteed (cpu,
	// memory, GPUs): its deserved share never falls below it while it has
	// that much demand, and borrowers give it back.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self) || !isQuantity(string(self[k])) || !quantity(string(self[k])).isLessThan(quantity('0')))",message="guarantee must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self && isQuantity(string(self[k])) && quantity(string(self[k])).isLessThan(quantity('0'))).map(k, 'guarantee must be non-negative quantities: guarantee[' + k + '] is ' + string(self[k]))[0]"
	// +optional
	Guarantee corev1.ResourceList `json:"guarantee,omitempty"`

	// Limit is the most the team may use, even on an idle cluster.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="['cpu', 'memory', 'nvidia.com/gpu'].all(k, !(k in self) || !isQuantity(string(self[k])) || !quantity(string(self[k])).isLessThan(quantity('0')))",message="limit must be non-negative quantities",messageExpression="['cpu', 'memory', 'nvidia.com/gpu'].filter(k, k in self && isQuantity(string(self[k])) && quantity(string(self[k])).isLessThan(quantity('0'))).map(k, 'limit must be non-negative quantities: limit[' + k + '] is ' + string(self[k]))[0]"
	// +optional
	Limit corev1.ResourceList `json:"limit,omitempty"`
}

// TrainingQueueStatus is the team's share at the autoscaler's last plan.
type TrainingQueueStatus struct {
	// Deserved is the team's weighted fair share, summed over the pools.
	// +optional
	Deserved corev1.ResourceList `json:"deserved,omitempty"`
	// Used is what the team's pods request once the plan's scalings are
	// done.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// Borrowed is what Used holds above Deserved: the idle share of other
	// teams, lent to the team's elastic trainers.
	// +optional
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`
	// Lent is what Deserved holds above Used: the team's share other teams
	// may borrow while it is idle.
	// +optional
	Lent corev1.ResourceList `json:"lent,omitempty"`
	// RunningJobs and QueuedJobs count the team's jobs.
	// +optional
	RunningJobs int32 `json:"runningJobs,omitempty"`
	// +optional
	QueuedJobs int32 `json:"queuedJobs,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Conflict when a namespace is named by another
	// TrainingQueue too.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TrainingQueueList is a list of TrainingQueues.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type TrainingQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []TrainingQueue `json:"items"`
}

// ConditionConflict is a TrainingQueue's condition while one of its
// namespaces is named by another TrainingQueue too.
const ConditionConflict = "Conflict"

// DefaultTeam is the team of the namespaces no TrainingQueue names.
const DefaultTeam = "default"
