"""A long-lived worker process per backend: sessions cached per model signature, crash isolation.

The parent sends ``(key, model bytes or None, feeds)``; the worker prepares the model once per key
(remembering load failures too), runs the feeds and answers ``(kind, outputs, message)``. If the
worker dies (segfault, abort) the case is a *crash*; if it does not answer within the per-case
limit it is killed and the case is a *timeout*. Either way a fresh worker is started on the next
request and the run goes on.

``InProcess`` offers the same interface without a process (no isolation), for debugging and for
measuring what isolation costs.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

OK, UNSUPPORTED, ERROR, CRASH, TIMEOUT = "ok", "unsupported", "error", "crash", "timeout"
MAX_SESSIONS = 512
STARTUP_TIMEOUT = 120.0


@dataclass
class Result:
    kind: str
    outputs: list | None = None
    message: str = ""
    stage: str = ""  # load | run


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + " ..."


class _Engine:
    """What the worker does, usable in process too."""

    def __init__(self, spec):
        from ..backends.registry import create

        self.backend = create(spec)
        self.sessions: OrderedDict[str, Any] = OrderedDict()

    def describe(self) -> dict:
        info = self.backend.describe() if hasattr(self.backend, "describe") else {
            "name": self.backend.name, "version": self.backend.version()}
        info["max_ir_version"] = getattr(self.backend, "max_ir_version", 13)
        return info

    def has(self, key: str) -> bool:
        return key in self.sessions

    def run(self, key: str, model_bytes: bytes | None, feeds: dict) -> Result:
        entry = self.sessions.get(key)
        if entry is None:
            if model_bytes is None:
                return Result("nomodel")
            try:
                entry = ("session", self.backend.prepare(model_bytes))
            except Exception as exc:  # noqa: BLE001 - everything a backend raises is an outcome
                kind = UNSUPPORTED if self.backend.is_unsupported(exc) else ERROR
                entry = ("failed", Result(kind, None, _short(exc), "load"))
            self.sessions[key] = entry
            if len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        else:
            self.sessions.move_to_end(key)
        if entry[0] == "failed":
            return entry[1]
        try:
            outputs = entry[1].run(feeds)
        except Exception as exc:  # noqa: BLE001
            kind = UNSUPPORTED if self.backend.is_unsupported(exc) else ERROR
            return Result(kind, None, _short(exc), "run")
        return Result(OK, [None if o is None else _plain(o) for o in outputs])


def _plain(value):
    import numpy as np

    return value if isinstance(value, np.ndarray) else np.asarray(value)


def _main(conn, spec, memory_gb=None):
    import warnings

    from .limits import set_memory_limit

    set_memory_limit(memory_gb)
    warnings.simplefilter("ignore")  # backends' numeric warnings are not outcomes; keep stderr readable
    try:
        engine = _Engine(spec)
        conn.send(("hello", engine.describe()))
    except BaseException as exc:  # noqa: BLE001
        conn.send(("failed", _short(exc), traceback.format_exc()))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if msg is None:
            return
        if msg[0] == "batch":
            for key, model_bytes, feeds in msg[1]:
                conn.send(engine.run(key, model_bytes, feeds))
            continue
        key, model_bytes, feeds = msg
        conn.send(engine.run(key, model_bytes, feeds))


class WorkerStartError(RuntimeError):
    pass


class Worker:
    """The parent's handle on a backend worker process."""

    def __init__(self, spec, timeout: float = 10.0, context: str = "spawn", memory_gb: float | None = None):
        from .limits import DEFAULT_MEMORY_LIMIT_GB

        self.spec = spec
        self.memory_gb = DEFAULT_MEMORY_LIMIT_GB if memory_gb is None else memory_gb
        self.timeout = timeout
        self._ctx = mp.get_context(context)
        self._proc = None
        self._conn = None
        self._info: dict | None = None
        self._keys: set[str] = set()
        self.restarts = 0
        self.restarts_exhausted = 0  # fresh workers started because the engine ran out of resources

    # -- lifecycle
    def _start(self):
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_main, args=(child, self.spec, self.memory_gb), daemon=True, name=f"opkit-{self.spec.name}")
        proc.start()
        child.close()
        if not parent.poll(STARTUP_TIMEOUT):
            proc.kill()
            raise WorkerStartError(f"backend {self.spec.name} did not start within {STARTUP_TIMEOUT:.0f} s")
        try:
            msg = parent.recv()
        except EOFError:
            proc.join(5)
            raise WorkerStartError(f"backend {self.spec.name} worker died while starting "
                                   f"({_exit_text(proc.exitcode)})") from None
        if msg[0] != "hello":
            proc.join(5)
            raise WorkerStartError(f"backend {self.spec.name} failed to start: {msg[1]}")
        self._proc, self._conn, self._info = proc, parent, msg[1]
        self._keys = set()

    def describe(self) -> dict:
        if self._info is None:
            self._start()
        return dict(self._info)

    def _kill(self):
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None
        self.restarts += 1

    def close(self):
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(2)
            except (OSError, BrokenPipeError):
                pass
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(2)
        self._proc = self._conn = None

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
        for key, _, _ in requests:
            result = self._receive(timeout)
            if result.kind in (TIMEOUT, CRASH):
                out.append(result)
                return out
            if result.kind == "nomodel":
                self._keys.discard(key)
                result = None
            else:
                self._keys.add(key)
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

    def run(self, key: str, model_bytes, feeds: dict, timeout: float | None = None, retry: bool = True) -> Result:
        """Run feeds through the model with signature ``key``; ``model_bytes`` may be a callable
        producing the bytes (only called when the worker does not hold the session yet)."""
        self._ensure_started()
        send_bytes = None
        if key not in self._keys:
            send_bytes = model_bytes() if callable(model_bytes) else model_bytes
        broken = self._send((key, send_bytes, feeds))
        if broken is not None:
            return broken
        result = self._receive(timeout)
        if result.kind in (TIMEOUT, CRASH):
            return result
        if result.kind == "nomodel":  # the worker evicted the session: send the model again
            self._keys.discard(key)
            return self.run(key, model_bytes, feeds, timeout)
        self._keys.add(key)
        if retry and _exhausted(result):
            return self._retry_fresh((key, model_bytes, feeds), timeout)
        return result

    # -- the pipe
    def _ensure_started(self):
        if self._proc is None or not self._proc.is_alive():
            if self._proc is not None:
                self._kill()
            self._start()

    def _send(self, message) -> Result | None:
        """Send a request; a crash Result when the worker is gone, else None."""
        try:
            self._conn.send(message)
        except (BrokenPipeError, OSError) as exc:
            self._kill()
            return Result(CRASH, None, f"worker pipe broken: {exc}")
        return None

    def _receive(self, timeout: float | None) -> Result:
        """The worker's next answer, or a timeout / crash Result (the worker is then killed)."""
        limit = self.timeout if timeout is None else timeout
        start = time.perf_counter()
        if not self._conn.poll(limit):
            self._kill()
            return Result(TIMEOUT, None, f"no answer within {limit:g} s (worker killed and restarted)")
        try:
            return self._conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self._proc.join(5)
            code = self._proc.exitcode
            self._kill()
            return Result(CRASH, None, f"backend worker died: {_exit_text(code)} after "
                                       f"{time.perf_counter() - start:.2f} s")


