"""``opkit test``: run backends against the specs and report.

    opkit test --backend NAME [--backend NAME2 ...] [--op OP] [--suite examples|properties|differential|all]
               [--max-examples N] [--seed S] [--timeout SECONDS] [--report FILE.json] [--repro-dir DIR] [-j N]
               [--scheduler ADDRESS]

With --scheduler (or $DASK_SCHEDULER_ADDRESS) the ops run on a Dask cluster: opkit.run.cluster.

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

from ..cases.strategies import PROBE_LIMIT

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
MAX_POOL_ATTEMPTS = 3  # pool breakdowns an op may be caught in before it is reported as a runner error
EXIT_INTERRUPTED = 130  # like a shell's Ctrl-C; the report (partial) is still written
INTERRUPT_GRACE_S = 5.0  # after the first Ctrl-C/SIGTERM the watchdog ends a run still going after this
SECOND_SIGNAL_GRACE_S = 1.0  # ... and this long after a further signal
AFTER_RUN_QUIET_S = 5.0  # signals this soon after an interrupted run ended are dropped (double Ctrl-C)
EXIT_CODES_HELP = (
    "exit codes: 0 every case opkit could test passed (or failed as an expectations file says); cases "
    "opkit could not test (outcome 'untested': no valid input, a reference-kernel or property error) are "
    "listed apart and never count against the backend; 1 any other outcome, or no case ran (or none "
    "could be tested; the reason is printed per op); 2 usage errors, checked before the first "
    "case runs (bad options such as -j 0, a --report folder that is missing or read-only, a --repro-dir "
    "that cannot be written, an expectations file that does not load); 130 interrupted by Ctrl-C or "
    "SIGTERM: the report still holds every case that finished (settings.interrupted true, summary.ok "
    "false). Expectations entries that matched no case are warnings (stderr and summary.warnings).")
SUITE_CHOICES = ("examples", "properties", "differential", "robustness", "lowerings", "all")


class TestUsageError(Exception):
    pass


def add_test_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--backend", action="append", metavar="NAME", dest="backend",
                        help="backend to test (repeatable): onnxruntime, onnx-reference, reference, module:Class, "
                             "or a name from the opkit.backends entry-point group")
    parser.add_argument("--op", action="append", metavar="OP",
                        help="only this op (repeatable; 'Trilu' or 'com.microsoft::Trilu'; default: every op "
                             "with a reference kernel); 'Add-14' the version introduced in opset 14, 'Add@13' "
                             "the version a model of opset 13 uses, 'Add@7..13' those of opsets 7 to 13")
    parser.add_argument("--opset", action="append", metavar="N",
                        help="test what a model of this opset uses: of each op, the version in force at opset N "
                             "(ai.onnx; DOMAIN:N for another domain; ops that do not exist there are left out)")
    parser.add_argument("--suite", action="append", choices=SUITE_CHOICES, metavar="SUITE",
                        help="examples, properties, differential, robustness (hostile inputs: a crash or hang "
                             "is a finding, any answer else passes), lowerings or all (default: all; repeatable)")
    parser.add_argument("--max-examples", type=int, default=100, metavar="N",
                        help="hypothesis examples per (op version, type binding) (default 100)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="per-case time limit; the backend worker is killed and restarted (default 10)")
    parser.add_argument("--report", metavar="FILE.json", help="write the JSON report here")
    parser.add_argument("--repro-dir", metavar="DIR",
                        help="write a repro bundle per distinct failure here (default: .opkit/repro)")
    parser.add_argument("--no-repro", action="store_true", help="write no repro bundles")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="run N ops at a time, each in its own process with its own backend workers "
                             "(at least 1; default 1)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the ops on the Dask cluster whose scheduler is at ADDRESS (e.g. "
                             "tcp://10.0.0.5:8786; default: $DASK_SCHEDULER_ADDRESS, else here); needs "
                             "pip install 'opkit[dask]' here and opkit with the backend on every worker "
                             "(docs/scale-out.md)")
    parser.add_argument("--expectations", action="append", metavar="FILE",
                        help="expectations file (repeatable; default conformance/expectations/<backend>.yaml)")
    parser.add_argument("--no-expectations", action="store_true", help="ignore expectations files")
    parser.add_argument("--providers", metavar="LIST",
                        help="onnxruntime execution providers, comma separated (default CPUExecutionProvider)")
    parser.add_argument("--no-isolate", action="store_true",
                        help="run backends in this process (faster start, no crash/timeout protection)")
    parser.add_argument("--siblings", type=int, default=15, metavar="N",
                        help="extra derived cases per hypothesis example, run in one round trip (default 15)")
    parser.add_argument("--max-bindings", type=int, default=64, metavar="N",
                        help="type bindings per op version: all of them up to N, else a subset covering every "
                             "type of every parameter (default 64; 0: all)")
    parser.add_argument("--probe-limit", type=int, default=PROBE_LIMIT, metavar="N",
                        help="bindings past --max-bindings get a few examples each (a missing type "
                             f"registration shows at the first): all of them when an op version has at most N "
                             f"(default {PROBE_LIMIT}: every Cast pair), else a set covering every pair of types; "
                             "0: none")
    parser.add_argument("--shrink-budget", type=int, default=None, metavar="N",
                        help="draws hypothesis may spend shrinking each failure to a minimal repro (default 60; "
                             "lower it for engines that compile every model, e.g. 10)")
    parser.add_argument("--memory-limit", type=float, default=4.0, metavar="GB",
                        help="resident-memory limit per backend worker and the processes it starts (a killed "
                             "case says so), and address-space limit of the runner's own reference kernels, so "
                             "absurd drawn inputs cannot exhaust the machine (default 4; 0: none)")
    parser.add_argument("--second-opinion", action="append", metavar="NAME", dest="second_opinion",
                        help="also run each failure's minimal case on this engine and record whether it agrees "
                             "with opkit or with the runtime (repeatable; default: onnx-reference, onnx's "
                             "ReferenceEvaluator, unless it is the backend under test)")
    parser.add_argument("--no-second-opinion", action="store_true", help="ask no other engine about failures")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress, no table; failures only")
    if EXIT_CODES_HELP not in (parser.epilog or ""):
        parser.epilog = f"{parser.epilog}\n\n{EXIT_CODES_HELP}" if parser.epilog else EXIT_CODES_HELP
    return parser


# ------------------------------------------------------------------------------------------------


def _select_specs(ops: list[str] | None, opsets: dict[str, int] | None = None):
    """The specs to test for --op selectors (None: every op with a kernel), from every spec the
    project sees (its own, then opkit's built-in ones), the versions of each to run ({path: sinces}
    where not all; see ``selection``), and why ops named with --op were left out (no version of
    them in force at --opset)."""
    from ..spec import catalog
    from ..spec.load import load_spec_file
    from ..core.onnx_types import suggest
    from .selection import SelectionError, narrow_to_opsets, parse_selector, selected_versions

    index: dict[str, list[tuple[str, str]]] = {}
    for entry in catalog.entries():
        index.setdefault(entry.op, []).append((entry.domain, entry.path))
    loaded: dict[str, object] = {}

    def load(path):
        if path not in loaded:
            spec, diags = load_spec_file(path)
            if spec is None or diags:
                raise TestUsageError(f"{path} does not load ({len(diags)} problem(s)); run `opkit validate`")
            loaded[path] = spec
        return loaded[path]

    wanted: dict[str, set[int]] = {}  # path -> the versions selected
    try:
        selectors = [parse_selector(item) for item in ops or ()]
    except SelectionError as exc:
        raise TestUsageError(str(exc)) from None
    for selector in selectors:
        hits = [p for d, p in index.get(selector.name, []) if not selector.domain or d == selector.domain]
        if not hits:
            names = list(index) + [f"{d}::{n}" for n, v in index.items() for d, _ in v]
            raise TestUsageError(f"no spec for op {selector.text!r}" + (suggest(selector.text, names) or ""))
        problems = []
        for path in hits:  # without a domain, a version need only exist in one of the op's domains
            try:  # (the versions first: a domain without them must not be entered with none)
                versions = selected_versions(selector, load(path))
                wanted.setdefault(path, set()).update(versions)
            except SelectionError as exc:
                problems.append(str(exc))
        if len(problems) == len(hits):
            raise TestUsageError(problems[0])
    if not ops:
        try:
            from ..kernels.registry import available_kernels

            have = {(d, o) for d, o, _ in available_kernels()}
        except Exception:  # noqa: BLE001
            have = set()
        wanted = {p: {v.since for v in load(p).versions} for n, v in sorted(index.items()) for d, p in v
                  if (d, n) in have}
    specs, versions, left_out = [], {}, []
    for path in sorted(wanted):
        spec = load(path)
        chosen = sorted(wanted[path])
        chosen = narrow_to_opsets(spec, tuple(chosen), opsets or {})
        if not chosen:
            if ops:  # an op the user named: say why it does not run
                name = spec.name if spec.domain == "ai.onnx" else f"{spec.domain}::{spec.name}"
                left_out.append(f"{name}: left out, no selected version is in force at --opset "
                                f"{opsets.get(spec.domain)}")
            continue
        specs.append(spec)
        if len(chosen) < len(spec.versions):
            versions[path] = chosen
    if ops and opsets and not specs:
        raise TestUsageError(f"none of the ops given exists at --opset {', '.join(map(str, opsets.values()))}")
    return specs, versions, left_out


def _backend_specs(args):
    from ..backends.registry import BackendNotFound, resolve

    from ..core.project import active

    default = active().backend
    names = args.backend or ([default] if default else [])
    if not names:
        raise TestUsageError("give at least one --backend (e.g. --backend onnxruntime), or set `backend` in "
                             "[tool.opkit] of pyproject.toml")
    out = []
    for name in names:
        options = {}
        if args.providers and name in ("onnxruntime", "ort"):
            options["providers"] = [p.strip() for p in args.providers.split(",") if p.strip()]
        try:
            out.append(resolve(name, **options))
        except BackendNotFound as exc:
            raise TestUsageError(str(exc)) from None
    return out


def _second_opinion_specs(args, backend_specs) -> list:
    """The engines asked about each failure: those named with --second-opinion (each must be
    installed: a usage error otherwise), or by default onnx's ReferenceEvaluator when onnx is there.
    An engine is never asked about its own failures (``run_unit`` drops it)."""
    from ..backends.registry import BackendNotFound, BackendUnavailable, resolve

    if getattr(args, "no_second_opinion", False):
        return []
    named = getattr(args, "second_opinion", None)
    out = []
    for name in named or ["onnx-reference"]:
        try:
            spec = resolve(name)
            _check_available(spec)
        except (BackendNotFound, BackendUnavailable) as exc:
            if named:
                raise TestUsageError(f"--second-opinion {name}: {exc}") from None
            continue  # the default engine is optional
        out.append(spec)
    return out


def _check_available(spec) -> None:
    """Fail early (usage error) when a backend's package is missing."""
    import importlib

    from ..backends.registry import BackendUnavailable

    module = spec.target.split(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        need = spec.requires or exc.name
        raise BackendUnavailable(f"backend {spec.name!r} needs {need} (missing module {exc.name!r})") from None
    if spec.name.startswith("onnxruntime"):
        try:
            importlib.import_module("onnxruntime")
        except ModuleNotFoundError:
            raise BackendUnavailable(f"backend {spec.name!r} needs onnxruntime: pip install 'opkit[ort]'") from None


def _load_expectations(args, backend_name):
    """The merged expectations for a backend and the files they came from; any problem with a file
    is a usage error (one line naming the file and the entry)."""
    from ..results.outcomes import Expectations, ExpectationsError, default_expectation_files, load_expectations

    if args.no_expectations:
        return Expectations(), []
    paths = list(args.expectations or []) or default_expectation_files(backend_name)
    merged = Expectations()
    for path in paths:
        try:
            merged.entries += load_expectations(path).entries
        except ExpectationsError as exc:
            raise TestUsageError(f"expectations: {exc}") from None
    return merged, paths


def _suites(args) -> list[str]:
    chosen = args.suite or ["all"]
    if "all" in chosen:
        return ["examples", "properties", "differential", "robustness", "lowerings"]
    return list(dict.fromkeys(chosen))


# ------------------------------------------------------------------------------------------------
# checks made before the first case runs


def _probe_folder(folder: str) -> str | None:
    """Why files cannot be created in ``folder`` (an existing directory), or None: a file is really
    created and removed, which also catches read-only mounts and full disks (and root, for whom
    the permission bits say nothing)."""
    import secrets

    probe = os.path.join(folder, f".opkit-write-check-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        os.write(fd, b"{}\n")  # a full disk refuses the first block
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)
        try:
            os.unlink(probe)
        except OSError:
            pass
    return None


def _check_report_path(path: str) -> None:
    """--report must name a file in a folder this process can write in. A missing folder is made
    now, before the first case (the README's `--report reports/...` runs in a fresh clone), so a
    folder that cannot be made fails here instead of after the run."""
    if os.path.isdir(path):
        raise TestUsageError(f"--report {path}: is a folder; give a file name (e.g. {os.path.join(path, 'report.json')})")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise TestUsageError(f"--report {path}: cannot make the folder {folder}: {exc.strerror or exc}") from None
    why = _probe_folder(folder)
    if why:
        raise TestUsageError(f"--report {path}: cannot write in {folder}: {why}")


def _check_repro_dir(folder: str) -> str | None:
    """Why repro bundles cannot be written under ``folder`` (created on the first failure), or
    None: the folder, or its nearest existing parent, must be a writable directory."""
    probe = os.path.abspath(folder)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is not a folder"
    return _probe_folder(probe)


def _check_options(args) -> None:
    if args.max_examples < 1:
        raise TestUsageError("--max-examples must be at least 1")
    if args.timeout <= 0:
        raise TestUsageError("--timeout must be positive")
    if args.shrink_budget is not None and args.shrink_budget < 0:
        raise TestUsageError("--shrink-budget must be 0 or more")
    if args.jobs is None or args.jobs < 1:
        raise TestUsageError(f"-j/--jobs must be at least 1 (got {args.jobs})")
    if args.siblings < 0:
        raise TestUsageError("--siblings must be 0 or more")
    if args.max_bindings < 0:
        raise TestUsageError("--max-bindings must be 0 (all) or more")
    if args.probe_limit < 0:
        raise TestUsageError("--probe-limit must be 0 (no probes) or more")
    if args.memory_limit < 0:
        raise TestUsageError("--memory-limit must be 0 (none) or more")


# ------------------------------------------------------------------------------------------------
# running a unit (some ops on one backend), in this process or in a -j pool process


def run_unit(job: dict, worker=None, on_start=None, sink=None, engines: dict | None = None) -> tuple[list[dict], dict]:
    """Run every suite for some specs on one backend (in this process); returns (records, info).
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
    from ..conformance.runner import BackendRunner, Runner
    from ..conformance.second_opinion import SecondOpinions
    from ..conformance.worker import InProcess, Worker

    spec_b = job["backend"]
    memory = job.get("memory_gb")
    own = worker is None
    worker_class = InProcess if job["no_isolate"] else Worker
    if own:
        worker = worker_class(spec_b, timeout=job["timeout"], memory_gb=memory)
    opinions = SecondOpinions(job.get("second_opinions") or [],
                              lambda spec: worker_class(spec, timeout=job["timeout"], memory_gb=memory),
                              job["timeout"], workers=None if own else (_POOL_WORKERS if engines is None else engines))
    # --no-isolate runs the engine in this process, where an address-space limit breaks thread pools
    previous = set_memory_limit(None if job["no_isolate"] else memory)
    try:
        info = worker.describe()
        backend = BackendRunner(worker, info)
        repro = None
        if job["repro_dir"]:
            repro = ReproWriter(job["repro_dir"], spec_b, info, backend.ir_version)
        runner = Runner(backend, max_examples=job["max_examples"], seed=job["seed"], timeout=job["timeout"],
                        repro=repro, expectations=job["expectations"], progress=job.get("progress"),
                        backend_name=info.get("name", spec_b.name), siblings=job["siblings"],
                        max_bindings=job.get("max_bindings") or None, shrink_budget=job.get("shrink_budget"),
                        sink=sink, second_opinion=opinions or None,
                        probe_limit=job.get("probe_limit", PROBE_LIMIT))
        if on_start is not None:
            on_start(runner, info)
        for path in job["paths"]:
            spec, _ = load_spec_file(path)
            # a cluster task may hold some versions of an op (seeds are per version: same cases);
            # the op's lowerings then run in the task of its last version, where a local run has them
            versions = job.get("versions") or (job.get("selected_versions") or {}).get(path)
            runner.run_spec(spec, job["suites"], versions=versions)
            if "lowerings" in job["suites"] and job.get("lowerings", True):
                run_lowerings(runner, spec)
        return _unit_records(runner), info
    finally:
        if own:
            worker.close()
        opinions.close(own=own)  # a pool process keeps its engines for its next op
        restore_memory_limit(previous)


def _unit_records(runner) -> list[dict]:
    """A runner's records, then the bindings it did not run (marked, so that pool processes can
    return them too)."""
    return list(runner.results) + [dict(item, skipped=True) for item in list(runner.skipped)]


_POOL_WORKERS: dict = {}


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
    """The pool process's end of a partial-results file: one JSON line per record, appended with
    one write each, so a process killed at any moment leaves at most one truncated last line."""

    def __init__(self, path: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def write(self, item: dict) -> None:
        import json

        os.write(self.fd, (json.dumps(item, default=str) + "\n").encode("utf-8"))

    def on_start(self, runner, info) -> None:
        self.write({"_info": info})

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _pool_unit(job):
    """One op on one backend in a pool process; the backend worker is kept for the next op. Every
    record is also streamed to the parent's partial-results file (``job["stream"]``)."""
    import warnings

    from ..conformance.worker import InProcess, Worker

    warnings.simplefilter("ignore")
    job = dict(job)
    job["progress"] = None
    stream = _Stream(job.pop("stream")) if job.get("stream") else None
    spec_b = job["backend"]
    worker = _POOL_WORKERS.get(spec_b)
    if worker is None:
        worker = (InProcess if job["no_isolate"] else Worker)(spec_b, timeout=job["timeout"],
                                                              memory_gb=job.get("memory_gb"))
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
        self.done: dict[int, list[dict]] = {}
        self.files: dict[int, tuple] = {}  # op index -> (file object, path for the pool process, named)

    def open(self, i: int) -> str:
        from ..conformance.shared_file import shared_temp_file

        self.discard(i)
        self.files[i] = shared_temp_file("opkit-partial-", ".jsonl")
        return self.files[i][1]

    def finish(self, i: int, records: list[dict]) -> None:
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

    def records(self) -> list[dict]:
        """Every record so far in op order: finished tasks' results, then what unfinished tasks
        streamed (safe to call from another thread)."""
        done = dict(self.done)
        out = []
        for i in sorted(set(done) | set(self.files)):
            if i in done:
                out += done[i]
            else:
                out += [item for item in self._lines(i) if "_info" not in item]
        return out

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
        from ..conformance.worker import descendants, kill_pid

        for proc in list((getattr(self.pool, "_processes", None) or {}).values()):
            for child in descendants(proc.pid):
                kill_pid(child)
            kill_pid(proc.pid)
        self.pool.shutdown(wait=False, cancel_futures=True)
        return False


