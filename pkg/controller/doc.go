// Package controller runs TrainingJobs. For each job it creates and owns a
// ReplicaSet per role (master, pservers, trainers) and the Services that let
// them find each other, follows the pods to the job's phase (Pending,
// Queued, Suspended, Creating, Running, Succeeded, Failed), and writes the
// status subresource. With gang admission a new job's ReplicaSets are held
// at 0 replicas, their templates gated, until the autoscaler admits the job
// ([isQueued], [Controller.ensureUngated]); spec.suspend scales them to 0 ([setSuspended]).
//
// It is the classic client-go controller: informer event handlers only map
// events to job keys ([Controller.enqueueOwner], [Controller.enqueuePodJob]); a rate-limited workqueue feeds a few
// workers; a sync ([Controller.sync]) reads from the listers, builds the desired
// objects with pure functions ([ReplicaSet]), creates what is missing and
// patches what drifted ([Controller.ensureReplicaSet]), computes the status with a pure function
// ([computeStatus]) and writes it only when it changed. The trainer count belongs
// to the autoscaler; the controller only clamps it into [min-instance,
// max-instance].
package controller
