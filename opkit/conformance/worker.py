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
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .limits import DEFAULT_MEMORY_LIMIT_GB, ResidentWatch, format_gb, limit_bytes, lift_memory_limit
from .worker_output import WorkerOutput, redirect_output

OK, UNSUPPORTED, ERROR, CRASH, TIMEOUT = "ok", "unsupported", "error", "crash", "timeout"
MAX_SESSIONS = 512
STARTUP_TIMEOUT = 120.0
POLL_INTERVAL = 0.1  # s between checks (alive? resident memory?) while waiting for an answer


@dataclass
class Result:
    kind: str
    outputs: list | None = None
    message: str = ""
    stage: str = ""  # load | run
    output: str = ""  # a crash, hang or memory kill: the last lines the worker wrote (worker_output)


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
        from ..backends.base import limits

        info.update(limits(self.backend))  # IR version, opsets and domains the runner must respect
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
        if feeds is None:  # load only: the model was accepted (BackendRunner.load_only)
            return Result(OK, [])
        try:
            outputs = entry[1].run(feeds)
        except Exception as exc:  # noqa: BLE001
            kind = UNSUPPORTED if self.backend.is_unsupported(exc) else ERROR
            return Result(kind, None, _short(exc), "run")
        return Result(OK, [None if o is None else _plain(o) for o in outputs])


def _plain(value):
    import numpy as np

    if isinstance(value, (list, tuple)):  # a sequence output: its tensors, not one stacked array
        return [None if v is None else _plain(v) for v in value]
    return value if isinstance(value, np.ndarray) else np.asarray(value)


def _set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Linux: have the kernel send ``sig`` to this process when its parent dies (strictly: when
    the parent *thread* that started it exits). False where unsupported."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, int(sig), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return False


def _guard(lifeline_fd: int, pgid: int) -> None:
    """The guardian (a child of the worker, in its group): wait for end-of-file on the lifeline,
    which comes when the parent closes it or dies, then SIGKILL the whole group, itself included."""
    try:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            # hold nothing else: a copy of the worker's pipe or of multiprocessing's sentinel would
            # hide the worker's death from the parent
            top = max(os.sysconf("SC_OPEN_MAX"), 1 << 16)
            os.closerange(3, lifeline_fd)
            os.closerange(lifeline_fd + 1, top)
            while os.read(lifeline_fd, 4096):
                pass
        except BaseException:  # noqa: BLE001
            pass
        os.killpg(pgid, signal.SIGKILL)
    finally:
        os._exit(0)


def _start_guardian(lifeline) -> int | None:
    """Fork the guardian; returns its pid (None when there is no lifeline, this process does not
    lead its own process group, or fork failed)."""
    if lifeline is None or not hasattr(os, "fork") or os.getpgrp() != os.getpid():
        return None
    fd = lifeline.fileno()
    try:
        pid = os.fork()
    except OSError:  # pragma: no cover
        return None
    if pid == 0:
        _guard(fd, os.getpgrp())
    lifeline.close()
    return pid


def _main(conn, spec, memory_gb=None, lifeline=None, parent_pid=None, deathsig=False, output_path=None):
    import warnings

    # own session and process group first, before anything can start a child
    if hasattr(os, "setsid"):
        try:
            os.setsid()
        except OSError:  # already a group leader (a fork-context worker of a group leader?)
            pass
    if output_path:  # the runtime's own stdout/stderr: to a file the parent reads after a crash
        redirect_output(output_path)
    if deathsig and _set_parent_death_signal() and parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)  # the parent died before the death signal was armed
    guardian = _start_guardian(lifeline)
    # the memory limit is enforced by the parent on resident memory; an address-space limit
    # inherited from the runner breaks engines that reserve virtual memory (thread pools)
    lift_memory_limit()
    warnings.simplefilter("ignore")  # backends' numeric warnings are not outcomes; keep stderr readable
    try:
        engine = _Engine(spec)
        conn.send(("hello", engine.describe(), {"guardian": guardian}))
    except BaseException as exc:  # noqa: BLE001
        conn.send(("failed", _short(exc), traceback.format_exc()))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if msg is None:
            return
        if msg[0] == "batch":
            for key, model_bytes, feeds in msg[1]:
                conn.send(engine.run(key, model_bytes, feeds))
            continue
        key, model_bytes, feeds = msg
        conn.send(engine.run(key, model_bytes, feeds))


