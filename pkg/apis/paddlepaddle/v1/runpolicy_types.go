package v1

// CleanPodPolicy is which of a job's pods go when it finishes, and which
// stay, stopped, for their logs: the name and values of Kubeflow's
// runPolicy.cleanPodPolicy.
// +kubebuilder:validation:Enum=None;Running;All
type CleanPodPolicy string

// The clean-pod policies. A job's pods restart on their own (restartPolicy
// Always), so "running" means a pod whose containers have not failed.
const (
	// CleanPodPolicyNone keeps every pod of the job, stopped.
	CleanPodPolicyNone CleanPodPolicy = "None"
	// CleanPodPolicyRunning keeps a failed job's pods with a container
	// that exited non-zero, stopped; the others go, and all of a job that
	// succeeded.
	CleanPodPolicyRunning CleanPodPolicy = "Running"
	// CleanPodPolicyAll keeps none: every ReplicaSet scales to 0.
	CleanPodPolicyAll CleanPodPolicy = "All"
)

// CleanPodPolicies are the clean-pod policies there are.
var CleanPodPolicies = []CleanPodPolicy{CleanPodPolicyNone, CleanPodPolicyRunning, CleanPodPolicyAll}

// RunPolicy is what is left of a job once it finishes (Succeeded or
// Failed), after Kubeflow's runPolicy.
type RunPolicy struct {
	// CleanPodPolicy is which pods go when the job finishes; the pods kept
	// are stopped (spec.activeDeadlineSeconds 1: the kubelet ends them,
	// phase Failed, reason DeadlineExceeded, their logs kept), taken out
	// of their ReplicaSet, labelled edl.paddlepaddle.org/kept=<job> and
	// owned by the job, so they go with it. Running by default: a failed
	// job keeps its failed pods, and kubectl logs reads them.
	// +kubebuilder:default=Running
	// +optional
	CleanPodPolicy CleanPodPolicy `json:"cleanPodPolicy,omitempty"`

	// TTLSecondsAfterFinished, when set, deletes the job (and what it
	// owns: its kept pods too) that long after it finished.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// CleanPods is the job's clean-pod policy, Running when unset.
func (s *TrainingJobSpec) CleanPods() CleanPodPolicy {
	if s.RunPolicy == nil || s.RunPolicy.CleanPodPolicy == "" {
		return CleanPodPolicyRunning
	}
	return s.RunPolicy.CleanPodPolicy
}

// The labels of a finished job's kept pods (RunPolicy), which replace the
// role's label (LabelFor), so that no ReplicaSet of the job selects them:
// the job's name and the pod's role, in lower case.
const (
	LabelKept     = "edl.paddlepaddle.org/kept"
	LabelKeptRole = "edl.paddlepaddle.org/kept-role"
)

// EventPodsKept is the Normal event that names the pods a finished job
// kept.
const EventPodsKept = "PodsKept"
