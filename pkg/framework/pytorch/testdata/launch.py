"""Runs EDL's wrapper in the tests' harder conditions, each made of real
signals and files, with no hook in the wrapper itself:

    python3 launch.py MODE WRAPPER_SOURCE ARGS...

The wrapper runs in this process, as `python3 -c WRAPPER_SOURCE ARGS...`
runs it, under an audit hook (sys.addaudithook) that MODE chooses:

pending SIGTERM|SIGINT
    the signal comes before the wrapper's first line: it is blocked and sent
    here, and is pending when the wrapper starts. Every process the wrapper
    starts is said on stderr ("launch: started ...").
no-children-file
    any open or listing of a path with /children in it, as
    /proc/P/task/P/children (absent on kernels without CONFIG_PROC_CHILDREN),
    fails, and is said on stderr ("launch: denied ...").
sigterm-at-spawn
    SIGTERM is sent here as the wrapper starts a process: it arrives while
    the agent is started.
"""
import os
import signal
import sys

SPAWNS = ("os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.spawn", "os.system", "subprocess.Popen")

mode, source, args = sys.argv[1], sys.argv[2], sys.argv[3:]


def say_spawns(event, hook_args):
    if event in SPAWNS:
        print("launch: started %s %s" % (event, hook_args[:2]), file=sys.stderr, flush=True)


def no_children_file(event, hook_args):
    if event in ("open", "os.listdir", "os.scandir") and hook_args and "/children" in str(hook_args[0]):
        print("launch: denied %s %s" % (event, hook_args[0]), file=sys.stderr, flush=True)
        raise PermissionError(13, "denied by the test", str(hook_args[0]))


signalled = []


def sigterm_at_spawn(event, hook_args):
    if event in SPAWNS and not signalled:
        signalled.append(event)
        os.kill(os.getpid(), signal.SIGTERM)


if mode.startswith("pending "):
    sig = signal.Signals[mode.split()[1]]
    signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
    os.kill(os.getpid(), sig)
    hook = say_spawns
elif mode == "no-children-file":
    hook = no_children_file
elif mode == "sigterm-at-spawn":
    hook = sigterm_at_spawn
else:
    sys.exit("launch: unknown mode %r" % mode)
sys.addaudithook(hook)
sys.argv = ["-c"] + args
exec(compile(source, "<string>", "exec"), {"__name__": "__main__"})
