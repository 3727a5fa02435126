// Package experiment reproduces the two experiments of the original EDL
// report on the local control plane (test/framework) with kwok nodes, with the
// edl binary running the autoscaler (EDL on) or only planning (-dry_run, EDL
// off):
//
//   - Training: jobs arrive one by one on an otherwise empty cluster. With EDL
//     off each job asks for its maximum; with EDL on it starts at its minimum
//     and the autoscaler shares the spare capacity.
//   - Shared: a web service under a higher PriorityClass shrinks and grows in
//     steps while training jobs run beside it.
//
// one of node pools:
//
//   - Pools: Shared on a CPU pool and a tainted GPU pool; CPU jobs and the
//     web service (pinned by its node selector) use the CPU pool, GPU jobs
//     select and tolerate the GPU pool. Each pool's utilization (of GPUs in
//     the GPU pool) is measured against its own bound, and the trainer pods
//     EDL's growth added are timed until they are bound to a node.
//
// and one of teams:
//
//   - Teams: three teams weighted 2, 1 and 1 (one with a guarantee), each
//     in its namespace, alternately idle and oversubscribed by bursts of
//     elastic jobs; with TrainingQueues, without (EDL shares by job), or
//     under static ResourceQuotas. Each team's use is measured against its
//     weighted fair share (FairShares), and the time a team below its share
//     takes to get its jobs' minimums and its share back.
//
// A Recorder samples the cluster every interval (CPU allocation utilization,
// pending jobs, trainers per job, web pods pending) and times every job and
// web pod; Ideal computes the utilization a perfect packer could reach with
// the same demand on the same nodes. Results are written as CSV, PNG plots
// (gonum.org/v1/plot) and a Markdown table. test/cmd/experiment is the command
// (make experiment); test/cmd/demo reuses the job builders and the Recorder.
package experiment
