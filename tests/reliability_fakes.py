"""Fake backends for tests/test_run_reliability.py (loaded as ``reliability_fakes:Class``; the
tests put this folder on PYTHONPATH). Each runs Trilu correctly (see test_conformance_fakes) and
misbehaves around Ctrl-C the way some libraries do.

Environment:
- OPKIT_FAKE_LOG: a file that gets one line per run (the tests wait for it to grow);
- OPKIT_FAKE_DELAY: seconds each run sleeps (default 0.02), so runs last long enough to interrupt.
"""

from __future__ import annotations

import os
import time

from test_conformance_fakes import _Fake


def _log() -> None:
    path = os.environ.get("OPKIT_FAKE_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, b"run\n")
        finally:
            os.close(fd)


def _delay() -> float:
    return float(os.environ.get("OPKIT_FAKE_DELAY", "0.02"))


def _slow(o):
    _log()
    time.sleep(_delay())
    return o


def _swallows(o):
    """A library that catches KeyboardInterrupt and carries on: the run must stop anyway."""
    _log()
    deadline = time.monotonic() + _delay()
    while time.monotonic() < deadline:
        try:
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass
    return o


def _swallows_forever(o):
    """A library that, once the run was asked to stop, loops for ever swallowing every
    KeyboardInterrupt (only the watchdog can end the run). In process only (--no-isolate)."""
    from opkit.conformance import stopping

    _log()
    deadline = time.monotonic() + _delay()
    while time.monotonic() < deadline or stopping.stop_requested():
        try:
            time.sleep(0.01)
        except KeyboardInterrupt:
            deadline = float("inf")  # before the fix there is no stop flag: hang here all the same
    return o


class Slow(_Fake):
    post = staticmethod(_slow)


class SwallowsInterrupts(_Fake):
    post = staticmethod(_swallows)


class SwallowsForever(_Fake):
    post = staticmethod(_swallows_forever)
