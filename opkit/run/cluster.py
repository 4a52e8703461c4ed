"""``opkit test --scheduler ADDRESS``: the sweep on an existing Dask ``distributed`` cluster.

A task is what a ``-j`` pool process runs, ``run_unit`` (opkit.run.unit) on one backend, for one op version
(every type binding and suite of it; an op with one version is one task, and an op's lowerings go
with its last version): finer than ``-j``'s one op, so that an op with many versions and bindings
(Cast, CastLike) spreads over the cluster instead of finishing last on one worker. On the worker
the backend runs in its own isolated process exactly as in a local run (crash, timeout and memory
limits hold), kept for the thread's next task. Seeds are per op version and binding, so: same seed,
same cases, same outcomes as a local run; the report is assembled and written (atomically) by the
client, in the local run's order.

What the client does, all with ``distributed``'s own mechanisms:

- before the first case (usage errors, exit 2): ``distributed`` installed (the ``dask`` extra), the
  scheduler reachable, at least one worker, and on every worker (``Client.run``) opkit of the same
  version, the run's spec files at the same paths with the same content, and the backend installed;
- one task per op version (``Client.submit``; ``retries`` for a task that raised). Workers that declare a
  resource ``opkit`` (``dask worker --resources opkit=1``) run at most that many opkit tasks at once;
- every finished case travels back as a Dask event as soon as it is made (``Worker.log_event`` to
  ``Client.subscribe_topic``): live progress (cases done, per worker), and an interrupted run still
  reports every finished case, as with ``-j``;
- a worker lost mid-run (killed, OOM, node gone): Dask reschedules its tasks on other workers and
  the run completes. A task whose workers keep dying is given up by the scheduler after its
  ``distributed.scheduler.allowed-failures`` (default 3; a scheduler setting) and the op version
  is reported as one case saying so (``crash`` with ``--no-isolate``, where the backend ran inside
  the dead worker; otherwise ``untested``, since the backend's own deaths are already ``crash``
  cases: a dead Dask worker is opkit's runner or the machine), after the cases it finished;
- Ctrl-C: pending tasks are cancelled and running ones told to stop (``Client.run``): they stop at
  their next check, like a local run, without touching other runs on the same workers.
"""

from __future__ import annotations

from ..core.distribution import pip_install

import collections
import json
import logging
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, replace

from ..results.record import CaseRecord
from .cluster_units import Unit, units
from .cluster_worker import _spec_digest, check_worker, run_task, stop_run
from .job import Job
from .unit import streamed_item


SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"  # Dask's own convention (dask.config "scheduler-address")
INSTALL_HINT = pip_install("dask")
WORKERS_WAIT_S = 30.0  # an adaptive cluster may start with no worker: wait this long for one
TASK_RETRIES = 1  # a task that raised (not one whose worker died: that is the scheduler's allowed-failures)
RESOURCE = "opkit"  # workers declaring it run at most that many opkit tasks at once
POLL_S = 0.2  # the client's loop: how often it looks at finished tasks, events and Ctrl-C
STOP_WAIT_S = 3.0  # Ctrl-C: how long telling the cluster to stop may hold up the report
NO_WORKERS_NOTE_S = 30.0  # a cluster without workers this long while tasks wait: say so (and wait on)
WORKERS_POLL_S = 5.0


class ClusterUsageError(Exception):
    """A problem found before the first case: one line, exit 2 (``cli`` turns it into TestUsageError)."""


def scheduler_address(args) -> tuple[str, str] | None:
    """(address, where it came from) when the run goes to a cluster: ``--scheduler``, else Dask's
    ``DASK_SCHEDULER_ADDRESS``; None for a local run."""
    given = getattr(args, "scheduler", None)
    if given is not None:
        if not given.strip():
            raise ClusterUsageError("--scheduler needs an address (e.g. tcp://127.0.0.1:8786)")
        return given.strip(), "--scheduler"
    env = os.environ.get(SCHEDULER_ENV, "").strip()
    return (env, SCHEDULER_ENV) if env else None


