// Package framework is the seam between EDL and what a job's pods run:
// PaddlePaddle's launcher, torchrun, horovodrun. A [Framework] says what
// each role's pod runs and is given, how the job's end and its failures
// are judged, and what must happen before a trainer's pod goes; the
// controller builds pods and judges jobs through it, the autoscaler reads
// what the planner must know from it. Each framework is a package of its
// own (paddle, pytorch, horovod); package frameworks names them.
package framework
