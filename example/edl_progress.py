"""edl_progress: a training reports its progress to EDL (the progress
contract of docs/api.md), with nothing but Python's standard library.

    import edl_progress
    progress = edl_progress.Progress(total=epochs * samples_per_epoch, batch=global_batch)
    for step in ...:
        ...
        progress.report(samples_done)
    progress.close()

EDL gives every container of a job EDL_PROGRESS_CONFIGMAP, the job's
progress ConfigMap, and runs its trainers as the one service account that
may patch it. report() is cheap and never blocks on the network: a thread
writes the latest report at most once every 10 s (INTERVAL) — the reports
in between are coalesced, never lost: the last one is written when the
interval ends. The first write of a process waits until 10 s after the last
report in the ConfigMap, so that a restarted training keeps the rate too.

Only the process of rank 0 writes (RANK, else HOROVOD_RANK,
OMPI_COMM_WORLD_RANK or PMI_RANK; rank 0 when none is set); the others'
reports are dropped. A training whose processes have no rank passes
elect=True: a process writes only while the report in the ConfigMap is its
own, or nobody's for three intervals, so one of them reports at a time. Outside EDL (no EDL_PROGRESS_CONFIGMAP, or no service
account token) report() does nothing. A write that fails is one line on
stderr and is tried again with the next report: progress never stops the
training.

Each report writes the keys: done, total, unit (samples or steps), batch
(the global batch), trainers (WORLD_SIZE, or the world size given), time
(Unix seconds), run (this process) and, when given, noiseScale.
"""
import atexit
import http.client
import json
import os
import socket
import ssl
import sys
import threading
import time

INTERVAL = float(os.environ.get("EDL_PROGRESS_INTERVAL", "10"))
SERVICEACCOUNT = os.environ.get("EDL_SERVICEACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")


def _rank():
    for name in ("RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if os.environ.get(name, "") != "":
            return int(os.environ[name])
    return 0


def _read(name):
    with open(os.path.join(SERVICEACCOUNT, name)) as f:
        return f.read().strip()


class Progress:
    """The progress of one training process; see the module's doc."""

    def __init__(self, total=None, unit="samples", batch=None, trainers=None, elect=False):
        if unit not in ("samples", "steps"):
            raise ValueError(f"unit is {unit!r}: must be 'samples' or 'steps'")
        self.total, self.unit, self.batch, self.trainers = total, unit, batch, trainers
        self._elect = elect
        self._cond = threading.Condition()
        self._pending = None
        self._closed = False
        self._warned = False
        self._next = 0.0  # the monotonic time the next write may go
        self._configmap = os.environ.get("EDL_PROGRESS_CONFIGMAP", "")
        self.enabled = (self._configmap != "" and _rank() == 0
                        and os.path.exists(os.path.join(SERVICEACCOUNT, "token")))
        if not self.enabled:
            return
        self._run = f"{socket.gethostname()}/{os.getpid()}/{int(time.time())}"
        self._thread = threading.Thread(target=self._writer, name="edl-progress", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def report(self, done, total=None, trainers=None, noise_scale=None):
        """Report the work done so far (samples, or steps), and optionally
        the work in all, the world size and the gradient noise scale."""
        if not self.enabled:
            return
        if total is not None:
            self.total = total
        if trainers is not None:
            self.trainers = trainers
        data = {"done": str(int(done)), "unit": self.unit, "time": f"{time.time():.3f}", "run": self._run}
        world = self.trainers or os.environ.get("WORLD_SIZE") or os.environ.get("HOROVOD_SIZE")
        for key, value in (("total", self.total), ("batch", self.batch), ("trainers", world)):
            if value is not None:
                data[key] = str(int(value))
        if noise_scale is not None:
            data["noiseScale"] = f"{float(noise_scale):.6g}"
        with self._cond:
            self._pending = data
            self._cond.notify()

    def close(self):
        """Write the last report if the interval allows it now, and stop."""
        if not self.enabled:
            return
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _writer(self):
        self._next = time.monotonic() + self._wait_after_last()
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                wait = self._next - time.monotonic()
                if wait > 0 and not self._closed:
                    self._cond.wait(wait)
                    continue
                data, self._pending = self._pending, None
                closed = self._closed
            if data is not None and (not closed or time.monotonic() >= self._next):
                if not self._elect or self._holds():
                    self._write(data)
                self._next = time.monotonic() + INTERVAL
            if closed:
                return

    def _last(self):
        """The report the ConfigMap holds: its data, {} when it holds none;
        None when it cannot be read."""
        try:
            status, body = self._request("GET", None)
            if status != 200:
                return None
            return json.loads(body).get("data") or {}
        except (OSError, ValueError, http.client.HTTPException):
            return None

    def _holds(self):
        """Whether this process may write when elected: the report in the
        ConfigMap is its own or nobody's, or older than three intervals."""
        data = self._last()
        if data is None or data.get("run", "") in ("", self._run):
            return True
        try:
            return time.time() - float(data.get("time", "0")) > 3 * INTERVAL
        except ValueError:
            return True

    def _wait_after_last(self):
        """How long until INTERVAL after the report the ConfigMap holds."""
        try:
            last = float((self._last() or {}).get("time", "0"))
        except ValueError:
            return 0.0
        return max(0.0, min(last + INTERVAL - time.time(), INTERVAL))

    def _write(self, data):
        try:
            status, body = self._request("PATCH", json.dumps({"data": data}).encode())
            if status != 200:
                raise OSError(f"HTTP {status}: {body[:200]!r}")
        except (OSError, http.client.HTTPException) as e:
            if not self._warned:
                print(f"edl_progress: cannot write ConfigMap {self._configmap}: {e}", file=sys.stderr, flush=True)
                self._warned = True

    def _request(self, method, body):
        host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
        port = int(os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
        context = ssl.create_default_context(cafile=os.path.join(SERVICEACCOUNT, "ca.crt"))
        conn = http.client.HTTPSConnection(host, port, context=context, timeout=10)
        try:
            headers = {"Authorization": "Bearer " + _read("token"), "Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = "application/merge-patch+json"
            path = f"/api/v1/namespaces/{_read('namespace')}/configmaps/{self._configmap}"
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()
