// Package scaling models how a training job's throughput scales with its
// trainers, fitted from the job's own measurements: what a goodput planner
// needs to give a trainer to the job it speeds up most, and what an ETA
// needs to tell how fast a job will run at another size. It is pure: it
// imports the standard library and gonum's optimizer only, reads no clock
// and keeps no state beyond its values, and a test fails when it imports
// anything else.
//
// # The model
//
// It is Pollux's (OSDI'21; AdaptDL's performance model). A step of
// data-parallel training computes the gradient of each trainer's local
// batch, then synchronises the gradients with an all-reduce, the two
// overlapping in part:
//
//	T_step = (T_grad^γ + T_sync^γ)^(1/γ)
//	T_grad = α_g + β_g·m                      m: the local batch
//	T_sync = 0                                one replica
//	       = α_r + β_r·(r−2)                  r ≥ 2 replicas on one node
//	       = α_n + β_n·(r−2)                  r ≥ 2 replicas across nodes
//
// α_g is the gradient's fixed cost and β_g its cost per sample. The
// all-reduce is bound by the slowest link it uses — a node's own when all
// replicas share one, the network otherwise — with α its time for two
// replicas and β what each further replica adds (a ring all-reduce takes a
// round per replica). γ, in [MinOverlap, MaxOverlap], is how much of the
// synchronisation hides behind the computation: at 1 they add up, and the
// step nears the larger as γ grows. [Params] holds the seven parameters,
// all non-negative.
//
// The throughput of r trainers sharing a global batch B is B / T_step with
// m = B/r ([Model.Throughput]), as EDL's example trainer splits a step's
// batch over its trainers: more trainers shorten the gradient's part and
// lengthen the synchronisation's.
//
// # The fit
//
// [Fit] takes [Measurement]s — the step time at a size (trainers, nodes,
// local batch) and, when the training knows it, the part of the step spent
// synchronising rather than computing — and finds the parameters by least
// squares on the logs of the step times and of the gradient times (step
// less sync) known: a relative error weighs the same on any job. The
// search is gonum's L-BFGS on the logs of the parameters, which keeps
// them above 0, and on a logistic transform of γ, which keeps it in its
// bounds; it starts from a line through the gradient times and the mean
// sync times, at two values of γ. Measurements of one size count as their
// mean log, so a fit costs the number of sizes, not of measurements.
// [Model.FitError] says how well the model reproduces its measurements.
//
// What the measurements cannot tell is set by priors after AdaptDL's,
// which lean to the optimistic ([Fit] lists them): with a single local batch, the gradient time is split
// evenly between α_g and β_g·m; without a size of more than two replicas on
// a link, its β is 0; without a measurement across nodes, the network is
// 10% slower than a node's links; without several replicas on one node, a
// node's links are as fast as the network.
//
// # Sizes not measured
//
// Fitted on the sizes a job has run at, the model says little of those it
// has not, and a planner that trusted it there would never try them. So
// [Model.Predict] applies the prior AdaptDL's allocator does: with N the
// largest size measured, the fitted model up to N, perfect scaling from N
// up to 2N, and no gain beyond 2N until the job has run there; a
// [Prediction]'s [Basis] says which. A job measured at no size — the zero
// [Model], whose [Model.Measured] is false — is taken to gain equally from
// every trainer, EDL's treatment of a job that reports nothing.
//
// # How well it predicts
//
// Fitted on Pollux's step times of six models (BERT, CIFAR-10,
// DeepSpeech2, ImageNet, NCF, YOLOv3) on 1 to 4 nodes of 4 GPUs, the model
// predicts their step times on 6 to 16 nodes (6 to 64 GPUs) with a mean
// relative error of 5% to 20% per model (TestPolluxScalability). The
// largest errors are at 48 to 64 GPUs, where the linear retrogression
// fitted up to 16 replicas overestimates the all-reduce: the model is
// pessimistic far beyond what it has seen. A planner does not lean on it
// there: above N, Predict assumes perfect scaling up to 2N, and a job that
// runs at a larger size is fitted again.
package scaling
