package pytorch

import _ "embed" // for Wrapper

// Wrapper is the program that stands first in a PyTorch job's trainer
// container, run as `python3 -c <Wrapper> <torchrun's arguments>`: a Python 3
// program (edl_torchrun.py; standard library only, Python 3.8 or newer, as the
// trainer image's python3 runs it) that runs torchrun's agent
// (torch.distributed.run's main, its rendezvous handler made to leave the
// round when the agent exits rather than close the rendezvous, so that a
// trainer restarted after a failure, and a scale-down's survivors, can join
// again), and makes a trainer EDL removes leave the job without ending it.
//
// torchrun's agent, sent SIGTERM, closes the job's rendezvous, after which
// every other agent ends its run too (torch.distributed.elastic's
// LocalElasticAgent._shutdown): a scale-down would stop the whole job. So the
// container's first process is this wrapper: on SIGTERM (or SIGINT) it kills
// the agent with SIGKILL, which closes nothing, and passes SIGTERM to the
// agent's workers, which finish their step (the training script's contract: a
// checkpoint and an exit) and exit; it waits for them within the grace period,
// then exits 0. Their end fails the survivors' collectives, so the survivors'
// agents exit, their containers restart and re-rendezvous without this
// trainer once its keep-alive lapses. On its own exit the agent's status is
// the trainer's (128+N when signal N killed it); when it failed, the end of
// the failing worker's stderr (teed by torchrun into the state dir) goes to
// the container's termination log.
//
// It takes the signals from its first line, so one that comes before the agent
// started means the agent never starts; it becomes a child subreaper, so it
// waits for and reaps the workers of the agent it kills whatever its PID; and
// it finds those workers from each process's parent in /proc/<pid>/stat, which
// every kernel has. A training that ended is not run again: when the pod has a
// state dir (the environment variable EDL_STATE_DIR names an existing
// directory, an emptyDir), the agent's exit 0 is recorded there in the file
// finished, and a wrapper that finds that file, started again by the
// ReplicaSet's restartPolicy Always, says so, does not start the agent and
// waits for SIGTERM.
//
//go:embed edl_torchrun.py
var Wrapper string
