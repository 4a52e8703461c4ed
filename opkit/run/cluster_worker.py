"""The worker side of ``opkit test --scheduler`` (runs in Dask worker processes: opkit must be
installed there): the up-front check of a worker (``check_worker``), one task (``run_task``: one
op version on one backend, ``run_unit`` with this thread's kept backend process), and the stop a
client sends on Ctrl-C (``stop_run``)."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import threading
import uuid
from dataclasses import replace

from .job import Job

CACHED_BACKENDS = 2  # backend processes a worker thread keeps between ops (runs may use different backends)

_RUN_STOPS: dict[str, threading.Event] = {}  # run id -> set when that run's client asked its tasks to stop
_RUN_STOPS_LOCK = threading.Lock()
_THREAD = threading.local()  # per worker thread: backend processes and second-opinion engines kept between ops


def _run_stop(run_id: str) -> threading.Event:
    with _RUN_STOPS_LOCK:
        return _RUN_STOPS.setdefault(run_id, threading.Event())


def stop_run(run_id: str) -> bool:
    """Ask this worker's tasks of run ``run_id`` to stop (``Client.run`` from the client on Ctrl-C;
    a task of that run that starts later returns at once)."""
    _run_stop(run_id).set()
    return True


def _spec_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _worker_problems(backends: list, digests: dict[str, str], opkit_version: str) -> list[str]:
    """What keeps this worker from running the run's tasks (empty: nothing)."""
    from .. import __version__
    from ..backends.registry import BackendUnavailable
    from .resolve import _check_available

    if __version__ != opkit_version:
        return [f"opkit {__version__}, the client has {opkit_version}"]
    problems = []
    here = {path: _spec_digest(path) for path in digests}
    missing = [path for path, digest in here.items() if digest is None]
    changed = [path for path, digest in here.items() if digest is not None and digest != digests[path]]
    if missing:
        problems.append(f"no spec file {missing[0]}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                        + ": workers need the client's opkit and project files at the same paths")
    elif changed:
        problems.append(f"spec file {changed[0]} differs from the client's"
                        + (f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""))
    for spec in backends:
        try:
            _check_available(spec)
        except BackendUnavailable as exc:
            problems.append(str(exc))
    return problems


async def check_worker(backends: list, digests: dict[str, str], opkit_version: str) -> dict:
    """The up-front check, run on every worker by ``Client.run``. A coroutine, so that importing
    the backend (seconds for some engines) happens in a thread, not in the worker's event loop."""
    import asyncio

    problems = await asyncio.get_running_loop().run_in_executor(
        None, _worker_problems, backends, digests, opkit_version)
    return {"problems": problems, "pid": os.getpid()}


def _allow_children() -> None:
    """A nanny starts its worker as a daemonic multiprocessing process (``distributed.worker.daemon``),
    and multiprocessing refuses children to those; the backend worker processes must be children
    all the same (they die with this process through their own lifeline, not through the flag)."""
    import multiprocessing

    process = multiprocessing.current_process()
    if process.daemon:
        process._config["daemon"] = False  # what the `daemon` setter does, without its not-started check


def _activate(project_json: dict | None) -> None:
    """Make the client's project the one this worker process looks specs and kernels up in."""
    if project_json is None:
        return
    from ..core import project as projects

    wanted = projects._from_json(dict(project_json))
    if projects.active() != wanted:
        projects.activate(wanted)


def _backend_worker(job: Job):
    """This thread's backend process for the job's backend and limits, started on first use and
    kept for the thread's next op (the oldest one closed when the thread has too many)."""
    from ..conformance.worker_engine import InProcess
    from ..conformance.worker import Worker

    cache = getattr(_THREAD, "backends", None)
    if cache is None:
        cache = _THREAD.backends = collections.OrderedDict()
    key = (job.backend, job.timeout, job.memory_gb, job.no_isolate)
    worker = cache.pop(key, None)
    if worker is None:
        worker = (InProcess if job.no_isolate else Worker)(job.backend, timeout=job.timeout, memory_gb=job.memory_gb)
    cache[key] = worker
    while len(cache) > CACHED_BACKENDS:
        _, old = cache.popitem(last=False)
        old.close()
    return worker


def _engines() -> dict:
    engines = getattr(_THREAD, "engines", None)
    if engines is None:
        engines = _THREAD.engines = {}
    return engines


def run_task(job: Job, run_id: str, topic: str, index: int) -> dict:
    """One op on one backend, on a Dask worker: ``run_unit`` with this thread's backend process,
    every record sent to the client as an event as it is made (its JSON form). Returns the records
    (``CaseRecord``, pickled by Dask) and skipped items, the backend's
    description, which worker and attempt ran it, and whether the client stopped it."""
    import warnings

    from distributed import get_worker

    from .unit import run_unit, stream_line
    from ..conformance.stopping import stop_thread_on

    warnings.simplefilter("ignore")  # kernels' numeric warnings are not outcomes
    worker = get_worker()
    attempt = uuid.uuid4().hex[:12]
    stop = _run_stop(run_id)
    out = {"records": [], "info": None, "worker": worker.address, "attempt": attempt, "stopped": True}
    if stop.is_set():
        return out

    def send(item) -> None:
        # JSON text, as -j's partial-results files: records may hold values msgpack does not know
        worker.log_event(topic, {"task": index, "attempt": attempt, "worker": worker.address,
                                 "item": json.dumps(stream_line(item), default=str)})

    _allow_children()
    _activate(job.project)
    job = replace(job, project=None, progress=None)
    stop_thread_on(stop)
    try:
        records, info = run_unit(job, _backend_worker(job), on_start=lambda runner, info: send({"_info": info}),
                                 sink=send, engines=_engines())
    except KeyboardInterrupt:  # the client stopped the run (a Dask task must not raise it: it ends the thread)
        return out
    finally:
        stop_thread_on(None)
    return {**out, "records": records, "info": info, "stopped": False}
