"""A long-lived worker process per backend: sessions cached per model signature, crash isolation.

The parent sends ``(key, model bytes or None, feeds)``; the worker prepares the model once per key
(remembering load failures too), runs the feeds and answers ``(kind, outputs, message)``. If the
worker dies (segfault, abort) the case is a *crash*; if it does not answer within the per-case
limit it is killed and the case is a *timeout*. Either way a fresh worker is started on the next
request and the run goes on.

Processes: each worker runs in its own session (its own process group), and every kill -- a
timeout, a crash, the resident-memory limit, ``close()``, the parent's exit -- kills the whole
group, so processes a backend started (``subprocess.Popen``, multiprocessing pools) go too. All
limits are enforced from outside the worker (the parent waits on the pipe and kills with
SIGKILL), so a kernel stuck in C with every signal blocked and the GIL held is stopped like any
other. When the parent itself dies abruptly (kill -9), a small guardian process the worker forks
at start, which holds nothing but the read end of a "lifeline" pipe whose only writer is the
parent, sees end-of-file and kills the group; on Linux the worker also has PR_SET_PDEATHSIG.
The memory limit (``memory_gb``, default 4, 0 for none) is on the group's *resident* memory,
polled by the parent while a case runs: see opkit.conformance.limits.

``InProcess`` offers the same interface without a process (no isolation), for debugging and for
measuring what isolation costs.

The parts: ``worker_engine`` (what the worker does with a request; ``InProcess``),
``worker_process`` (the worker process's own side: its main loop, guardian, parent-death signal)
and ``process_kill`` (waiting for and killing processes and groups). This module holds the
parent's handle, ``Worker``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections import deque

from .limits import DEFAULT_MEMORY_LIMIT_GB, ResidentWatch, format_gb, limit_bytes
from . import crash_confirmation
from .worker_output import WorkerOutput
from .worker_engine import CRASH, ERROR, OK, REFUSED, TIMEOUT, UNSUPPORTED, Result  # noqa: F401  (moved; OK re-exported)
from .worker_process import _main
from .worker_start import context_for
from .process_kill import _LIVE, _await_exit, _exit_text, _exited, _outside_group, _watch_at_exit, kill_group, kill_pid


STARTUP_TIMEOUT = 120.0
POLL_INTERVAL = 0.1  # s between checks (alive? resident memory?) while waiting for an answer


class WorkerStartError(RuntimeError):
    pass


class Worker:
    """The parent's handle on a backend worker process."""

    def __init__(self, spec, timeout: float = 10.0, context: str | None = None, memory_gb: float | None = None):
        self.spec = spec
        self.memory_gb = DEFAULT_MEMORY_LIMIT_GB if memory_gb is None else memory_gb
        self.timeout = timeout
        self._ctx = context_for(spec) if context is None else mp.get_context(context)  # worker_start
        self._proc = None
        self._conn = None
        self._lifeline = None
        self._guardian: int | None = None
        self._output: WorkerOutput | None = None
        self._info: dict | None = None
        self._keys: set[str] = set()
        self.restarts = 0
        self.restarts_exhausted = 0  # fresh workers started because the engine ran out of resources
        # what this process ran since it started: a crash after it is run again alone
        # (crash_confirmation), and this is the sequence replayed when it does not reproduce alone
        self._history: deque = deque(maxlen=crash_confirmation.HISTORY)
        self.history_crashes: list[dict] = []  # crashes that need the history: findings of their own

    # -- lifecycle
    def _start(self):
        parent, child = self._ctx.Pipe()
        life_r, life_w = self._ctx.Pipe(duplex=False)  # the lifeline: this process is its only writer
        # PR_SET_PDEATHSIG fires when the starting *thread* exits: only arm it from the main thread
        deathsig = threading.current_thread() is threading.main_thread()
        output = WorkerOutput(self.spec.name)
        # a forked worker's parent is its fork server (worker_start), so only a spawned one can check
        # that its parent is still this process
        parent_pid = os.getpid() if self._ctx.get_start_method() != "forkserver" else None
        proc = self._ctx.Process(target=_main, args=(child, self.spec, self.memory_gb, life_r, parent_pid, deathsig,
                                                     output.path),
                                 daemon=True, name=f"opkit-{self.spec.name}")
        try:
            proc.start()
        except BaseException:
            output.close()
            raise
        child.close()
        life_r.close()
        self._proc, self._conn, self._lifeline, self._guardian = proc, parent, life_w, None
        self._output = output
        _watch_at_exit(self)
        msg = self._wait(STARTUP_TIMEOUT, startup=True)
        if isinstance(msg, Result):
            self._terminate()
            said = f" (it wrote: {msg.output})" if msg.output else ""
            if msg.kind == TIMEOUT:
                raise WorkerStartError(f"backend {self.spec.name} did not start within {STARTUP_TIMEOUT:.0f} s{said}")
            raise WorkerStartError(f"backend {self.spec.name} could not start: {msg.message}{said}")
        output.opened()  # the worker has its descriptors: the file needs no name any more
        if msg[0] != "hello":
            self._terminate()
            raise WorkerStartError(f"backend {self.spec.name} failed to start: {msg[1]}")
        self._info = msg[1]
        self._guardian = (msg[2] if len(msg) > 2 else {}).get("guardian")
        self._keys = set()
        self._history.clear()

    def describe(self) -> dict:
        if self._info is None:
            self._start()
        return dict(self._info)

    @property
    def pid(self) -> int | None:
        """The worker process (also its process group), while it runs."""
        return None if self._proc is None else self._proc.pid

    def _terminate(self, grace: float = 0.0):
        """Stop the worker and everything in its process group; forget the process."""
        proc = self._proc
        if proc is not None:
            if grace and not _exited(proc):
                try:
                    self._conn.send(None)
                except (OSError, ValueError):
                    pass
                _await_exit(proc, grace)
            # the worker is not reaped yet: its pid names its group and nothing else
            escaped = [] if _exited(proc) else _outside_group(proc.pid)  # who left the group?
            kill_group(proc.pid)  # the group outlives its leader: children the backend started
            if not _exited(proc):  # killed before it made its own group
                proc.kill()
            for pid in escaped:  # started in a session of their own (setsid, start_new_session)
                kill_pid(pid)
            _await_exit(proc, 5)
            proc.is_alive()  # reap
        for end in (self._conn, self._lifeline):
            if end is not None:
                try:
                    end.close()
                except OSError:
                    pass
        if self._output is not None:
            self._output.close()
        self._proc = self._conn = self._lifeline = self._guardian = self._output = None
        _LIVE.discard(self)

    def _kill(self):
        self._terminate()
        self.restarts += 1

    def close(self):
        self._terminate(grace=2.0)

    def restart(self):
        """Stop the worker; the next request starts a fresh process."""
        if self._proc is not None:
            self._kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- running
    def run_many(self, requests, timeout: float | None = None) -> list[Result]:
        """Run (key, model_bytes, feeds) requests in one round trip. The list returned is shorter
        than ``requests`` when the worker crashed or timed out (its last item says which)."""
        if len(requests) == 1:
            return [self.run(*requests[0], timeout=timeout)]
        self._ensure_started()
        batch, sent_keys = [], set()
        for key, model_bytes, feeds in requests:
            send = None
            if key not in self._keys and key not in sent_keys:
                send = model_bytes() if callable(model_bytes) else model_bytes
                sent_keys.add(key)
            batch.append((key, send, feeds))
        broken = self._send(("batch", batch))
        if broken is not None:
            return [broken]
        out: list[Result] = []
        history = list(self._history)
        for i, request in enumerate(requests):
            key = request[0]
            result = self._receive(timeout)
            if result.kind == TIMEOUT:
                out.append(result)
                return out
            if result.kind == CRASH:
                confirmed = crash_confirmation.confirm(self, request, history + requests[:i], result, timeout)
                out.append(confirmed)
                if confirmed.kind in (TIMEOUT, CRASH):
                    return out
                # the crash was not this case's: the rest of the batch is still asked, one by one
                out.extend(self.run(*rest, timeout=timeout) for rest in requests[i + 1:])
                return out
            if result.kind == "nomodel":
                self._keys.discard(key)
                result = None
            else:
                self._keys.add(key)
                self._history.append(request)
            out.append(result)
        # rare: sessions evicted mid-batch, or the engine ran out of threads/memory; rerun those
        # one by one (after a restart for the latter)
        for i, result in enumerate(out):
            if result is None:
                out[i] = self.run(*requests[i], timeout=timeout)
            elif _exhausted(result):
                out[i] = self._retry_fresh(requests[i], timeout)
        return out

    def _retry_fresh(self, request, timeout):
        """Run once more in a fresh worker: the engine ran out of threads or memory, which says
        more about what earlier cases left behind in this process than about this case."""
        self._kill()
        self.restarts_exhausted += 1
        return self.run(*request, timeout=timeout, retry=False)

    def run(self, key: str, model_bytes, feeds: dict, timeout: float | None = None, retry: bool = True,
            confirm: bool = True) -> Result:
        """Run feeds through the model with signature ``key``; ``model_bytes`` may be a callable
        producing the bytes (only called when the worker does not hold the session yet). A crash
        is confirmed in a fresh process (crash_confirmation) unless ``confirm`` is False."""
        self._ensure_started()
        history = list(self._history)
        send_bytes = None
        if key not in self._keys:
            send_bytes = model_bytes() if callable(model_bytes) else model_bytes
        broken = self._send((key, send_bytes, feeds))
        if broken is not None:
            return broken
        result = self._receive(timeout)
        if result.kind == CRASH and confirm:
            return crash_confirmation.confirm(self, (key, model_bytes, feeds), history, result, timeout)
        if result.kind in (TIMEOUT, CRASH):
            return result
        if result.kind == "nomodel":  # the worker evicted the session: send the model again
            self._keys.discard(key)
            return self.run(key, model_bytes, feeds, timeout, retry, confirm)
        self._keys.add(key)
        self._history.append((key, model_bytes, feeds))
        if retry and _exhausted(result):
            return self._retry_fresh((key, model_bytes, feeds), timeout)
        return result

    # -- the pipe
    def _ensure_started(self):
        if self._proc is None or _exited(self._proc):
            if self._proc is not None:
                self._kill()
            self._start()

    def _send(self, message) -> Result | None:
        """Send a request; a crash Result when the worker is gone, else None."""
        if self._output is not None:
            self._output.clear()  # what the worker writes from here on is this request's
        try:
            self._conn.send(message)
        except (BrokenPipeError, OSError) as exc:
            self._kill()
            return Result(CRASH, None, f"worker pipe broken: {exc}")
        return None

    def _receive(self, timeout: float | None) -> Result:
        """The worker's next answer, or a timeout / crash Result (the worker is then killed)."""
        limit = self.timeout if timeout is None else timeout
        return self._wait(limit)

    def _wait(self, limit: float, startup: bool = False):
        """Wait up to ``limit`` s for the worker's next message, watching from outside: the worker
        dying (even when a process it started still holds the pipe open) is a crash; the group's
        resident memory going over the limit, or no answer in time, kills the group."""
        try:
            return self._watch(limit, startup)
        except BaseException:  # Ctrl-C (or a reply that does not unpickle): an answer is still due, so
            self._terminate()  # the pipe is out of step; the worker cannot be used again
            raise

    def _watch(self, limit: float, startup: bool):
        conn, proc = self._conn, self._proc
        start = time.perf_counter()
        deadline = start + limit
        cap = limit_bytes(self.memory_gb)
        watch = None
        end = self._terminate if startup else self._kill  # a worker that never started is no restart
        while True:
            now = time.perf_counter()
            if now >= deadline:
                said = self._said()
                end()
                return Result(TIMEOUT, None, f"no answer within {limit:g} s (worker killed and restarted)", output=said)
            try:
                if conn.poll(min(POLL_INTERVAL, deadline - now)):
                    return conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                return self._crashed(end)
            if _exited(proc):
                try:
                    if conn.poll(0):  # answered, then exited
                        return conn.recv()
                except (EOFError, ConnectionResetError, OSError):
                    pass
                return self._crashed(end)
            if cap is not None:
                if watch is None:
                    watch = ResidentWatch(proc.pid, exclude=(self._guardian,) if self._guardian else ())
                over, rss, count = watch.over(cap, time.perf_counter())
                if over:
                    said = self._said()
                    end()
                    during = " while starting" if startup else ""
                    return Result(CRASH, None, f"killed: resident memory over {format_gb(self.memory_gb)} GB{during} "
                                               f"({rss / (1 << 30):.2f} GB in {count} process{'es' * (count != 1)} "
                                               f"after {time.perf_counter() - start:.2f} s; --memory-limit)",
                                  "memory", said)

    def _said(self) -> str:
        """The last lines the worker wrote since the request was sent (worker_output)."""
        return self._output.tail() if self._output is not None else ""

    def _crashed(self, end) -> Result:
        proc = self._proc
        _await_exit(proc, 5)
        said = self._said()
        end()  # kills what the worker left in its group, then reaps it (its exit status is kept)
        code = proc.exitcode
        # no elapsed time in the message: it is the case's verdict, the same on every run of a seed
        # (the record's duration_s says how long the case took); what the runtime wrote as it died
        # is kept apart, so that it never splits one bug into two causes
        return Result(CRASH, None, f"backend worker died: {_exit_text(code)}", output=said)


# An engine that has created many compiled models can run out of threads or address space inside
# the long-lived worker (OpenVINO: "Resource temporarily unavailable"); such a failure is retried
# once in a fresh worker before it counts as the case's outcome.
_EXHAUSTED = ("Resource temporarily unavailable", "can't alloc", "std::bad_alloc", "Cannot allocate memory")


def _exhausted(result: Result) -> bool:
    return result.kind in (ERROR, UNSUPPORTED, REFUSED) and any(text in result.message for text in _EXHAUSTED)


def run_many_on(worker, requests, timeout=None) -> list[Result]:
    """Run (key, model_bytes, feeds) requests; after a crash or timeout the rest are not run (the
    returned list is shorter than ``requests``)."""
    out = []
    for key, model_bytes, feeds in requests:
        result = worker.run(key, model_bytes, feeds, timeout)
        out.append(result)
        if result.kind in (CRASH, TIMEOUT):
            break
    return out
