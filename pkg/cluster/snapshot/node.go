package snapshot

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Node is what the planner knows of one node that counts: Ready and not
// cordoned. Labels and Taints are the informer's, shared and read-only.
type Node struct {
	Name   string
	Labels map[string]string
	// Taints are the node's NoSchedule and NoExecute taints: the ones that
	// keep pods off it. PreferNoSchedule is only a preference.
	Taints []corev1.Taint
	// Allocatable is status.allocatable; Free is Allocatable minus the
	// requests of the live pods bound to the node, terminating ones
	// included, and can be negative.
	Allocatable, Free Resources
	// Terminating is the part of the requests that pods being deleted hold:
	// it frees once their grace period ends (see TerminatingPod).
	Terminating []TerminatingPod
}

// TerminatingPod is a pod on a counted node that is being deleted.
type TerminatingPod struct {
	Request Resources
	// Deadline is metadata.deletionTimestamp: when the grace period ends.
	Deadline time.Time
	// Trainer: the pod is a trainer of an EDL job, which its ReplicaSet
	// no longer counts.
	Trainer bool
}