# An engine that has created many compiled models can run out of threads or address space inside
# the long-lived worker (OpenVINO: "Resource temporarily unavailable"); such a failure is retried
# once in a fresh worker before it counts as the case's outcome.
_EXHAUSTED = ("Resource temporarily unavailable", "can't alloc", "std::bad_alloc", "Cannot allocate memory")


def _exhausted(result: Result) -> bool:
    return result.kind in (ERROR, UNSUPPORTED) and any(text in result.message for text in _EXHAUSTED)


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


def _exit_text(code) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class InProcess:
    """Worker interface without isolation."""

    def __init__(self, spec, timeout: float = 10.0, memory_gb: float | None = None):
        self.spec = spec
        self.timeout = timeout
        self._engine = None
        self.restarts = 0

    def describe(self) -> dict:
        if self._engine is None:
            self._engine = _Engine(self.spec)
        return self._engine.describe()

    def run(self, key, model_bytes, feeds, timeout=None) -> Result:
        if self._engine is None:
            self._engine = _Engine(self.spec)
        data = None if self._engine.has(key) else (model_bytes() if callable(model_bytes) else model_bytes)
        return self._engine.run(key, data, feeds)

    def run_many(self, requests, timeout=None) -> list[Result]:
        return [self.run(*r, timeout=timeout) for r in requests]

    def close(self):
        self._engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
