"""A stand-in for torch's dynamic rendezvous in the tests of EDL's wrapper:
just what the wrapper's agent patches and calls, each step traced into
$EDL_STANDIN_DIR/rendezvous."""
import os
from datetime import timedelta


def _trace(what):
    with open(os.path.join(os.environ["EDL_STANDIN_DIR"], "rendezvous"), "a") as f:
        f.write(what + "\n")


class _RendezvousExitOp:
    pass


class _Timeout:
    close = timedelta(seconds=30)


class _Settings:
    timeout = _Timeout()


class _Executor:
    def run(self, op, deadline):
        _trace("left" if isinstance(op, _RendezvousExitOp) else "ran %s" % type(op).__name__)


class DynamicRendezvousHandler:
    def __init__(self):
        self._settings = _Settings()
        self._op_executor = _Executor()

    def _stop_heartbeats(self):
        _trace("heartbeats stopped")

    def _get_deadline(self, timeout):
        return timeout.total_seconds()

    def shutdown(self):
        _trace("closed")
        return True