# ------------------------------------------------------------------------------------------------
# the client side (the worker side is cluster_worker, the cutting into tasks cluster_units)


@dataclass
class _Task:
    """The client's view of one task."""

    index: int
    unit: Unit
    attempt: str | None = None  # the attempt whose events ``streamed`` holds
    streamed: list = field(default_factory=list)
    attempts: set = field(default_factory=set)
    done: list | None = None  # the final records


@dataclass(frozen=True)
class ClusterSummary:
    """What the report says about the cluster a run used (``settings.cluster``)."""

    scheduler: str
    workers: int
    workers_lost: int
    tasks_rerun: int

    def as_dict(self) -> dict:
        return {"scheduler": self.scheduler, "workers": self.workers, "workers_lost": self.workers_lost,
                "tasks_rerun": self.tasks_rerun}


def _import_distributed(source: str):
    try:
        import distributed
    except ImportError:
        raise ClusterUsageError(f"{source} needs Dask's distributed: {INSTALL_HINT}"
                                + (f" (or unset {SCHEDULER_ENV} to run here)" if source == SCHEDULER_ENV else "")
                                ) from None
    return distributed


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + " ..."


class Cluster:
    """A connection to a Dask cluster for one ``opkit test`` run."""

    def __init__(self, address: str, source: str, quiet: bool = False):
        self.address, self.source, self.quiet = address, source, quiet
        self.run_id = uuid.uuid4().hex
        self._key_prefix = f"opkit-{self.run_id[:12]}-"  # task keys: the dashboard names the op
        self.client = None
        self.resources = None
        self.worker_pids: dict[str, int] = {}
        self.inbox: collections.deque = collections.deque()  # events, appended by the client's loop thread
        self.tasks: dict[tuple[int, int], _Task] = {}  # (backend position, op index) -> task
        self.per_worker: collections.Counter = collections.Counter()
        self.lost: set[str] = set()
        self.infos: dict[int, dict] = {}  # backend position -> the first describe() a task returned
        self.other_versions: dict[int, set] = {}  # backend position -> other versions workers ran
        self.futures: dict = {}  # the tasks not finished yet (what Ctrl-C cancels)
        self.failed: list[str] = []  # ops whose task failed for another reason than dying workers
        self.tty = False  # progress goes to a terminal (one line rewritten in place)
        self._workers_checked = 0.0
        self._log_level: int | None = None  # distributed.client's, while connected
        self._no_workers_since: float | None = None
        self._no_workers_said = False

    # -- before the run
    def connect(self) -> None:
        distributed = _import_distributed(self.source)
        try:
            # the connect timeout is Dask's own setting (distributed.comm.timeouts.connect, 30 s)
            self.client = distributed.Client(self.address, set_as_default=False)
        except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, a bad address (ValueError)
            raise ClusterUsageError(f"cannot reach the Dask scheduler at {self.address} ({self.source}): "
                                    f"{_one_line(exc)}") from None
        # a lost scheduler connection is reported once per task (and in the summary): not also as
        # the client's reconnection tracebacks
        client_log = logging.getLogger("distributed.client")
        self._log_level = client_log.level
        client_log.setLevel(logging.CRITICAL)
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_WAIT_S)
        except Exception:  # noqa: BLE001 - TimeoutError
            self.close()
            raise ClusterUsageError(f"the Dask cluster at {self.address} has no worker (waited "
                                    f"{WORKERS_WAIT_S:g} s): start some with `dask worker {self.address}`") from None

    def check(self, backend_specs: list, spec_paths: list[str]) -> None:
        """Every worker must be able to run the run's tasks; the first that cannot is a usage error."""
        from .. import __version__

        digests = {p: _spec_digest(p) for p in spec_paths}
        try:
            answers = self.client.run(check_worker, backend_specs, digests, __version__, on_error="return")
        except Exception as exc:  # noqa: BLE001 - the scheduler went away between connect and check
            raise ClusterUsageError(f"cannot check the workers of {self.address}: {_one_line(exc)}") from None
        for address in sorted(answers):
            answer = answers[address]
            if isinstance(answer, BaseException):
                hint = " (is opkit installed there?)" if isinstance(answer, (ImportError, AttributeError)) else ""
                raise ClusterUsageError(f"Dask worker {address} cannot run opkit: {type(answer).__name__}: "
                                        f"{_one_line(answer)}{hint}")
            if answer["problems"]:
                raise ClusterUsageError(f"Dask worker {address}: {answer['problems'][0]}")
            self.worker_pids[address] = answer["pid"]
        info = self.client.scheduler_info(n_workers=-1)["workers"] if _takes_n_workers(self.client) else \
            self.client.scheduler_info()["workers"]
        if any(RESOURCE in (w.get("resources") or {}) for w in info.values()):
            self.resources = {RESOURCE: 1}
        threaded = sorted(a for a, w in info.items() if w.get("nthreads", 1) > 1)
        if threaded and self.resources is None and not self.quiet:
            print(f"opkit test: note: {len(threaded)} Dask worker(s) have several threads: their ops share one "
                  "process (and its GIL); `dask worker --nthreads 1 --nworkers N`, or `--resources opkit=1`, "
                  "runs one op per process", file=sys.stderr)

    # -- the run
    def execute(self, run, position: int, spec_b, job: Job, specs: list) -> None:
        """Run every op of ``specs`` on the cluster; records are kept per task (``records``), and
        ``run.progress`` sees every case as it finishes."""
        from distributed import as_completed

        from ..conformance.runner import check_stop

        topic = f"opkit-{self.run_id}-{position}"
        run.progress.detail = self.progress_detail
        self.tty = getattr(run.progress, "tty", False) and run.progress.enabled
        self.client.subscribe_topic(topic, lambda event: self.inbox.append(("case", position, event[1])))
        if position == 0:
            self.client.subscribe_topic("all", lambda event: self.inbox.append(("cluster", position, event[1])))
        from ..core.project import _to_json, active

        job = replace(job, progress=None, project=_to_json(active()))
        futures = {}
        for i, unit in enumerate(units(specs, job.max_bindings or None, job.selected_versions)):
            self.tasks[(position, i)] = _Task(i, unit)
            task_job = replace(job, paths=(unit.path,), versions=unit.versions, lowerings=unit.lowerings)
            future = self.client.submit(run_task, task_job, self.run_id, topic, i,
                                        key=f"{self._key_prefix}{position}-{i}-{unit.label}",
                                        retries=TASK_RETRIES, pure=False, resources=self.resources,
                                        priority=unit.weight)
            futures[future] = i
        self.futures.update(futures)
        try:
            pending = as_completed(futures, loop=self.client.loop)
            while not pending.is_empty():
                check_stop()  # Ctrl-C, also when a library swallowed the KeyboardInterrupt
                self._drain(run)
                batch = pending.next_batch(block=False)
                if not batch:
                    self._watch_workers()
                    time.sleep(POLL_S)
                    continue
                self._drain(run)  # the cases a finished task streamed before its result came
                for future in batch:
                    self._finish(run, position, spec_b, job, futures[future], future)
        except BaseException:
            self.stop()
            raise
        finally:
            self._drain(run)

    def _watch_workers(self) -> None:
        """Say once when the cluster has had no worker for NO_WORKERS_NOTE_S (all lost, or an
        adaptive cluster still starting them): the run waits for one, as Dask does."""
        now = time.monotonic()
        if now - self._workers_checked < WORKERS_POLL_S or self._no_workers_said:
            return
        self._workers_checked = now
        if self.client.nthreads():
            self._no_workers_since = None
            return
        if self._no_workers_since is None:
            self._no_workers_since = now
        elif now - self._no_workers_since >= NO_WORKERS_NOTE_S:
            self._no_workers_said = True
            print(f"{chr(10) if self.tty else ''}opkit test: the Dask cluster at {self.address} has had no worker "
                  f"for {NO_WORKERS_NOTE_S:g} s; waiting for one (Ctrl-C ends the run, keeping the finished cases)",
                  file=sys.stderr)

    def _finish(self, run, position: int, spec_b, job: Job, i: int, future) -> None:
        task = self.tasks[(position, i)]
        self.futures.pop(future, None)
        try:
            out = future.result()
            future.release()  # the worker may drop the result: the client has it
        except Exception as exc:  # noqa: BLE001 - KilledWorker, or the task raised (twice: retries)
            task.done = list(task.streamed) + [self._failed_record(task.unit, spec_b.name, job.no_isolate, exc,
                                                                   len(task.streamed))]
            self._count(run, task.done[len(task.streamed):], None)
            return
        self._note_info(position, out["info"])
        records = out["records"]
        counted = len(task.streamed) if task.attempt == out["attempt"] else 0
        if task.attempt is not None and task.attempt != out["attempt"]:
            self._uncount(run, task.streamed)
        task.attempts.add(out["attempt"])
        task.done = records
        self._count(run, records[counted:], out["worker"])

    def _failed_record(self, unit: Unit, backend: str, no_isolate: bool, exc: BaseException,
                       finished: int = 0) -> CaseRecord:
        from distributed import KilledWorker

        from .unit import _runner_error
        from ..results.outcomes import CRASH

        record = _runner_error(unit.path, backend, exc)
        if unit.versions:
            record = replace(record, version=unit.versions[0])
        if isinstance(exc, KilledWorker):
            worker = getattr(getattr(exc, "last_worker", None), "address", "?")
            deaths = getattr(exc, "allowed_failures", 0) + 1
            record = replace(record, message=(
                f"{deaths} Dask worker(s) died while running this op (the last: {worker}); the "
                "scheduler gave up on it (distributed.scheduler.allowed-failures)"
                + ("; the cases its last attempt finished are reported before this one" if finished else "")),
                details={"stage": "cluster", "worker": worker, "workers_died": deaths})
            if no_isolate:  # the backend ran inside the worker that died
                record = replace(record, outcome=CRASH)
        else:  # it raised twice (``retries``), or the scheduler cancelled it (lost connection)
            record = replace(record, message=f"task failed on the Dask cluster: {type(exc).__name__}: {_one_line(exc)}",
                             details={"stage": "cluster"})
            self.failed.append(f"{unit.label}: {record.message}")
        return record

    def _note_info(self, position: int, info: dict | None) -> None:
        """Keep the first backend description of each backend; note other versions workers ran."""
        if not info:
            return
        first = self.infos.setdefault(position, info)
        if info.get("version") != first.get("version"):
            self.other_versions.setdefault(position, set()).add(str(info.get("version")))

    def warnings(self) -> list[str]:
        """For the report: workers that ran another version of a backend than the one the report
        names; ops whose task failed on the cluster (they make the run fail)."""
        out = [f"Dask workers ran other versions of backend {self.infos[p].get('name')} than "
               f"{self.infos[p].get('version')}: {', '.join(sorted(v))}; install the same one everywhere"
               for p, v in sorted(self.other_versions.items())]
        if self.failed:
            out.append(f"{len(self.failed)} op version(s) did not run on the Dask cluster, e.g. {self.failed[0]}")
        return out

    def _count(self, run, records: list[CaseRecord | dict], worker: str | None) -> None:
        for record in records:
            if not isinstance(record, CaseRecord):  # a skipped item
                continue
            run.progress(record)
            if worker:
                self.per_worker[worker] += 1

    @staticmethod
    def _uncount(run, records: list[CaseRecord | dict]) -> None:
        """Take a superseded attempt's cases back out of the progress counts."""
        counts = getattr(run.progress, "counts", None)
        for record in records:
            if counts is not None and isinstance(record, CaseRecord):
                counts[record.outcome] -= 1
                if counts[record.outcome] <= 0:
                    del counts[record.outcome]
                run.progress.examples -= record.examples_run

    def _drain(self, run) -> None:
        """Apply the events received so far (main thread only)."""
        while self.inbox:
            kind, position, msg = self.inbox.popleft()
            if kind == "cluster":
                self._cluster_event(msg)
                continue
            task = self.tasks.get((position, msg.get("task")))
            if task is None or task.done is not None:
                continue  # a late event of a task already finished
            item = json.loads(msg["item"])
            if "_info" in item:
                self._note_info(position, item["_info"])
            if task.attempt != msg["attempt"]:  # a new attempt (the previous worker died): start over
                self._uncount(run, task.streamed)
                task.attempt, task.streamed = msg["attempt"], []
                task.attempts.add(msg["attempt"])
            if "_info" in item:
                continue
            item = streamed_item(item)  # a record's JSON form read back as the record
            if item is None:
                continue
            task.streamed.append(item)
            self._count(run, [item], msg["worker"])

    def _cluster_event(self, msg) -> None:
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker" or msg.get("expected"):
            return
        ours = [k for k in msg.get("processing-tasks") or () if str(k).startswith(self._key_prefix)]
        worker = msg.get("worker", "?")
        if worker in self.lost:
            return
        self.lost.add(worker)
        if not self.quiet:  # on a TTY, off the progress line first
            print(f"{chr(10) if self.tty else ''}opkit test: Dask worker {worker} lost while it had {len(ours)} "
                  "task(s) of this run (Dask reschedules them elsewhere)", file=sys.stderr)

    # -- what the run produced so far
    def records(self) -> list[CaseRecord | dict]:
        """Every record so far, in backend and op order: finished tasks' records, then the cases
        unfinished tasks streamed (safe to call at any time from the main thread); skipped items
        are the dicts they are (marked ``skipped``)."""
        out = []
        for key in sorted(self.tasks):
            task = self.tasks[key]
            out += task.done if task.done is not None else task.streamed
        return out

    def progress_detail(self) -> str:
        """The progress line's cases per worker (a few workers), or their spread over many."""
        counts = [n for _, n in sorted(self.per_worker.items())]
        text = (f"cases per worker: {' '.join(str(n) for n in counts)}" if len(counts) <= 8 else
                f"cases per worker: {min(counts)}-{max(counts)} on {len(counts)}")
        return text + (f"; {len(self.lost)} worker(s) lost" if self.lost else "")

    def summary(self) -> ClusterSummary:
        workers = set(self.worker_pids) | set(self.per_worker)
        rerun = sum(1 for t in self.tasks.values() if len(t.attempts) > 1)
        return ClusterSummary(self.address, len(workers), len(self.lost), rerun)

    def workers_text(self) -> str:
        """One line: cases per worker."""
        s = self.summary()
        parts = ", ".join(f"{w} {n}" for w, n in sorted(self.per_worker.items()))
        done = (f"{sum(self.per_worker.values())} cases on {len(self.per_worker)} worker(s) ({parts})"
                if parts else "no case finished on a worker")
        return (f"Dask cluster {self.address}: {done}"
                + (f"; {s.workers_lost} worker(s) lost, {s.tasks_rerun} task(s) rerun"
                   if s.workers_lost or s.tasks_rerun else ""))

    # -- the end
    def stop(self) -> None:
        """Ctrl-C: cancel what has not started, tell running tasks to stop. Best effort and bounded:
        with the scheduler gone these calls would wait for it, and the report comes first."""
        client = self.client
        if client is None:
            return

        def tell():
            try:
                client.cancel(list(self.futures), force=True)
                client.run(stop_run, self.run_id, on_error="ignore")
            except BaseException:  # noqa: BLE001
                pass

        thread = threading.Thread(target=tell, name="opkit-cluster-stop", daemon=True)
        thread.start()
        thread.join(STOP_WAIT_S)

    def close(self) -> None:
        if self._log_level is not None:
            logging.getLogger("distributed.client").setLevel(self._log_level)
            self._log_level = None
        client, self.client = self.client, None
        if client is not None:
            try:
                for topic in list(getattr(client, "_event_handlers", {})):
                    client.unsubscribe_topic(topic)  # else the scheduler tells a closed client it left
                client.close(timeout=10)
            except BaseException:  # noqa: BLE001
                pass


def _takes_n_workers(client) -> bool:
    import inspect

    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False
