// Package trace replays the Pollux trace (OSDI'21; its data files, Apache-2.0,
// copied into testdata/pollux) through edl's own planner: a
// simulated cluster, 16 nodes of 4 GPUs by default, on which edl's
// [planner.Decide] plans every autoscale interval, with the inputs
// pkg/autoscaler would read from such a cluster and edl's default options
// (pkg/config). The planner is called, never copied; command
// test/cmd/trace runs the workloads and writes the figures.
//
// # Jobs
//
// Each row of a workload file is a TrainingJob of 1-GPU trainers that
// arrives at its time ([ReadWorkload]). It keeps the row's global batch
// however many trainers it has, so each trainer's local batch is the
// global batch over the trainers. Its work is the steps its application
// needs to reach its target at that batch ([Application.Work]): the
// iteration of the last epoch of the validation-<batch>.csv files, linear
// between the two files around a batch no file has, as Pollux's
// simulator reads them. A job is done when it has made that many steps.
//
// # Step times
//
// A step's time on a placement — the trainers on each node it uses — at a
// local batch comes from the application's placements.csv (1 to 4 nodes)
// and scalability.csv (6 to 16 nodes) ([Application.StepTime]):
//
//   - a placement measured as such (rotated to its smallest form, as
//     Pollux's simulator does) is read from its own rows, linear in the
//     local batch between the two measured around it, as Pollux's
//     simulator does;
//   - any other is read from the sizes around it: the rows of one count of
//     nodes and replicas averaged together, linear in the replicas
//     between two counts measured at its node count and, between two node
//     counts measured, linear in the nodes at the same replicas per node
//     ([stepTimes.atSize]). Pollux's simulator triangulates instead
//     (scipy's LinearNDInterpolator); at a measured size both give the
//     measurement, and both stay between the measurements around a size;
//   - below the smallest local batch measured at a placement or size the
//     smallest's time is taken; above the largest, the local batch is
//     accumulated over the fewest micro-batches of at most the largest, as
//     Pollux's simulator runs a local batch above its max_local_bsz
//     ([curve.at]): the static configurations of bert, for one, ask for
//     local batches of 24 to 64 where 12 was measured, and yolov3's of 16
//     where its sizes above 4 nodes measured 8.
//
// The simulated kube-scheduler packs the trainers (NodeResourcesFit
// MostAllocated) unless told to spread them, so a job's placement, and
// with it its step time, is the scheduler's choice, as in a real cluster.
//
// # What edl sees
//
// The planner sees what edl would read: the snapshot of nodes and trainer
// pods, the TrainingJob's bounds and replicas, its Queued condition, its
// last scale-down and scaling, and the cost of its last resize as the
// controller measures it; a policy may add what the job's progress reports
// told ([Reports]: its steps done and in all, its size, the steps and
// seconds at each size it trained at), never the trace's measurements.
// Gang admission and preemption are on, as in edl by default; every job
// has one priority, one namespace and no quota. The jobs restart all their
// trainers on every resize (a PyTorch job), so resizes are priced. The
// plans run on the interval's ticks only: edl's wakes between ticks (a
// job queued, room freed) are not simulated, which delays a decision by an
// interval at most.
//
// # The cluster
//
// A plan's scalings set the trainer ReplicaSets' replicas; an admitted
// job's go to its minimum. The ReplicaSets then create or delete pods at
// once (the unbound first, then those the plan marked, then the newest),
// a deleted pod frees its GPU at once, and kube-scheduler binds the pods
// that fit at once, and again at the next tick those that did not. A job
// trains with its bound trainers once at least its minimum is bound;
// every tick that changes them, its start included, stops it for the
// restart cost (30 s, as in Pollux's simulator), and every such tick
// after its start counts as one resize. A job that reaches its target
// ends at that moment and its pods go.
//
// # Policies
//
// A [Policy] is a small value: a job's min and max trainers, what the
// planner is told of the job beyond edl's own inputs, and which plan
// options change. [Fulfillment] is the planner as it is, a job's bounds
// the fewest and most trainers whose local batch lies within those its
// application was measured at ([Application.Trainers]), at most the
// cluster's GPUs; [Static] runs each job at the file's num_replicas, its
// min and max, queued as edl queues any job. Goodput and oracle policies
// are to come with the planner's goodput rule: each sets the option that
// picks it, and gives each planner.Job, through Policy.Job, its progress
// reports (goodput) or the truth, JobSpec.App (oracle).
//
// # Figures
//
// [Summarize] computes a run's average, median and 99th-percentile job
// completion time (arrival to end), its makespan (first arrival to last
// end), the share of the GPU-time over the makespan trainers held, and
// the resizes per hour the jobs ran (start to end).
package trace
