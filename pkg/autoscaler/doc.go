// Package autoscaler runs the planner every interval and carries out its
// decisions: it is the runtime around package planner, the only part of the
// autoscaling that reads the informers and writes to the API.
//
// One cycle, [Autoscaler.RunOnce], takes five steps: it snapshots the
// cluster (package cluster's Tracker), reads the plan's inputs from the
// informers — the Running elastic jobs and, with gang admission, the queued,
// admitted and preemptible jobs — calls [planner.Decide], applies the
// actions by patching the trainer ReplicaSets (scale-downs first, each patch
// testing the old count so that a concurrent writer wins), and records the
// outcome in the jobs' status: the Scaling condition and last scaling, the
// preemptions, admissions and places in the queue. The controller then
// scales an admitted job's ReplicaSets up and a preempted one's down.
// A cycle runs every interval, and once more per interval soon after an
// event a plan acts on at once — a pod that outranks trainers created or
// turning unschedulable, room freeing — which the pod and node informers'
// handlers signal ([Config.WakeDelay]).
// [Autoscaler.Explain] plans the same way and writes nothing, for
// `kubectl edl explain`.
package autoscaler
