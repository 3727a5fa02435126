# EDL's wrapper of torchrun: the first process of a PyTorch job's trainer
# container, run as `python3 -c <this file> <torchrun's arguments>` (EDL's
# binary embeds it as pytorch.Wrapper). Standard library only, Python >= 3.8:
# it runs with the trainer image's python3.
#
# It runs torchrun's agent (python3 -m torch.distributed.run) and makes a
# trainer that EDL removes leave the job without ending it. The agent, sent
# SIGTERM, closes the job's rendezvous, and every other trainer's agent then
# ends its run too. So on SIGTERM (or SIGINT) the wrapper kills the agent with
# SIGKILL, which closes nothing, sends SIGTERM to the agent's workers, which
# checkpoint and exit, waits for them and exits 0.
#
# torchrun's agent runs with one change, AGENT's: when it exits it leaves
# the job's rendezvous instead of closing it. With PET_MAX_RESTARTS 0 an
# agent exits as soon as its worker group fails (EDL's controller judges
# the container's exit: a failure of the training, or the work of a resize
# or of the master's loss), and a closed rendezvous would let no trainer
# join it again, neither this one restarted nor a scale-down's survivors.
#
# When the agent fails, the end of the failing worker's stderr (torchrun
# tees it into $EDL_STATE_DIR/torchrun) is written to the container's
# termination log, so that the job's status says why, not torchrun's
# summary of it, and into $EDL_STATE_DIR/last-failure, which the next run
# of the container prints first: the kubelet keeps the log of a pod's last
# run alone, and a failed job's pod kept for its logs may have been
# restarted once more before it was stopped.
#
# The stop signals and SIGCHLD are blocked from the first line and taken one
# at a time with sigwaitinfo: none is lost however early it comes, and one
# that came before the agent was started is still pending when the wrapper
# would start it, so it never does.
import signal

STOP = {signal.SIGTERM, signal.SIGINT}
signal.pthread_sigmask(signal.SIG_BLOCK, STOP | {signal.SIGCHLD})

# The other imports come after the mask, on purpose.
import os
import shutil
import sys
import time

PR_SET_CHILD_SUBREAPER = 36

# The agent: torch.distributed.run, its DynamicRendezvousHandler.shutdown
# made to leave the round (torch's own exit operation, as an agent runs it
# before it joins the next round) rather than close the rendezvous.
AGENT = r"""
import sys
try:
    from torch.distributed.elastic.rendezvous import dynamic_rendezvous as dr

    def leave(self):
        self._stop_heartbeats()
        try:
            self._op_executor.run(dr._RendezvousExitOp(), self._get_deadline(self._settings.timeout.close))
        except Exception as e:
            print("edl: leaving the rendezvous: %s" % e, file=sys.stderr, flush=True)
        return True

    dr.DynamicRendezvousHandler.shutdown = leave
except (ImportError, AttributeError) as e:
    print("edl: torchrun will close its rendezvous when it exits (%s)" % e, file=sys.stderr, flush=True)
sys.argv[0] = "torchrun"
from torch.distributed.run import main
main()
"""

# The end of a failing worker's stderr kept in the termination log: the
# kubelet keeps at most 4096 bytes of it.
MESSAGE_LINES = 20
MESSAGE_BYTES = 3000


def main():
    become_subreaper()
    finished = finished_path()
    when = read(finished)
    if when is not None:
        # The ReplicaSet (restartPolicy Always) restarted a trainer whose
        # training had ended: running it again would train once more.
        say("the training ended (exit 0 at %s); not started again" % when)
        signal.sigwaitinfo(STOP)
        return 0
    retell(finished)
    pending = signal.sigpending() & STOP
    if pending:
        say("%s before torchrun started; not started" % name(min(pending)))
        return 0
    env = dict(os.environ)
    logs = worker_logs(env)
    # The agent gets no blocked signal (its workers must feel SIGTERM) and
    # the default SIGPIPE and SIGXFSZ, which python3 ignores.
    agent = os.posix_spawn(
        sys.executable,
        [sys.executable, "-c", AGENT] + sys.argv[1:],
        env,
        setsigmask=(),
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
    )
    while True:
        sig = signal.sigwaitinfo(STOP | {signal.SIGCHLD}).si_signo
        if sig in STOP:
            return leave(agent, sig)
        status = reap(agent)
        if status is not None:
            code = exit_code(status)
            if code == 0 and finished:
                record(finished)
            if code != 0 and logs:
                tell_why(logs)
            return code


def worker_logs(env):
    """Has torchrun tee its workers' stderr into $EDL_STATE_DIR/torchrun,
    emptied first, unless the trainer sets where its logs go itself; returns
    the dir, or None."""
    state = env.get("EDL_STATE_DIR")
    if not state or not os.path.isdir(state) or "PET_LOG_DIR" in env or "PET_TEE" in env or "PET_REDIRECTS" in env:
        return None
    logs = os.path.join(state, "torchrun")
    shutil.rmtree(logs, ignore_errors=True)
    env["PET_LOG_DIR"], env["PET_TEE"] = logs, "2"
    return logs


