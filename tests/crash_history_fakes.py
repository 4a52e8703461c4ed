"""Fake opkit backends for tests/test_crash_confirmation.py (loaded by the worker as
``crash_history_fakes:Class``; tests/ is on the worker's sys.path).

``CrashesOn`` dies (SIGABRT) on an input whose first value is 13, always; on 9 only after an input
of 7 ran earlier in the same process (a state an earlier case left behind); on 5 only the first
time ever, per ``marker`` file (a crash no run can reproduce)."""

from __future__ import annotations

import os

from opkit.backends.base import BackendBase

_POISONED = []


class _Session:
    def __init__(self, backend):
        self.backend = backend

    def run(self, feeds):
        return self.backend.act(feeds)


class CrashesOn(BackendBase):
    name = "fake-crashes"

    def __init__(self, marker: str = ""):
        self.marker = marker

    def version(self) -> str:
        return "0.0-fake"

    def prepare(self, model_bytes: bytes):
        return _Session(self)

    def act(self, feeds):
        first = int(next(iter(feeds.values())).reshape(-1)[0])
        if first == 13 or (first == 9 and _POISONED):
            os.abort()
        if first == 7:
            _POISONED.append(True)
        if first == 5 and self.marker and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os.abort()
        return [feeds[k] for k in sorted(feeds)]
