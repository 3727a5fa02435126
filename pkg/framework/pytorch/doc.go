// Package pytorch is EDL's PyTorch framework: torchrun in every trainer,
// its c10d rendezvous store in the master pod ([Framework]). Its [Wrapper]
// stands first in every trainer container and runs torchrun's agent, so
// that a trainer the autoscaler removes leaves the job (its agent killed,
// its workers told to checkpoint and stop) instead of closing the
// rendezvous every other trainer runs in, and so that a trainer whose
// training ended is not run again when its container restarts. [Judge]
// tells a failure of the training from the exits a resize or the loss of
// the master causes.
package pytorch