def tell_why(logs):
    """Writes the end of the failing worker's stderr to the termination log
    ($EDL_TERMINATION_LOG, else /dev/termination-log, where the kubelet
    reads it): of the stderr.log files torchrun wrote, the newest that holds
    a traceback, else the newest that holds anything."""
    found = []
    for root, _, files in os.walk(logs):
        if "stderr.log" in files:
            path = os.path.join(root, "stderr.log")
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
                found.append((os.path.getmtime(path), "Traceback" in text, text))
            except OSError:
                pass
    found = [f for f in found if f[2].strip()]
    if not found:
        return
    _, _, text = max(found, key=lambda f: (f[1], f[0]))
    lines = [l for l in text.splitlines() if l.strip()][-MESSAGE_LINES:]
    tail = "\n".join(lines)[-MESSAGE_BYTES:]
    try:
        with open(os.path.join(os.path.dirname(logs), "last-failure"), "w") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + "\n" + tail + "\n")
    except OSError as e:
        say("cannot keep the failure for the next run: %s" % e)
    path = os.environ.get("EDL_TERMINATION_LOG", "/dev/termination-log")
    if not os.path.exists(path) and "EDL_TERMINATION_LOG" not in os.environ:
        return  # not in a container the kubelet started
    try:
        with open(path, "w") as f:
            f.write(tail + "\n")
    except OSError as e:
        say("cannot write the termination log %s: %s" % (path, e))


def retell(finished):
    """Prints the failure the run before this one kept (tell_why), once."""
    if not finished:
        return
    path = os.path.join(os.path.dirname(finished), "last-failure")
    try:
        with open(path) as f:
            when, _, tail = f.read().partition("\n")
        os.remove(path)
    except OSError:
        return
    say("the run before this one failed at %s; the end of its worker's stderr:" % when)
    for line in tail.splitlines():
        say("| " + line)


def leave(agent, sig):
    """Kills the agent, stops its workers, waits for every child: the
    trainer leaves the job, and the job goes on without it."""
    # The agent is stopped first, so that it starts no worker while they are
    # counted. A stopped process catches nothing and still dies by SIGKILL.
    os.kill(agent, signal.SIGSTOP)
    _, status = os.waitpid(agent, os.WUNTRACED)
    parents = parent_pids()
    workers = sorted(p for p, parent in parents.items() if parent == agent)
    if os.WIFSTOPPED(status):
        os.kill(agent, signal.SIGKILL)
        # Gone before its workers stop, so it cannot restart them; they are
        # the wrapper's children now.
        os.waitpid(agent, 0)
    if not workers:
        # The agent had ended by itself and handed its workers to the
        # wrapper. Their own children (a DataLoader's workers) are left to
        # them: killed under a worker, they would fail its checkpoint.
        me = os.getpid()
        workers = sorted(p for p, parent in parents.items() if parent == me and p != agent)
    for w in workers:
        try:
            os.kill(w, signal.SIGTERM)
        except ProcessLookupError:
            pass  # it ended meanwhile
    say("%s: the agent is killed, its workers %s told to stop" % (name(sig), workers))
    # Every child, the workers and whatever they orphaned; within the
    # pod's grace period, after which the kubelet kills what is left.
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return 0


def parent_pids():
    """Each process's parent, from /proc/<pid>/stat: the second field after
    the command name, which is in parentheses and may hold any byte, ')' and
    spaces too; hence the split at the last ')'."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass  # it ended since the listing
    return parents


def reap(agent):
    """Reaps every child that ended, the agent or a process orphaned into
    the wrapper, and returns the agent's wait status if it was among them."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == agent:
            found = status


def become_subreaper():
    """Makes the wrapper the parent of every process orphaned below it, the
    workers of the agent it kills among them, whatever its PID (PID 1 is
    their parent anyway, but not when the pod shares its process
    namespace): it can wait for them and reaps them."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1)) == 0:
            return
        why = os.strerror(ctypes.get_errno())
    except (ImportError, OSError, AttributeError) as e:
        why = str(e)
    say("cannot become a child subreaper (%s): unless this is PID 1, the workers "
        "of a killed agent are neither waited for nor reaped" % why)


def finished_path():
    """$EDL_STATE_DIR/finished, or None when the pod has no state dir. The
    dir is an emptyDir: it outlives the container's restarts, not the pod."""
    state = os.environ.get("EDL_STATE_DIR")
    if state and os.path.isdir(state):
        return os.path.join(state, "finished")
    return None


def read(finished):
    """The time the training ended, or None if it has not."""
    if not finished:
        return None
    try:
        with open(finished) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def record(finished):
    """Writes the time into finished, whole or not at all."""
    try:
        with open(finished + ".tmp", "w") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))
        os.replace(finished + ".tmp", finished)
    except OSError as e:
        say("cannot record the end of the training: %s" % e)


def exit_code(status):
    """The shell's exit code for a wait status: 128+N for death by signal N."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def name(sig):
    return signal.Signals(sig).name


def say(line):
    print("edl: " + line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
