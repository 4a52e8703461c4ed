"""The worker process's own side: its main loop (``_main``, the target the parent starts), its
session and process group, the parent-death signal and the guardian that kills the group when the
parent dies; and ``exit_with_parent`` for pool processes that start workers."""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback

from .limits import lift_memory_limit
from .worker_engine import _Engine, _short
from .worker_output import redirect_output


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