def _exited(proc) -> bool:
    """Whether ``proc`` has exited, *without* reaping it: until it is reaped its pid, and so its
    process group id, cannot be given to another process, so killing the group stays safe."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already
        return True
    except AttributeError:  # pragma: no cover - no waitid
        return not proc.is_alive()


def _await_exit(proc, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``proc`` to exit (not reaping it; nor joining on multiprocessing's
    sentinel pipe, which a process forked by the backend may hold open)."""
    end = time.perf_counter() + seconds
    delay = 0.001
    while not _exited(proc):
        if time.perf_counter() >= end:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (Linux /proc; [] elsewhere). The one process-tree walker:
    the worker kills what left its group, the runner what its pool started."""
    out, todo, seen = [], [pid], {pid}
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    children = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
                    out.append(child)
    return out


def _outside_group(pid: int) -> list[int]:
    """The descendants of ``pid`` that left its process group (setsid, start_new_session)."""
    out = []
    for child in descendants(pid):
        try:
            if os.getpgid(child) != pid:
                out.append(child)
        except OSError:  # gone already
            pass
    return out


def kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def kill_group(pgid: int | None) -> None:
    """SIGKILL process group ``pgid`` (never this process's own group)."""
    if not pgid or pgid <= 1 or not hasattr(os, "killpg"):
        return
    try:
        if pgid == os.getpgrp():
            return
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # gone already
        pass


def exit_with_parent(parent_pid: int | None = None, interval: float = 0.5) -> None:
    """Make this process exit when its parent dies (e.g. as the ``initializer`` of a
    ProcessPoolExecutor whose processes start Workers): PR_SET_PDEATHSIG on Linux, and a daemon
    thread that watches the parent pid, for where that is missing or the thread that started this
    process is not the one that died. The backend workers this process started then go too (their
    guardians see this process's lifelines close)."""
    if parent_pid is None:
        parent_pid = os.getppid()
    _set_parent_death_signal()
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="opkit-exit-with-parent", daemon=True).start()


_LIVE: weakref.WeakSet = weakref.WeakSet()
_ATEXIT = False


def _kill_live_workers() -> None:
    for worker in list(_LIVE):
        try:
            worker._terminate()
        except Exception:  # noqa: BLE001 - at exit: best effort
            pass


def _watch_at_exit(worker) -> None:
    global _ATEXIT
    _LIVE.add(worker)
    if not _ATEXIT:  # registered after multiprocessing's own handler, so it runs before it
        atexit.register(_kill_live_workers)
        _ATEXIT = True


class WorkerStartError(RuntimeError):
    pass


class Worker:
    """The parent's handle on a backend worker process."""

    def __init__(self, spec, timeout: float = 10.0, context: str = "spawn", memory_gb: float | None = None):
        self.spec = spec
        self.memory_gb = DEFAULT_MEMORY_LIMIT_GB if memory_gb is None else memory_gb
        self.timeout = timeout
        self._ctx = mp.get_context(context)
        self._proc = None
        self._conn = None
        self._lifeline = None
        self._guardian: int | None = None
        self._output: WorkerOutput | None = None
        self._info: dict | None = None
        self._keys: set[str] = set()
        self.restarts = 0
        self.restarts_exhausted = 0  # fresh workers started because the engine ran out of resources

    # -- lifecycle
    def _start(self):
        parent, child = self._ctx.Pipe()
        life_r, life_w = self._ctx.Pipe(duplex=False)  # the lifeline: this process is its only writer
        # PR_SET_PDEATHSIG fires when the starting *thread* exits: only arm it from the main thread
        deathsig = threading.current_thread() is threading.main_thread()
        output = WorkerOutput(self.spec.name)
        proc = self._ctx.Process(target=_main, args=(child, self.spec, self.memory_gb, life_r, os.getpid(), deathsig,
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
