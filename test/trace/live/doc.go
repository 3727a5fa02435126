// Package live replays a Pollux workload (package test/trace) on the local
// control plane (test/framework) under edl itself, time compressed by a
// speed factor: 16 kwok nodes of 4 GPUs, edl as its binary with the policy
// under test, and every job a PyTorch TrainingJob of 1-GPU trainers that
// the workload submits at its arrival.
//
// kwok runs no process, so phantom trainers stand in for the training: for
// each job, from its trainer pods bound and Running, the phantom trains at
// the step time the trace measured at that placement and local batch,
// stops for the restart cost after every change of its pods, writes its
// progress to the job's progress ConfigMap as a real trainer does
// (example/edl_progress.py), and, once its work is done, has kwok end its
// trainers with exit 0, which edl judges the job's success. The planner sees
// only what edl reads from the API server: pods, nodes and the progress
// reports.
//
// The replay's results are a trace.Result, comparable with the simulator's
// run of the same jobs at the same interval: Compare.
package live
