"""``opkit test``: run backends against the specs and report.

    opkit test --backend NAME [--backend NAME2 ...] [--op OP] [--suite examples|properties|differential|all]
               [--max-examples N] [--seed S] [--timeout SECONDS] [--report FILE.json] [--repro-dir DIR] [-j N]
               [--scheduler ADDRESS]

This module holds the session of one run (``_Run``: prepare, execute, collect, build, finish)
and ``run_test``; the options are in ``options`` (read once into ``config.RunConfig``), the unit of
work in ``job`` and ``unit``, the -j pool in ``pool``, signals in ``interrupts``, the report and the
terminal summary in ``summary``. With --scheduler (or $DASK_SCHEDULER_ADDRESS) the ops run on a
Dask cluster: opkit.run.cluster.

Exit codes:

- 0: every case passed, or failed as an expectations file says (xfail).
- 1: any other outcome (mismatch, unsupported, error, crash, timeout, xpass); or no case ran at all
  (cases were asked for but nothing could run: ops without a reference kernel or examples, e.g.
  ``--op Loop`` or a com.microsoft op without a kernel, or suites with nothing for the chosen
  ops; the reason is printed per op and kept in ``summary.warnings``, and ``summary.ok`` is false:
  a run that tests nothing does not pass); or the report could not be written at the end (a full
  disk: one line says so, the terminal summary still prints, no partial file is left).
- 2: usage errors, all found before the first case runs (nothing is written): unknown backend or
  op, bad option values (``-j 0``), a --report folder that is missing or not writable, a
  --repro-dir that cannot be written, an expectations file that does not load (broken YAML,
  unknown keys, values of the wrong type: the message names the file and the entry).
- 130: interrupted by Ctrl-C (SIGINT) or SIGTERM. Once the checks passed, the report is still
  written with every case that finished (with -j N too: pool processes stream their cases as they
  finish), ``settings.interrupted`` true and ``summary.ok`` false. Only the first signal
  interrupts; later ones never cut the report short (it is written atomically, with signals
  deferred). The runner re-checks for the interrupt between examples, so a library that swallows
  the KeyboardInterrupt cannot keep the run going; as a last resort a watchdog writes the partial
  report and ends the process (and its workers) ``INTERRUPT_GRACE_S`` seconds after the first
  signal (``SECOND_SIGNAL_GRACE_S`` after a second one; the environment variable
  OPKIT_INTERRUPT_GRACE overrides the first). A case that had not finished when the signal came is
  not reported (its outcome could be an artefact of the interrupt).

Reports are written atomically (a temporary file beside the target, fsynced, renamed over it): a run
killed at any moment, kill -9 included, leaves the previous report or a complete new one.

Warnings (stderr, and ``summary.warnings`` in the report; the exit code does not change): entries of
an expectations file that matched no case of the run (for ops and suites the run covered), ops named
with --op that had no case, repro bundles that could not be written, a default repro folder that is
not writable (bundles are then off).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from dataclasses import replace

from ..core.exit_codes import ExitCode
from ..results.record import CaseRecord
from .config import RunConfig
from .interrupts import _Interrupts, _say
from .job import Job
from .options import TestUsageError, _check_options, _suites
from .pool import run_pool
from .resolve import _backend_specs, _check_available, _load_expectations, _second_opinion_specs, _select_specs
from .summary import build_run_report, exit_code, print_summary
from .unit import _unit_records, run_unit
from .writable import _check_repro_dir, _check_report_path



class _Run:
    """One ``opkit test`` run: checks, execution, report. Everything finished so far stays
    reachable (``collect``) so that an interrupted run, or the watchdog, can report it."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.start = time.perf_counter()
        self.code_scope: tuple[str, ...] = ()  # the adapters whose code decides verdicts (set with the backends)
        self.lock = threading.Lock()  # held while the report is written
        self.finishing = False  # set when the report is being built: signals no longer raise
        self.reported = False
        self.code: int | None = None
        self.sources: list = []  # callables returning records so far (CaseRecord; skipped items: dicts)
        self.infos: dict[int, dict] = {}  # backend position -> describe() info
        self.streams: dict = {}  # backend position -> its -j pool's streams (pool._PoolStreams)
        self.warnings: list[str] = []
        self.signame: str | None = None
        self.prepared = False  # the checks passed: from here on an interrupt still writes a report
        self.cluster = None  # a Dask cluster (--scheduler): opkit.run.cluster

    # -- checks (usage errors) before anything runs
    def prepare(self) -> None:
        from ..spec import catalog
        from ..backends.registry import BackendUnavailable
        from ..emit.write_generated import stale_kernels
        from ..core.project import active
        from .progress import Progress

        config = self.config
        _check_options(config)
        if config.report:
            _check_report_path(config.report)
        if config.junit_xml:
            _check_report_path(config.junit_xml, "--junit-xml", "opkit.xml")
        project = active()
        conflicts = catalog.conflicts()
        if conflicts:
            raise TestUsageError(str(conflicts[0]))
        self.backend_specs = _backend_specs(config)
        for spec_b in self.backend_specs:
            try:
                _check_available(spec_b)
            except BackendUnavailable as exc:
                raise TestUsageError(str(exc)) from None
        from .selection import SelectionError, parse_opsets

        try:
            opsets = parse_opsets(config.opset)
        except SelectionError as exc:
            raise TestUsageError(str(exc)) from None
        self.specs, self.versions, left_out = _select_specs(config.op, opsets)
        for text in left_out:
            self.warn(text)
        stale = stale_kernels(project, self.specs)
        if stale:
            raise TestUsageError(f"generated kernels are missing or older than their specs ({', '.join(stale)}): "
                                 "run `opkit gen` first")
        if not self.specs:
            raise TestUsageError("no ops to test (no spec has a reference kernel yet?)")
        self.expectations = [_load_expectations(config, spec_b.name) for spec_b in self.backend_specs]
        self.second_opinions = _second_opinion_specs(config, self.backend_specs)
        # the code that decides the verdicts, read now: the report must name the code the run
        # started with, not what the files hold when it ends (code_fingerprint caches per process
        # and scope); the scope: the adapters of the runtimes this run uses
        from ..core.code_fingerprint import adapter_scope, code_fingerprint

        self.code_scope = adapter_scope(s.target for s in self.backend_specs + list(self.second_opinions))
        code_fingerprint(self.code_scope)
        self.suites = _suites(config)
        self.repro_dir = self._repro_dir(project)
        self.cluster = _connect_cluster(config, self.backend_specs + self.second_opinions,
                                        [s.path for s in self.specs])
        # on a cluster every op may be running at once: done is counted as on one process
        self.progress = Progress(enabled=not config.quiet, total=len(self.specs) * len(self.backend_specs),
                                 running=config.jobs if self.cluster is None else 1)
        self.prepared = True

    def _repro_dir(self, project) -> str | None:
        """Where repro bundles go (None: nowhere); --repro-dir must be writable, the default folder
        need not be (the run goes on without bundles)."""
        config = self.config
        if config.no_repro:
            return None
        repro_dir = config.repro_dir or os.path.join(project.root, ".opkit", "repro")
        why = _check_repro_dir(repro_dir)
        if why and config.repro_dir:
            raise TestUsageError(f"--repro-dir {config.repro_dir}: cannot write repro bundles there: {why} "
                                 "(or give --no-repro)")
        if why:  # the default folder: run without bundles rather than fail
            self.warn(f"repro bundles are off: cannot write in {repro_dir}: {why} "
                      "(give --repro-dir DIR, or --no-repro)")
            return None
        return repro_dir

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    # -- running
    def job(self, position: int, spec_b) -> Job:
        """The unit of work of one backend: every selected op (``paths`` are set by who runs it)."""
        config = self.config
        expectations, _ = self.expectations[position]
        return Job(backend=spec_b, timeout=config.timeout, max_examples=config.max_examples, seed=config.seed,
                   repro_dir=self.repro_dir, expectations=expectations,
                   suites=tuple(self.suites if position == 0 else [x for x in self.suites if x != "lowerings"]),
                   siblings=config.siblings, no_isolate=config.no_isolate, progress=self.progress,
                   memory_gb=config.memory_limit, max_bindings=config.max_bindings,
                   probe_limit=config.probe_limit, shrink_budget=config.shrink_budget,
                   selected_versions=self.versions,
                   second_opinions=tuple(so for so in self.second_opinions if so.name != spec_b.name))

    def execute(self) -> None:
        from ..backends.registry import BackendUnavailable
        from ..conformance.worker import WorkerStartError

        paths = [s.path for s in self.specs]
        for position, spec_b in enumerate(self.backend_specs):
            job = self.job(position, spec_b)
            try:
                if self.cluster is not None:
                    if position == 0:
                        self.sources.append(self.cluster.records)
                    self.cluster.execute(self, position, spec_b, job, self.specs)
                elif self.config.jobs > 1 and len(paths) > 1:
                    run_pool(self, position, spec_b, job, paths)
                else:
                    def on_start(runner, info, position=position):
                        self.infos[position] = info
                        self.sources.append(lambda: _unit_records(runner))

                    run_unit(replace(job, paths=tuple(paths)), on_start=on_start)
            except WorkerStartError as exc:
                raise TestUsageError(str(exc)) from None
            except BackendUnavailable as exc:
                raise TestUsageError(str(exc)) from None

    # -- what the run produced so far
    def collect(self) -> tuple[list[CaseRecord], list[dict]]:
        """(records, skipped items) so far: the sources yield records (``CaseRecord``) and skipped
        items (dicts marked ``skipped``)."""
        items = []
        for source in list(self.sources):
            try:
                items += source()
            except Exception:  # noqa: BLE001 - a partial report beats none
                pass
        skipped = [{k: v for k, v in r.items() if k != "skipped"} for r in items if not isinstance(r, CaseRecord)]
        records = [r for r in items if isinstance(r, CaseRecord)]
        return records, skipped

    def build(self, interrupted: bool) -> tuple[dict, list[CaseRecord], list[dict], list[str]]:
        return build_run_report(self, interrupted)

    def finish(self) -> int:
        """Write the report and the terminal summary; the exit code. Safe to call again (a
        KeyboardInterrupt that landed here before ``finishing`` was set)."""
        from ..results.report import write_report
        from ..conformance.stopping import stop_requested

        self.finishing = True
        with self.lock:
            if self.reported:
                return self.code
            interrupted = stop_requested()
            report, records, skipped, warnings = self.build(interrupted)
            write_error = None
            if self.config.report:
                try:
                    write_report(report, self.config.report)
                except OSError as exc:  # a full disk, a folder gone read-only: the summary still prints
                    write_error = f"cannot write the report {self.config.report}: {exc.strerror or exc}"
            if self.config.junit_xml and write_error is None:
                write_error = _write_junit(self.config.junit_xml, records, time.perf_counter() - self.start)
            self.reported = True
            self.code = exit_code(self, records, interrupted)
            if write_error and self.code == ExitCode.OK:
                self.code = ExitCode.PROBLEMS
        print_summary(self, report, records, skipped, warnings, interrupted, write_error)
        return self.code

    def emergency_exit(self, signame: str, grace: float) -> None:
        """The watchdog: the run did not stop in time after a signal. Write the partial report
        (unless the run wrote one), kill every process below this one, exit 130."""
        try:
            if not self.reported:
                _say(f"opkit test: the run did not stop within {grace:g} s of {signame} "
                     "(a library swallowed the KeyboardInterrupt?): writing the partial report and exiting")
            if self.lock.acquire(timeout=30):
                try:
                    if not self.reported and self.config.report:
                        from ..results.report import write_report

                        report = self.build(True)[0]
                        report["settings"]["interrupted_by"] = signame
                        report["summary"].setdefault("warnings", []).append(
                            f"the run did not stop within {grace:g} s of {signame}: this report was written "
                            "by the interrupt watchdog")
                        write_report(report, self.config.report)
                        self.reported = True
                finally:
                    self.lock.release()
        except BaseException as exc:  # noqa: BLE001 - exit regardless
            _say(f"opkit test: could not write the partial report: {type(exc).__name__}: {exc}")
        finally:
            from ..conformance.process_kill import descendants, kill_pid

            for pid in descendants(os.getpid()):
                kill_pid(pid)
            os._exit(ExitCode.INTERRUPTED)

    def cleanup(self) -> None:
        for streams in self.streams.values():
            streams.close()
        if self.cluster is not None:
            self.cluster.close()


