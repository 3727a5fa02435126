// Package kubeflow converts Kubeflow's PyTorchJobs (kubeflow.org/v1) into
// TrainingJobs of framework PyTorch that run the same containers: Kubeflow's
// Master (a worker of rank 0) and Workers all become EDL's trainers, and
// EDL's own master pod holds the rendezvous store.
//
// The input is read as a generic map, without Kubeflow's Go types, and
// field by field: every field the conversion does not carry as written is
// a [Note] naming its path in the input and why, so that nothing is
// dropped silently. `kubectl edl convert` prints the notes on stderr.
package kubeflow
