"""A stand-in for torchrun's agent in the tests of EDL's wrapper
(pkg/framework/pytorch): with testdata/standin on PYTHONPATH, the wrapper's
agent runs this file's main, as it runs torch.distributed.run's.

EDL_STANDIN chooses what it does:
  exit N     exits with code N
  signal N   dies by signal N
  workers N  starts N workers, as torchrun does, and waits for them
  fail N     writes a worker's stderr.log with a traceback under
             $PET_LOG_DIR, as torchrun's tee does, and exits with code N
  shutdown N shuts its rendezvous handler down, then exits with code N

EDL_STANDIN_DIR receives its traces:
  agent-started  a line per start: its pid and its arguments (JSON)
  agent-signals  every catchable signal it got, by name; it must get none,
                 as the wrapper kills it with SIGKILL, which leaves no trace
  agent-ready    once every worker has written its pid
  agent-exit     if its workers all ended while it lived
  worker-I.pid   worker I's pid
  worker-I.term  worker I's parent when SIGTERM stopped it
  agent-env      PET_LOG_DIR and PET_TEE as the agent got them
  rendezvous     "left" or "closed": what the handler's shutdown did
"""
import json
import os
import signal
import subprocess
import sys
import time

# A worker: on SIGTERM it takes a while (a checkpoint), then says so and
# exits 0. A worker nobody stops ends by itself after a minute, so that a
# failed test leaves nothing behind.
WORKER = """
import os, signal, sys, time
def stop(signum, frame):
    time.sleep(0.3)
    with open(sys.argv[1] + ".term", "w") as f:
        f.write("term ppid=%d" % os.getppid())
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1] + ".pid")
for _ in range(600):
    time.sleep(0.1)
"""

TRACES = os.environ["EDL_STANDIN_DIR"]


def trace(name, text=""):
    with open(os.path.join(TRACES, name), "a") as f:
        f.write(text)


def caught(signum, frame):
    trace("agent-signals", signal.Signals(signum).name + "\n")


def main():
    trace("agent-started", "%d %s\n" % (os.getpid(), json.dumps(sys.argv[1:])))
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, caught)

    trace("agent-env", "%s %s\n" % (os.environ.get("PET_LOG_DIR"), os.environ.get("PET_TEE")))
    mode, n = os.environ["EDL_STANDIN"].split()
    n = int(n)
    if mode == "exit":
        sys.exit(n)
    if mode == "signal":
        if n != signal.SIGKILL:  # which has no handler to reset
            signal.signal(n, signal.SIG_DFL)
        os.kill(os.getpid(), n)
        time.sleep(10)
        sys.exit(99)
    if mode == "fail":
        rank = os.path.join(os.environ["PET_LOG_DIR"], "job_abc", "attempt_0", "0")
        os.makedirs(rank)
        with open(os.path.join(rank, "stderr.log"), "w") as f:
            f.write("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                    "ValueError: invalid literal for int() with base 10: 'notanumber'\n")
        os.makedirs(os.path.join(os.environ["PET_LOG_DIR"], "job_abc", "attempt_0", "1"))
        open(os.path.join(os.environ["PET_LOG_DIR"], "job_abc", "attempt_0", "1", "stderr.log"), "w").close()
        sys.exit(n)
    if mode == "shutdown":
        from torch.distributed.elastic.rendezvous.dynamic_rendezvous import DynamicRendezvousHandler
        DynamicRendezvousHandler().shutdown()
        sys.exit(n)
    if mode == "workers":
        workers = [
            subprocess.Popen([sys.executable, "-c", WORKER, os.path.join(TRACES, "worker-%d" % i)])
            for i in range(n)
        ]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(os.path.exists(os.path.join(TRACES, "worker-%d.pid" % i)) for i in range(n)):
                trace("agent-ready")
                break
            time.sleep(0.01)
        for w in workers:
            w.wait()
        trace("agent-exit")
        sys.exit(0)
    sys.exit("stand-in: unknown EDL_STANDIN %r" % os.environ["EDL_STANDIN"])


if __name__ == "__main__":
    main()
