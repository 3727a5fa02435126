// Package progress turns a job's progress reports — what its training
// writes into the job's progress ConfigMap (the progress contract,
// docs/api.md) — into what EDL knows of the training: the throughput at
// each size the job ran at, the scaling model fitted to it (pkg/scaling),
// the cost of a restart, and the ETA. It is pure: [Advance] takes the last
// status and a report and returns the next status; it reads no clock and
// calls no API, so that what it derives lives in the job's status and
// survives an edl restart and a leader change.
//
// # Measuring throughput
//
// Two reports measure the throughput between them when the same process
// wrote both (the run) at the same size: the work done between them over
// the time between them, by the training's clock. Every other pair spans
// a restart — a resize, a failure, a lost master — and measures its cost
// instead: the time between the reports less the time the work between
// them takes at the new size (work lost to the restart, redone, adds to
// it). So the throughput at a size leaves out what resizes cost, and the
// cost is known for the ETA and for a planner that prices a resize.
//
// The reports come at most once every 10 s ([v1.ProgressReportInterval]),
// and the controller may see fewer (its status writes are paced): two
// reports it sees far apart measure the same as the ones between them.
package progress
