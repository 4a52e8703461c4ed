"""Stopping a run: the process-wide and per-thread stop requests every runner checks.

``request_stop()`` (called by ``opkit test``'s SIGINT/SIGTERM handler) makes the runner raise
KeyboardInterrupt at its next check (before each drawn example, each backend call and each record),
so a run stops promptly even when some library swallowed the KeyboardInterrupt the signal raised.
"""

from __future__ import annotations

import threading

_STOP = threading.Event()
# a stop for the runners of one thread only: a Dask worker runs tasks of several runs (and other
# users' work) in one process, so a cancelled run's task must not stop the others (cluster.py)
_THREAD_STOP = threading.local()


def request_stop() -> None:
    """Ask every runner in this process to stop at its next check (KeyboardInterrupt)."""
    _STOP.set()


def clear_stop() -> None:
    _STOP.clear()


def stop_requested() -> bool:
    event = getattr(_THREAD_STOP, "event", None)
    return _STOP.is_set() or (event is not None and event.is_set())


def check_stop() -> None:
    """Raise KeyboardInterrupt when a stop was requested (for the process, or this thread)."""
    if stop_requested():
        raise KeyboardInterrupt


def stop_thread_on(event: threading.Event | None) -> None:
    """Also stop this thread's runners when ``event`` is set (None: only the process-wide stop)."""
    _THREAD_STOP.event = event
