"""Waiting for and killing worker processes from the parent: exit checks that do not reap, the
process-tree walk, SIGKILL of a process or a whole group (never this process's own), the workers
still alive at exit, and the words for how a worker ended."""

from __future__ import annotations

import atexit
import os
import signal
import time
import weakref


def is_own_child(proc) -> bool:
    """Whether ``proc`` (a started multiprocessing process) is this process's child: a worker
    forked by a fork server (conformance.worker_start) is the server's, which reaps it."""
    return getattr(proc, "_start_method", None) != "forkserver"


def _exited(proc) -> bool:
    """Whether ``proc`` has exited, *without* reaping it: until it is reaped its pid, and so its
    process group id, cannot be given to another process, so killing the group stays safe. A
    forked worker is reaped by its fork server; its group id stays safe while any process the
    worker left in the group lives (Linux gives no new process a pid in use as a group id)."""
    if not is_own_child(proc):  # a forked worker: its fork server reaps it and sends the status
        return proc.exitcode is not None
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


def _exit_text(code) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
