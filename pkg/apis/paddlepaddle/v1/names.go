package v1

import (
	"strconv"
	"strings"
	"time"
)

// Role is one of the three kinds of process of a job.
type Role string

// The roles, as the launcher reads them from PADDLE_TRAINING_ROLE.
const (
	RoleMaster  Role = "MASTER"
	RolePserver Role = "PSERVER"
	RoleTrainer Role = "TRAINER"
)

// The pod labels of the original EDL; each selects one role of one job, and
// its value is the job's name.
const (
	LabelTrainer = "paddle-job"
	LabelPserver = "paddle-job-pserver"
	LabelMaster  = "paddle-job-master"
)

// AnnotationDeletionCost is the ReplicaSet controller's pod-deletion-cost:
// on a scale-down it deletes pods of lower cost first. The controller sets it
// on trainers; the pod informer's transform keeps it.
const AnnotationDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// DeletionCostRemove is the pod-deletion-cost the autoscaler gives the
// running trainers a plan picked to free a node, and every trainer a
// Horovod job's scale-down removes, just before it lowers the replicas:
// the lowest there is, so the ReplicaSet controller deletes them before
// any other running trainer. The controller leaves it as it is until it
// is stale (AnnotationMarkedForRemoval).
const DeletionCostRemove = "-2147483648"

// AnnotationMarkedForRemoval is when the autoscaler marked a trainer
// DeletionCostRemove (RFC 3339). A mark the ReplicaSet controller did not
// act on within a minute (controller.MarkTTL) is stale: the autoscaler
// stopped between the mark and the scale-down, or the ReplicaSet deleted
// another pod first. The controller clears it, so that the trainer is
// ranked, and listed in a host-discovery file, like any other again.
const AnnotationMarkedForRemoval = "paddlepaddle.org/marked-for-removal"

// RemovalMarkPatch is the JSON merge patch of a trainer's annotations that
// marks it for removal at at (DeletionCostRemove and
// AnnotationMarkedForRemoval), or, when at is zero, clears both.
func RemovalMarkPatch(at time.Time) []byte {
	cost, marked := "null", "null"
	if !at.IsZero() {
		cost, marked = strconv.Quote(DeletionCostRemove), strconv.Quote(at.UTC().Format(time.RFC3339))
	}
	return []byte(`{"metadata":{"annotations":{"` + AnnotationDeletionCost + `":` + cost + `,"` + AnnotationMarkedForRemoval + `":` + marked + `}}}`)
}

// AnnotationHostsPods, on a Horovod job's host-discovery ConfigMap, names
// the trainer pods its hosts file lists, comma-separated.
const AnnotationHostsPods = "paddlepaddle.org/hosts-pods"

// AnnotationHostsVersion, on a Horovod job's master pod, is a hash of the
// hosts file the controller last wrote into the host-discovery ConfigMap.
// Changing the pod makes its kubelet project the ConfigMap's new data into
// the pod at once, instead of at its next periodic sync (a minute or more
// later).
const AnnotationHostsVersion = "paddlepaddle.org/hosts-version"

// HostsSettle is how long a Horovod job's trainer still runs after every
// master pod carries the version of the host list that dropped it, at the
// least: the controller lowers the trainer ReplicaSet no sooner. It covers
// the master's kubelet writing the new file into the pod once the
// controller nudged it (AnnotationHostsVersion) — 0.05 to 0.92 s on the real node of the tests
// (TestHorovodHostsFileDropsATrainerBeforeItsPodGoes) — and horovodrun's
// driver, which runs the discovery script every second.
const HostsSettle = 3 * time.Second

// SchedulingGateAdmission is the scheduling gate in a queued job's pod
// templates (spec.schedulingGates): a pod created while the job is queued
// is left alone by kube-scheduler until the autoscaler admits the job and
// the controller removes the gate.
const SchedulingGateAdmission = "paddlepaddle.org/admission"

// naming is how the objects of one role are named and labelled. It is no
// part of the API, so it has no OpenAPI definition.
//
// +k8s:openapi-gen=false
type naming struct {
	role Role
	// label selects the role's pods; its value is the job's name.
	label string
	// name is the role's lower-case name: its ReplicaSet and Service are
	// <job>-<name>, its container <name>.
	name string
}

// namings are the roles' names, in the order JobOf reads the labels.
var namings = [...]naming{
	{RoleTrainer, LabelTrainer, "trainer"},
	{RolePserver, LabelPserver, "pserver"},
	{RoleMaster, LabelMaster, "master"},
}

// namingOf returns the names of a role; anything that is not the master or
// a pserver is a trainer.
func namingOf(role Role) naming {
	for _, n := range namings {
		if n.role == role {
			return n
		}
	}
	return namings[0]
}

// Name is the role's lower-case name, "master", "pserver" or "trainer": the
// name of its container and the suffix of its ReplicaSet's and Service's.
func (r Role) Name() string { return namingOf(r).name }

// LabelFor returns the label key selecting a role's pods.
func LabelFor(role Role) string { return namingOf(role).label }

// ReplicaSetName is the name of a job's ReplicaSet for a role.
func ReplicaSetName(job string, role Role) string { return job + "-" + namingOf(role).name }

// ServiceName is the name of a job's Service for a role (master and pserver).
func ServiceName(job string, role Role) string { return ReplicaSetName(job, role) }

// HostsConfigMapName is the name of a Horovod job's host-discovery
// ConfigMap.
func HostsConfigMapName(job string) string { return job + "-hosts" }

// JobOf returns the job and role a pod's labels name: the first of the
// trainer, pserver and master labels with a value. ok is false for a pod of
// no job.
func JobOf(labels map[string]string) (job string, role Role, ok bool) {
	if len(labels) == 0 {
		return "", "", false
	}
	for _, n := range namings {
		if job := labels[n.label]; job != "" {
			return job, n.role, true
		}
	}
	return "", "", false
}

// JobOfName returns the job and role whose ReplicaSet or Service would have
// this name. The name alone does not prove the object is the job's: it may
// be a foreign object in the job's way.
func JobOfName(name string) (job string, role Role, ok bool) {
	for _, n := range namings {
		if job, ok := strings.CutSuffix(name, "-"+n.name); ok {
			return job, n.role, true
		}
	}
	return "", "", false
}
