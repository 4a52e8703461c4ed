"""Fake backends for tests/test_cluster.py (loaded as ``cluster_fakes:Class`` by Dask workers, which
inherit this folder on sys.path from the test process that started them)."""

from __future__ import annotations

import os
import time

from test_conformance_fakes import _Fake

SLOW_CALL_S = 0.05


def _slow(o):
    time.sleep(SLOW_CALL_S)
    return o


class Slow(_Fake):
    """A correct Trilu that takes SLOW_CALL_S per call: a task of many cases lasts long enough for a
    test to interrupt the run in the middle of it."""

    post = staticmethod(_slow)


class KillsItsProcess(_Fake):
    """Ends the process that prepares a model, as a segfaulting engine would. With --no-isolate on a
    Dask cluster that process is the Dask worker itself: every attempt of the task kills a worker."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        os._exit(3)
