"""The -j process pool: each op in a pool process of its own (``_pool_unit``), its records streamed
back as cases finish (``_PoolStreams``), a pool that breaks run again, and no process left behind
on Ctrl-C (``_terminating``) or when the run is killed (``_die_with_parent``)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from ..results.record import CaseRecord
from .job import Job
from .unit import _POOL_WORKERS, _runner_error, run_unit, stream_line, streamed_item

MAX_POOL_ATTEMPTS = 3  # pool breakdowns an op may be caught in before it is reported as a runner error


def _pool_init(parent: int) -> None:
    """A -j pool process: Ctrl-C (SIGINT to the whole process group) is the parent's to handle (it
    kills the pool and reports what the processes streamed), and the process dies with its parent
    (kill -9 of the run leaves no pool process behind; their backend workers then see their pipe
    close and exit)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above ran
        os._exit(1)


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


class _Stream:
    """The pool process's end of a partial-results file: one JSON line per record (its ``to_json``)
    or skipped item, appended with one write each, so a process killed at any moment leaves at most
    one truncated last line."""

    def __init__(self, path: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def write(self, item: CaseRecord | dict) -> None:
        import json

        os.write(self.fd, (json.dumps(stream_line(item), default=str) + "\n").encode("utf-8"))

    def on_start(self, runner, info) -> None:
        self.write({"_info": info})

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _pool_unit(job: Job):
    """One op on one backend in a pool process; the backend worker is kept for the next op. Every
    record is also streamed to the parent's partial-results file (``job.stream``)."""
    import warnings

    from ..conformance.worker_engine import InProcess
    from ..conformance.worker import Worker

    warnings.simplefilter("ignore")
    stream = _Stream(job.stream) if job.stream else None
    job = replace(job, progress=None, stream=None)
    spec_b = job.backend
    worker = _POOL_WORKERS.get(spec_b)
    if worker is None:
        worker = (InProcess if job.no_isolate else Worker)(spec_b, timeout=job.timeout, memory_gb=job.memory_gb)
        _POOL_WORKERS[spec_b] = worker
    try:
        return run_unit(job, worker, on_start=stream.on_start if stream else None,
                        sink=stream.write if stream else None)
    finally:
        if stream is not None:
            stream.close()


class _PoolStreams:
    """The parent's side of -j: per op, the records of a finished task, or the partial-results
    file its pool process appends to (``shared_file``: no name on disk where /proc is, so nothing
    is left whatever kills the run; elsewhere named files, removed as each op ends)."""

    def __init__(self):
        self.done: dict[int, list[CaseRecord | dict]] = {}  # records, then skipped items (dicts)
        self.files: dict[int, tuple] = {}  # op index -> (file object, path for the pool process, named)

    def open(self, i: int) -> str:
        from ..conformance.shared_file import shared_temp_file

        self.discard(i)
        self.files[i] = shared_temp_file("opkit-partial-", ".jsonl")
        return self.files[i][1]

    def finish(self, i: int, records: list[CaseRecord | dict]) -> None:
        self.done[i] = records
        self.discard(i)

    def discard(self, i: int) -> None:
        entry = self.files.pop(i, None)
        if entry is not None:
            entry[0].close()
            if entry[2]:
                try:
                    os.unlink(entry[1])
                except OSError:
                    pass

    def _lines(self, i: int) -> list[dict]:
        import json

        entry = self.files.get(i)
        if entry is None:
            return []
        try:
            fd = entry[0].fileno()
            data = os.pread(fd, os.fstat(fd).st_size, 0)
        except (OSError, ValueError):
            return []
        out = []
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:  # the last line of a killed process
                continue
            if isinstance(item, dict):
                out.append(item)
        return out

    def records(self) -> list[CaseRecord | dict]:
        """Every record so far in op order: finished tasks' results, then what unfinished tasks
        streamed (records read back as ``CaseRecord``, skipped items as the dicts they are; safe to
        call from another thread)."""
        done = dict(self.done)
        out = []
        for i in sorted(set(done) | set(self.files)):
            if i in done:
                out += done[i]
            else:
                out += [streamed_item(item) for item in self._lines(i) if "_info" not in item]
        return [item for item in out if item is not None]

    def info(self) -> dict | None:
        for i in sorted(self.files):
            for item in self._lines(i):
                if "_info" in item:
                    return item["_info"]
        return None

    def close(self) -> None:
        for i in list(self.files):
            self.discard(i)


class _terminating:
    """Shut a process pool down; on an exception (Ctrl-C / SIGTERM) kill its processes (and so
    their backend workers) instead of leaving orphans."""

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        return self.pool

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.pool.shutdown(wait=True)
            return False
        from ..conformance.process_kill import descendants, kill_pid

        for proc in list((getattr(self.pool, "_processes", None) or {}).values()):
            for child in descendants(proc.pid):
                kill_pid(child)
            kill_pid(proc.pid)
        self.pool.shutdown(wait=False, cancel_futures=True)
        return False


def run_pool(run, position: int, spec_b, job: Job, paths: list[str]) -> None:
    """Each op in a pool process (-j N). A pool process that dies (the OOM killer, a kernel
    segfault, an abort in a library opkit calls) breaks the whole pool: only the ops running then
    are charged an attempt (at most N are handed to the pool at a time, so the ops still waiting
    are not), and they run again alone, one op per pool, so that the op that kills its process is
    told from its neighbour; the others go on N at a time. An op caught in MAX_POOL_ATTEMPTS
    breakdowns is reported as a runner error. Records stream back as cases finish (see
    ``_PoolStreams``), so an interrupt keeps them. ``run`` is the session (``session._Run``)."""
    streams = run.streams[position] = _PoolStreams()
    run.sources.append(streams.records)
    workers = min(run.config.jobs, len(paths))
    pending, attempts, suspects = list(range(len(paths))), {}, []
    while pending or suspects:
        if suspects:  # ops that were running when a pool broke: one at a time
            suspect = suspects.pop(0)
            suspects += _pool_round(run, position, spec_b, job, paths, streams, 1, [suspect], attempts)[0]
            continue
        broken, pending = _pool_round(run, position, spec_b, job, paths, streams, workers, pending, attempts)
        suspects = sorted(broken)


def _pool_round(run, position: int, spec_b, job: Job, paths: list[str], streams: _PoolStreams, workers: int,
                pending: list[int], attempts: dict[int, int]) -> tuple[list[int], list[int]]:
    """One pool running the ``pending`` ops, ``workers`` at a time; returns (the ops that were
    running when it broke and are to run again, the ops it did not start)."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from ..conformance.stopping import check_stop

    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_pool_init,
                               initargs=(os.getpid(),))
    broken, queue = [], list(pending)
    with _terminating(pool):
        futures: dict = {}
        while queue or futures:
            check_stop()  # a KeyboardInterrupt swallowed in here still ends the run
            while queue and len(futures) < workers and not broken:  # one op per task: live progress
                i = queue.pop(0)
                stream = streams.open(i)
                futures[pool.submit(_pool_unit, replace(job, paths=(paths[i],), progress=None, stream=stream))] = i
            if not futures:
                break  # the pool broke: the rest wait for a new one
            finished, _ = wait(set(futures), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = futures.pop(fut)
                outcome = _pool_result(fut, paths[i], spec_b, attempts, i)
                if outcome is None:
                    broken.append(i)
                    continue
                recs, info = outcome
                for r in recs:
                    if isinstance(r, CaseRecord):
                        run.progress(r)
                if info and position not in run.infos:
                    run.infos[position] = info
                streams.finish(i, recs)
    return broken, queue


def _pool_result(fut, path: str, spec_b, attempts: dict[int, int],
                 i: int) -> tuple[list[CaseRecord | dict], dict | None] | None:
    """A finished pool task's (records, info); a runner error when its process failed; None when
    the pool broke under it fewer than MAX_POOL_ATTEMPTS times (it runs again)."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return fut.result()
    except BrokenProcessPool as exc:
        attempts[i] = attempts.get(i, 0) + 1
        if attempts[i] < MAX_POOL_ATTEMPTS:
            return None
        return [_runner_error(path, spec_b.name, exc)], None
    except Exception as exc:  # noqa: BLE001 - the op's process failed
        return [_runner_error(path, spec_b.name, exc)], None
