"""Running a unit of work (``Job``: some ops on one backend) in this process: the same code in
the main process, a -j pool process and a Dask worker."""

from __future__ import annotations

import os

from ..results.record import CaseRecord, RecordError
from .job import Job

# this process's backend workers and second-opinion engines, kept between the ops a -j pool
# process runs (``pool._pool_unit``)
_POOL_WORKERS: dict = {}


def run_unit(job: Job, worker=None, on_start=None, sink=None,
             engines: dict | None = None) -> tuple[list[CaseRecord | dict], dict]:
    """Run every suite for some specs on one backend (in this process); returns (items, info): the
    records (``CaseRecord``), then the skipped items (dicts marked ``skipped``: ``_unit_records``).
    A ``worker`` given is reused and left running; otherwise one is started and closed.
    ``on_start(runner, info)`` is called once the backend is up: the runner's ``results`` and
    ``skipped`` grow as cases finish, so a caller interrupted by Ctrl-C still has them. ``sink``
    receives every record and skipped item as it is made (see ``Runner``). ``engines`` keeps the
    second-opinion engines of a caller that reuses ``worker`` (default: this process's pool cache;
    a Dask worker thread has its own). KeyboardInterrupt propagates (after the worker is closed)."""
    from ..spec.load import load_spec_file
    from ..conformance.limits import restore_memory_limit, set_memory_limit
    from ..conformance.lowerings import run_lowerings
    from ..conformance.repro import ReproWriter
    from ..conformance.backend_runner import BackendRunner
    from ..conformance.runner import Runner
    from ..conformance.second_opinion import SecondOpinions
    from ..conformance.worker_engine import InProcess
    from ..conformance.worker import Worker

    spec_b = job.backend
    memory = job.memory_gb
    own = worker is None
    worker_class = InProcess if job.no_isolate else Worker
    if own:
        worker = worker_class(spec_b, timeout=job.timeout, memory_gb=memory)
    opinions = SecondOpinions(job.second_opinions or [],
                              lambda spec: worker_class(spec, timeout=job.timeout, memory_gb=memory),
                              job.timeout, workers=None if own else (_POOL_WORKERS if engines is None else engines))
    # --no-isolate runs the engine in this process, where an address-space limit breaks thread pools
    previous = set_memory_limit(None if job.no_isolate else memory)
    try:
        info = worker.describe()
        backend = BackendRunner(worker, info)
        repro = None
        if job.repro_dir:
            repro = ReproWriter(job.repro_dir, spec_b, info, backend.ir_version, time_limit=job.timeout)
        runner = Runner(backend, max_examples=job.max_examples, seed=job.seed, timeout=job.timeout,
                        repro=repro, expectations=job.expectations, progress=job.progress,
                        backend_name=info.get("name", spec_b.name), siblings=job.siblings,
                        max_bindings=job.max_bindings or None, shrink_budget=job.shrink_budget,
                        sink=sink, second_opinion=opinions or None,
                        probe_limit=job.probe_limit)
        if on_start is not None:
            on_start(runner, info)
        for path in job.paths:
            spec, _ = load_spec_file(path)
            # a cluster task may hold some versions of an op (seeds are per version: same cases);
            # the op's lowerings then run in the task of its last version, where a local run has them
            versions = job.versions or (job.selected_versions or {}).get(path)
            # the versions the whole run asks for (a task's share aside): no narrowing means all of them
            chosen = (job.selected_versions or {}).get(path)
            runner.run_spec(spec, job.suites, versions=versions,
                            selected=chosen if chosen is not None else tuple(v.since for v in spec.versions))
            if "lowerings" in job.suites and job.lowerings:
                run_lowerings(runner, spec)
        return _unit_records(runner), info
    finally:
        if own:
            worker.close()
        opinions.close(own=own)  # a pool process keeps its engines for its next op
        restore_memory_limit(previous)


def _unit_records(runner) -> list[CaseRecord | dict]:
    """A runner's records, then the bindings it did not run (dicts marked ``skipped``, so that pool
    processes can return them too)."""
    from ..results.attribute_coverage import coverage_item

    return list(runner.results) + [dict(item, skipped=True) for item in list(runner.skipped)] \
        + [coverage_item(entry) for entry in list(getattr(runner, "coverage", ()))]


def _runner_error(path: str, backend: str, exc: BaseException) -> CaseRecord:
    from ..spec.load import load_spec_file

    spec, _ = load_spec_file(path)
    return CaseRecord(backend=backend, suite="differential", op=spec.name if spec else os.path.basename(path)[:-5],
                      domain=spec.domain if spec else "?", version=spec.versions[-1].since if spec else 0, types={},
                      example="runner", outcome="untested",
                      message=f"runner process failed: {type(exc).__name__}: {exc}", examples_run=0, duration_s=0.0,
                      repro=None, details={"stage": "runner"})


def stream_line(item: CaseRecord | dict) -> dict:
    """What a record or skipped item is sent as when it is streamed (-j's partial-results lines, a
    Dask worker's events): a record's JSON form, a skipped item (or ``_info``) as it is."""
    return item.to_json() if isinstance(item, CaseRecord) else item


def streamed_item(item: dict) -> CaseRecord | dict | None:
    """A streamed line as what it was: a skipped item stays a dict, a record's JSON form becomes the
    record again (None for a line that is neither: nothing a pool process or worker sends)."""
    from ..results.attribute_coverage import is_coverage

    if item.get("skipped") or is_coverage(item):  # a coverage entry travels as skipped items do
        return item
    try:
        return CaseRecord.from_json(item, "a streamed record")
    except RecordError:
        return None
