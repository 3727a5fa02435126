// Package autoscaler decides how many trainers each elastic TrainingJob should
// run. Plan is a pure function from a cluster snapshot and the elastic jobs to
// a list of ScaleActions, each with a reason a person can check; it reads no
// clock, calls no API and never mutates its inputs, which is what makes it
// fuzzable, benchmarkable and usable for a dry run. Applying the actions (the
// ReplicaSet patches) is the actuator's job, not this package's planning code.
//
// The idea is the original EDL's: a job's fulfillment is how far it is between
// its min and max trainers; idle capacity goes one trainer at a time to the
// least fulfilled job while the cluster stays under max_load_desired and a node
// really has room; trainers are taken back from the lowest-priority, most
// fulfilled jobs when the cluster is over the threshold or higher-priority pods
// cannot be scheduled. docs/autoscaler.md explains the rules and lists the
// original's defects and where each is avoided.
//
// Decide is Plan with gang admission: it also admits, in priority and age
// order, the queued jobs whose whole minimum fits their namespace's quota
// and the nodes (admit.go, admitquota.go), so that no job starts half and no
// two jobs wait on each other; the head of the queue has its nodes reserved
// so that smaller jobs cannot starve it (reservation.go), and a job that
// fits only if running jobs of a lower priority stop may stop them whole
// (preempt.go). The Autoscaler records the admissions and preemptions in
// the jobs' status (queue.go) and the controller scales the ReplicaSets.
package autoscaler
