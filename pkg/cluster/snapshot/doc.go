// Package snapshot holds the data the planner reads: a [Snapshot] of the
// cluster's schedulable capacity and load, its [Node]s, the pods that wait
// for one ([PendingPod]), the jobs' [TrainerPod]s, the namespaces' [Quota]s
// and the [Placement] that restricts where a pod may run.
//
// It is data and pure functions only, and imports no client-go: package
// cluster's Tracker fills a Snapshot from the informers, and the planner
// (package planner) decides from it without reaching the API. A Snapshot is
// read-only once handed out — the Tracker shares its unchanged parts with the
// next one — and [Snapshot.DeepCopy] gives one to modify.
package snapshot