def _runner_error(path: str, backend: str, exc: BaseException) -> dict:
    from ..spec.load import load_spec_file

    spec, _ = load_spec_file(path)
    return {"backend": backend, "suite": "differential", "op": spec.name if spec else os.path.basename(path)[:-5],
            "domain": spec.domain if spec else "?", "version": spec.versions[-1].since if spec else 0, "types": {},
            "example": "runner", "outcome": "untested", "message": f"runner process failed: {type(exc).__name__}: {exc}",
            "examples_run": 0, "duration_s": 0.0, "repro": None, "details": {"stage": "runner"}}


# ------------------------------------------------------------------------------------------------
# interrupts


def _grace() -> float:
    try:
        return max(0.1, float(os.environ.get("OPKIT_INTERRUPT_GRACE", INTERRUPT_GRACE_S)))
    except ValueError:
        return INTERRUPT_GRACE_S


def _say(text: str) -> None:
    """Write a line to stderr from a signal handler or the watchdog thread (os.write: never a
    reentrant call into a sys.stderr the main thread is writing to)."""
    try:
        os.write(2, (text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


_QUIET_EXIT = []


def _quiet_exit_after_interrupt() -> None:
    """When the process exits after an interrupted run, ignore SIGINT: Python's finalization puts
    the default handler back, and the second Ctrl-C of a double Ctrl-C arriving then would kill
    the process (exit -SIGINT) instead of letting it exit 130 with its report written."""
    if _QUIET_EXIT:
        return
    import atexit
    import signal

    def ignore():
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except (ValueError, OSError):  # pragma: no cover
            pass

    atexit.register(ignore)
    _QUIET_EXIT.append(ignore)


def _swallowed_here(frame) -> bool:
    """Whether an exception raised in ``frame`` would be swallowed: Python ignores (only prints)
    exceptions from gc callbacks (hypothesis installs one that times collections; a Ctrl-C landing
    in it was lost) and from ``__del__``. There the stop flag alone ends the run, at the runner's
    next check."""
    import gc

    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    depth = 0
    while frame is not None and depth < 64:
        if frame.f_code in codes or frame.f_code.co_name == "__del__":
            return True
        frame, depth = frame.f_back, depth + 1
    return False


class _Interrupts:
    """SIGINT and SIGTERM for one run (main thread only; elsewhere nothing is installed).

    The first signal asks the runners to stop (``runner.request_stop``: they re-check between
    examples, backend calls and records) and raises KeyboardInterrupt, unless the run is already
    writing its report. Later signals never raise (they would cut the report short); they only
    shorten the watchdog. The watchdog, started by the first signal, ends the process if the run
    is still going ``grace`` seconds later (``SECOND_SIGNAL_GRACE_S`` after another signal): it
    writes the partial report unless the run already wrote one, kills the process's descendants
    and exits with 130. When the run returns the watchdog is disarmed (in-process callers go on),
    and after an interrupted run signals are dropped for ``AFTER_RUN_QUIET_S`` seconds.
    """

    def __init__(self, run, grace: float | None = None):
        self.run = run
        self.grace = _grace() if grace is None else grace
        self.count = 0
        self.signame: str | None = None
        self.deadline = 0.0
        self.cancelled = threading.Event()
        self.previous: dict = {}
        self.ended = 0.0

    def __enter__(self):
        import signal

        from ..conformance.runner import clear_stop

        clear_stop()
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    self.previous[signum] = signal.signal(signum, self._on_signal)
                except (ValueError, OSError):  # pragma: no cover
                    pass
        return self

    def __exit__(self, *exc):
        import signal

        from ..conformance.runner import clear_stop

        self.cancelled.set()  # the run is over (in-process callers go on: no os._exit from here)
        self.ended = time.monotonic()
        for signum, handler in self.previous.items():
            # after an interrupt, a further Ctrl-C right after the run (the second of a double
            # Ctrl-C) must not turn a clean exit 130 into a KeyboardInterrupt traceback
            signal.signal(signum, self._after if self.count else handler)
        if self.count and self.previous:
            _quiet_exit_after_interrupt()
        clear_stop()
        return False

    def _after(self, signum, frame):
        """Signals within AFTER_RUN_QUIET_S of the end of an interrupted run are dropped; later
        ones go to the handler the run replaced (reinstalled)."""
        import signal

        if time.monotonic() - self.ended < AFTER_RUN_QUIET_S:
            return
        previous = self.previous.get(signum, signal.SIG_DFL)
        signal.signal(signum, previous)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            os.kill(os.getpid(), signum)

    def _on_signal(self, signum, frame):
        import signal

        from ..conformance.runner import request_stop

        self.count += 1
        now = time.monotonic()
        if self.count == 1:
            self.signame = signal.Signals(signum).name
            request_stop()
            self.deadline = now + self.grace
            threading.Thread(target=self._watch, name="opkit-interrupt-watchdog", daemon=True).start()
            if not self.run.finishing and not _swallowed_here(frame):
                raise KeyboardInterrupt
            return
        self.deadline = min(self.deadline, now + SECOND_SIGNAL_GRACE_S)
        if self.count == 2:
            _say(f"opkit test: {signal.Signals(signum).name} again: the run ends with its report within "
                 f"{SECOND_SIGNAL_GRACE_S:g} s")

    def _watch(self):
        while not self.cancelled.wait(0.05):
            if time.monotonic() >= self.deadline:
                self.run.emergency_exit(self.signame or "a signal", self.grace)
                return


# ------------------------------------------------------------------------------------------------
# the run


class _Run:
    """One ``opkit test`` run: checks, execution, report. Everything finished so far stays
    reachable (``collect``) so that an interrupted run, or the watchdog, can report it."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.start = time.perf_counter()
        self.lock = threading.Lock()  # held while the report is written
        self.finishing = False  # set when the report is being built: signals no longer raise
        self.reported = False
        self.code: int | None = None
        self.sources: list = []  # callables returning records so far (skipped items marked)
        self.infos: dict[int, dict] = {}  # backend position -> describe() info
        self.streams: dict[int, _PoolStreams] = {}  # backend position -> its -j pool's streams
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
        from ..results.report import Progress

        args = self.args
        _check_options(args)
        if args.report:
            _check_report_path(args.report)
        project = active()
        conflicts = catalog.conflicts()
        if conflicts:
            raise TestUsageError(str(conflicts[0]))
        self.backend_specs = _backend_specs(args)
        for spec_b in self.backend_specs:
            try:
                _check_available(spec_b)
            except BackendUnavailable as exc:
                raise TestUsageError(str(exc)) from None
        from .selection import SelectionError, parse_opsets

        try:
            opsets = parse_opsets(getattr(args, "opset", None))
        except SelectionError as exc:
            raise TestUsageError(str(exc)) from None
        self.specs, self.versions, left_out = _select_specs(args.op, opsets)
        for text in left_out:
            self.warn(text)
        stale = stale_kernels(project, self.specs)
        if stale:
            raise TestUsageError(f"generated kernels are missing or older than their specs ({', '.join(stale)}): "
                                 "run `opkit gen` first")
        if not self.specs:
            raise TestUsageError("no ops to test (no spec has a reference kernel yet?)")
        self.expectations = [_load_expectations(args, spec_b.name) for spec_b in self.backend_specs]
        self.second_opinions = _second_opinion_specs(args, self.backend_specs)
        self.suites = _suites(args)
        self.repro_dir = None
        if not args.no_repro:
            self.repro_dir = args.repro_dir or os.path.join(project.root, ".opkit", "repro")
            why = _check_repro_dir(self.repro_dir)
            if why and args.repro_dir:
                raise TestUsageError(f"--repro-dir {args.repro_dir}: cannot write repro bundles there: {why} "
                                     "(or give --no-repro)")
            if why:  # the default folder: run without bundles rather than fail
                self.warn(f"repro bundles are off: cannot write in {self.repro_dir}: {why} "
                          "(give --repro-dir DIR, or --no-repro)")
                self.repro_dir = None
        self.progress = Progress(enabled=not args.quiet)
        self.cluster = _connect_cluster(args, self.backend_specs + self.second_opinions, [s.path for s in self.specs])
        self.prepared = True

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    # -- running
    def execute(self) -> None:
        from ..backends.registry import BackendUnavailable
        from ..conformance.worker import WorkerStartError

        args = self.args
        paths = [s.path for s in self.specs]
        for position, spec_b in enumerate(self.backend_specs):
            unit_suites = self.suites if position == 0 else [x for x in self.suites if x != "lowerings"]
            expectations, _ = self.expectations[position]
            job = {"backend": spec_b, "timeout": args.timeout, "max_examples": args.max_examples, "seed": args.seed,
                   "repro_dir": self.repro_dir, "expectations": expectations, "suites": unit_suites,
                   "siblings": args.siblings, "no_isolate": args.no_isolate, "progress": self.progress,
                   "memory_gb": args.memory_limit, "max_bindings": args.max_bindings,
                   "probe_limit": args.probe_limit,
                   "shrink_budget": args.shrink_budget, "selected_versions": self.versions,
                   "second_opinions": [so for so in self.second_opinions if so.name != spec_b.name]}
            try:
                if self.cluster is not None:
                    if position == 0:
                        self.sources.append(self.cluster.records)
                    self.cluster.execute(self, position, spec_b, job, self.specs)
                elif args.jobs > 1 and len(paths) > 1:
                    self._execute_pool(position, spec_b, job, paths)
                else:
                    def on_start(runner, info, position=position):
                        self.infos[position] = info
                        self.sources.append(lambda: _unit_records(runner))

                    run_unit({**job, "paths": paths}, on_start=on_start)
            except WorkerStartError as exc:
                raise TestUsageError(str(exc)) from None
            except BackendUnavailable as exc:
                raise TestUsageError(str(exc)) from None

    def _execute_pool(self, position: int, spec_b, job: dict, paths: list[str]) -> None:
        """Each op in a pool process (-j N). A pool process that dies (the OOM killer, a kernel
        segfault) breaks the whole pool and fails every pending op: a new pool runs those. An op
        that was running when the pool broke MAX_POOL_ATTEMPTS times is reported as a runner error
        (it, or its neighbour, kills its process). Records stream back as cases finish (see
        ``_PoolStreams``), so an interrupt keeps them."""
        import multiprocessing as mp
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        from ..conformance.runner import check_stop

        streams = self.streams[position] = _PoolStreams()
        self.sources.append(streams.records)
        workers = min(self.args.jobs, len(paths))
        pending, attempts = list(range(len(paths))), {}
        while pending:
            pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_pool_init,
                                       initargs=(os.getpid(),))
            broken = []
            with _terminating(pool):
                futures = {}
                for i in pending:  # one op per task: live progress, and results as they finish
                    stream = streams.open(i)
                    futures[pool.submit(_pool_unit, {**job, "paths": [paths[i]], "progress": None,
                                                     "stream": stream})] = i
                waiting = set(futures)
                while waiting:
                    check_stop()  # a KeyboardInterrupt swallowed in here still ends the run
                    finished, waiting = wait(waiting, timeout=0.5, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        i = futures[fut]
                        info = None
                        try:
                            recs, info = fut.result()
                        except BrokenProcessPool as exc:
                            attempts[i] = attempts.get(i, 0) + 1
                            if attempts[i] < MAX_POOL_ATTEMPTS:
                                broken.append(i)
                                continue
                            recs = [_runner_error(paths[i], spec_b.name, exc)]
                        except Exception as exc:  # noqa: BLE001 - the op's process failed
                            recs = [_runner_error(paths[i], spec_b.name, exc)]
                        for r in recs:
                            if not r.get("skipped"):
                                self.progress(r)
                        if info and position not in self.infos:
                            self.infos[position] = info
                        streams.finish(i, recs)
            pending = sorted(broken)

    # -- what the run produced so far
    def collect(self) -> tuple[list[dict], list[dict]]:
        items = []
        for source in list(self.sources):
            try:
                items += source()
            except Exception:  # noqa: BLE001 - a partial report beats none
                pass
        skipped = [{k: v for k, v in r.items() if k != "skipped"} for r in items if r.get("skipped")]
        records = [r for r in items if not r.get("skipped")]
        return records, skipped

    def _backend_infos(self) -> list[dict]:
        """describe() of every backend that started (a -j pool's from what it streamed)."""
        infos = []
        for position, spec_b in enumerate(getattr(self, "backend_specs", [])):
            info = self.infos.get(position)
            if info is None and position in self.streams:
                info = self.streams[position].info() or {"name": spec_b.name, "version": "unknown"}
            if info is None and self.cluster is not None:
                info = self.cluster.infos.get(position)
            if info is None:
                continue  # interrupted before this backend started
            infos.append({k: v for k, v in info.items() if k not in ("max_ir_version", "needs_output_shapes")}
                         | {"max_ir_version": info.get("max_ir_version")})
        return infos

    def build(self, interrupted: bool) -> tuple[dict, list[dict], list[dict], list[str]]:
        from ..results.report import build_report, environment

        records, skipped = self.collect()
        warnings = list(self.warnings)
        if not interrupted:
            warnings += self._unmatched(records, skipped)
            warnings += self._empty_ops(records, skipped)
        if self.cluster is not None:
            warnings += self.cluster.warnings()
        failed_repros = [r for r in records if r.get("repro_error")]
        if failed_repros:
            warnings.append(f"{len(failed_repros)} repro bundle(s) could not be written under {self.repro_dir}: "
                            f"{failed_repros[0]['repro_error']}")
        args = self.args
        target = environment(self._backend_infos(), args.seed)
        settings = {"suites": self.suites, "ops": args.op, "max_examples": args.max_examples,
                    "timeout_s": args.timeout, "expectations": [f for _, files in self.expectations for f in files]}
        if self.cluster is not None:
            settings["cluster"] = self.cluster.summary().as_dict()
        if interrupted:
            settings["interrupted"] = True  # the report holds the cases that finished before Ctrl-C/SIGTERM
            if self.signame:
                settings["interrupted_by"] = self.signame
        report = build_report(records, target, settings, time.perf_counter() - self.start, skipped,
                              warnings=warnings, require_cases=True)
        return report, records, skipped, warnings

    def _unmatched(self, records, skipped) -> list[str]:
        from ..spec import catalog
        from ..results.outcomes import unmatched_expectations

        known = {(e.domain, e.op) for e in catalog.entries()}
        ops = {(s.domain, s.name): s for s in self.specs}
        out = []
        for position, spec_b in enumerate(self.backend_specs):
            expectations, _ = self.expectations[position]
            if not expectations.entries:
                continue
            name = (self.infos.get(position) or {}).get("name", spec_b.name)
            mine = [r for r in records if r["backend"] == name]
            suites = self.suites if position == 0 else [x for x in self.suites if x != "lowerings"]
            out += [f"expectation {w}" for w in unmatched_expectations(expectations, mine, skipped, ops, suites, known)]
        return out

    def _empty_ops(self, records, skipped) -> list[str]:
        """Why ops had no case: for every op when none ran, else for the ops --op named."""
        ran = {(r["domain"], r["op"]) for r in records}
        if records and not self.args.op:
            return []
        out = []
        for spec in self.specs:
            if (spec.domain, spec.name) in ran:
                continue
            name = spec.name if spec.domain == "ai.onnx" else f"{spec.domain}::{spec.name}"
            out.append(f"{name}: no case ran ({_why_no_cases(spec, self.suites, skipped)})")
        return out

    def _exit_code(self, records, interrupted: bool) -> int:
        from ..results.outcomes import run_ok

        if interrupted:
            return EXIT_INTERRUPTED
        if self.cluster is not None and self.cluster.failed:  # ops that did not run: not a passing run
            return EXIT_FAIL
        return EXIT_OK if run_ok(r["outcome"] for r in records) else EXIT_FAIL

    def finish(self) -> int:
        """Write the report and the terminal summary; the exit code. Safe to call again (a
        KeyboardInterrupt that landed here before ``finishing`` was set)."""
        from ..results.outcomes import UNTESTED
        from ..results.causes import causes, causes_text
        from ..results.report import failures_text, skipped_text, summary_table, untested_text, write_report
        from ..conformance.runner import stop_requested

        self.finishing = True
        with self.lock:
            if self.reported:
                return self.code
            interrupted = stop_requested()
            report, records, skipped, warnings = self.build(interrupted)
            write_error = None
            if self.args.report:
                try:
                    write_report(report, self.args.report)
                except OSError as exc:  # a full disk, a folder gone read-only: the summary still prints
                    write_error = f"cannot write the report {self.args.report}: {exc.strerror or exc}"
            self.reported = True
            self.code = self._exit_code(records, interrupted)
            if write_error and self.code == EXIT_OK:
                self.code = EXIT_FAIL
        args = self.args
        self.progress.done()
        if not args.quiet:
            print(summary_table(records))
        found = causes(records)
        if found:
            failing = sum(c.cases for c in found)
            print(f"{failing} failing case{'s' if failing != 1 else ''} from {len(found)} cause"
                  f"{'s' if len(found) != 1 else ''} (one line each, with the smallest failing case):")
            print(causes_text(found))
        xpassed = failures_text([c for c in records if c["outcome"] == "xpass"])
        if xpassed:
            print(xpassed)
        untested = untested_text(records)
        if untested:
            print("\nopkit could not test these (not charged to the backend):\n" + untested)
        if skipped:  # what the backend cannot be asked (an opset newer than it, ...): apart from the cases
            print("\nnot run (not charged to the backend):\n" + skipped_text(skipped))
        review = report["summary"].get("second_opinion", {}).get("review")
        if review:
            print(f"\n{review} finding(s) marked REVIEW: a second opinion computes what the runtime did, or fails "
                  "too; check opkit's expectation before reporting them", file=sys.stderr)
        s = report["summary"]
        print(f"opkit test: {s['total']} cases ({s['examples_run']} examples) in {s['duration_s']:.1f} s: "
              + ", ".join(f"{n} {o}" for o, n in s["outcomes"].items())
              + (f"; {len(skipped)} skipped (not run, not charged to the backend: see above and the report)"
                 if skipped else "")
              + (f"; report: {args.report}" if args.report and not write_error else ""), file=sys.stderr)
        if self.cluster is not None and not args.quiet:
            print(f"opkit test: {self.cluster.workers_text()}", file=sys.stderr)
        if write_error:
            print(f"opkit test: error: {write_error}", file=sys.stderr)
        for w in warnings:
            print(f"opkit test: warning: {w}", file=sys.stderr)
        if interrupted:
            print(f"opkit test: interrupted ({self.signame or 'stop requested'}); the report holds the "
                  f"{s['total']} case(s) that finished", file=sys.stderr)
        elif not records:
            print("opkit test: no case ran, so nothing was tested (see the warnings above): exit 1",
                  file=sys.stderr)
        elif all(r["outcome"] == UNTESTED for r in records):
            print("opkit test: opkit could not test any case (outcome 'untested'; nothing is charged to the "
                  "backend): exit 1", file=sys.stderr)
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
                    if not self.reported and self.args.report:
                        from ..results.report import write_report

                        report = self.build(True)[0]
                        report["settings"]["interrupted_by"] = signame
                        report["summary"].setdefault("warnings", []).append(
                            f"the run did not stop within {grace:g} s of {signame}: this report was written "
                            "by the interrupt watchdog")
                        write_report(report, self.args.report)
                        self.reported = True
                finally:
                    self.lock.release()
        except BaseException as exc:  # noqa: BLE001 - exit regardless
            _say(f"opkit test: could not write the partial report: {type(exc).__name__}: {exc}")
        finally:
            from ..conformance.worker import descendants, kill_pid

            for pid in descendants(os.getpid()):
                kill_pid(pid)
            os._exit(EXIT_INTERRUPTED)

    def cleanup(self) -> None:
        for streams in self.streams.values():
            streams.close()
        if self.cluster is not None:
            self.cluster.close()


def _connect_cluster(args, backend_specs, spec_paths):
    """The Dask cluster of the run (--scheduler or $DASK_SCHEDULER_ADDRESS), connected and with
    every worker checked; None for a local run. Problems are usage errors."""
    from .cluster import Cluster, ClusterUsageError, scheduler_address

    try:
        found = scheduler_address(args)
        if found is None:
            return None
        address, source = found
        if args.jobs > 1:
            raise ClusterUsageError(f"-j {args.jobs} and {source} do not mix: the cluster's workers run the ops "
                                    "(start more of them instead)")
        cluster = Cluster(address, source, quiet=args.quiet)
        cluster.connect()
        try:
            cluster.check(backend_specs, spec_paths)
        except BaseException:
            cluster.close()
            raise
        return cluster
    except ClusterUsageError as exc:
        raise TestUsageError(str(exc)) from None


def _why_no_cases(spec, suites, skipped) -> str:
    """What the chosen suites need that an op lacks."""
    from ..conformance.harness import oracle

    live = [v for v in spec.versions if not v.deprecated]
    if not live:
        return "every version of the op is deprecated; runtimes need not run it"
    with_kernel = [v for v in live if oracle(spec.domain, spec.name, v.since) is not None]
    reasons = []
    if "examples" in suites and not any(v.examples for v in live):
        reasons.append("no examples")
    needs_kernel = [x for x in suites if x in ("properties", "differential", "robustness", "lowerings")]
    if needs_kernel and not with_kernel:
        reasons.append(f"no reference kernel ({', '.join(needs_kernel)} need one)")
    elif needs_kernel:
        if "properties" in suites and not any(v.properties for v in with_kernel):
            reasons.append("no properties")
        if "differential" in suites and all(v.draws for v in with_kernel):
            reasons.append("random outputs (no differential test)")
        if "lowerings" in suites and not any(v.lowerings for v in with_kernel):
            reasons.append("no lowerings")
    n = sum(1 for s in skipped if s.get("op") == spec.name and s.get("domain") == spec.domain)
    if n:
        reasons.append(f"{n} type binding(s) or version(s) skipped: see the report's 'skipped' list")
    return "; ".join(reasons) or f"nothing for the suites {', '.join(suites)}"


def run_test(args: argparse.Namespace) -> int:
    import warnings

    from ..conformance.runner import stop_requested

    run = _Run(args)
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
        return EXIT_USAGE
    except ImportError as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return EXIT_USAGE


def register(sub) -> None:
    """Add ``test`` (the spec-driven suites only) to a subparsers object; ``opkit test`` itself is
    registered by opkit.commands.test, which adds the onnx-node suite."""
    p = sub.add_parser("test", help="run backends against the specs (examples, properties, differential)",
                       description=__doc__.split("\n\n")[0])
    add_test_arguments(p)
    p.set_defaults(func=run_test)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="opkit test")
    parser.add_argument("--specs", metavar="DIR")
    add_test_arguments(parser)
    return run_test(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