def _write_junit(path: str, records, duration: float) -> str | None:
    """Write the JUnit XML of the run (atomically); what went wrong, or None."""
    from ..core.atomic_files import WriteError, write_files
    from ..emit.junit import junit_xml

    try:
        write_files({path: junit_xml(records, "opkit test", duration)})
    except WriteError as exc:
        return f"cannot write the JUnit XML: {exc}"
    return None


def _connect_cluster(config: RunConfig, backend_specs, spec_paths):
    """The Dask cluster of the run (--scheduler or $DASK_SCHEDULER_ADDRESS), connected and with
    every worker checked; None for a local run. Problems are usage errors."""
    from .cluster import Cluster, ClusterUsageError, scheduler_address

    try:
        found = scheduler_address(config)
        if found is None:
            return None
        address, source = found
        if config.jobs > 1:
            raise ClusterUsageError(f"-j {config.jobs} and {source} do not mix: the cluster's workers run the ops "
                                    "(start more of them instead)")
        cluster = Cluster(address, source, quiet=config.quiet)
        cluster.connect()
        try:
            cluster.check(backend_specs, spec_paths)
        except BaseException:
            cluster.close()
            raise
        return cluster
    except ClusterUsageError as exc:
        raise TestUsageError(str(exc)) from None


def run_test(args: argparse.Namespace | RunConfig) -> int:
    """``opkit test`` of the spec-driven suites: the exit code (``ExitCode``)."""
    import warnings

    from ..conformance.stopping import stop_requested

    run = _Run(args if isinstance(args, RunConfig) else RunConfig.from_args(args))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # kernels' numeric warnings (overflow, NaN)
            try:
                from hypothesis.errors import HypothesisWarning, NonInteractiveExampleWarning

                warnings.simplefilter("ignore", HypothesisWarning)
                warnings.simplefilter("ignore", NonInteractiveExampleWarning)
            except ImportError:  # pragma: no cover
                pass
            with _Interrupts(run) as interrupts:
                try:
                    try:
                        run.prepare()  # usage errors: nothing has run, nothing is written
                        run.execute()
                    except TestUsageError:
                        raise
                    except BaseException as exc:
                        if not (isinstance(exc, KeyboardInterrupt) or stop_requested()):
                            raise
                        if not run.prepared:  # interrupted while checking: nothing ran, no report
                            raise KeyboardInterrupt from None
                    finally:
                        run.signame = interrupts.signame
                    return run.finish()
                except KeyboardInterrupt:
                    # the first signal landed between the run and the report: only the first one
                    # raises, so this second attempt is not interrupted
                    if not run.prepared:
                        raise
                    run.signame = interrupts.signame
                    return run.finish()
                finally:
                    run.cleanup()
    except TestUsageError as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except ImportError as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return ExitCode.USAGE
