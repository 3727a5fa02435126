// Package planner decides how many trainers each elastic TrainingJob should
// run, and which queued jobs start. [Plan] is a pure function from a cluster
// snapshot and the elastic jobs to a list of [ScaleAction]s, each with a
// reason a person can check; [Decide] is Plan with gang admission and an
// [Explanation] of every job. Both read no clock (the time is
// [Options.Now]), call no API and never mutate their inputs, which is what
// makes them fuzzable, benchmarkable and usable for a dry run. The package
// imports no client-go at all — no clientset, lister, informer or recorder —
// and a test fails when it does; applying a decision is the job of package
// autoscaler, which reads the informers, calls Decide and patches.
//
// The idea is the original EDL's: a job's fulfillment is how far it is between
// its min and max trainers; idle capacity goes one trainer at a time to the
// least fulfilled job while the cluster stays under max_load_desired and a node
// really has room; trainers are taken back from the lowest-priority, most
// fulfilled jobs when the cluster is over the threshold or higher-priority pods
// cannot be scheduled. docs/autoscaler.md explains the rules and lists the
// original's defects and where each is avoided.
//
// One plan runs these steps, in this order (see [Decide]):
//
//  1. reserve the room of what waits for a node: kept trainers not scheduled
//     yet, and unschedulable pods (or pods kube-scheduler has not tried for
//     [UntriedGrace]) that fit or have a nominated node;
//  2. make room, in one plan, for the pods left that trainers may give way
//     to — the pods of jobs below their minimum, and pods of a higher
//     priority that may preempt (the bulk yield) — by yielding trainers
//     above other jobs' minimums on nodes those pods may use, no more than
//     they need plus one trainer per node;
//  3. admit the queued jobs whose whole minimum fits their namespace's quota
//     and the nodes, in priority order, then (with teams) the team using the
//     least for its weight first, then age, with the head of each team's
//     queue's nodes reserved so smaller jobs cannot starve it, preempting
//     whole lower-priority jobs where [Options.Preemption] allows (across
//     teams only for a team within its guarantee);
//  4. keep the share of the jobs admitted but not all running yet;
//  5. yield to load above max_load_desired — the bound pods and the pods
//     steps 1 and 2 gave room, which bind within seconds — and give up
//     trainers no node can hold;
//  6. rebalance between jobs of one priority whose fulfillment is too far
//     apart;
//  7. grow the least fulfilled jobs into what is left;
//  8. turn the changes into actions and explain every job.
package planner
