"""``opkit test``: run backends against the specs and report.

    opkit test --backend NAME [--backend NAME2 ...] [--op OP] [--suite examples|properties|differential|all]
               [--max-examples N] [--seed S] [--timeout SECONDS] [--report FILE.json] [--repro-dir DIR] [-j N]

Exit 0 when every case passes or fails as an expectations file says (xfail), 1 on any other
outcome (mismatch, unsupported, error, crash, timeout, xpass), 2 on usage errors, 130 when
interrupted (Ctrl-C or SIGTERM: the report holds the cases that finished).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
MAX_POOL_ATTEMPTS = 3  # pool breakdowns an op may be caught in before it is reported as a runner error
EXIT_INTERRUPTED = 130  # like a shell's Ctrl-C; the report (partial) is still written
SUITE_CHOICES = ("examples", "properties", "differential", "lowerings", "all")


class TestUsageError(Exception):
    pass


def add_test_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--backend", action="append", metavar="NAME", dest="backend",
                        help="backend to test (repeatable): onnxruntime, onnx-reference, reference, module:Class, "
                             "or a name from the opkit.backends entry-point group")
    parser.add_argument("--op", action="append", metavar="OP",
                        help="only this op (repeatable; 'Trilu' or 'com.microsoft::Trilu'; default: every op "
                             "with a reference kernel)")
    parser.add_argument("--suite", action="append", choices=SUITE_CHOICES, metavar="SUITE",
                        help="examples, properties, differential, lowerings or all (default: all; repeatable)")
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
                        help="run N ops at a time, each in its own process with its own backend workers")
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
    parser.add_argument("--shrink-budget", type=int, default=None, metavar="N",
                        help="draws hypothesis may spend shrinking each failure to a minimal repro (default 60; "
                             "lower it for engines that compile every model, e.g. 10)")
    parser.add_argument("--memory-limit", type=float, default=4.0, metavar="GB",
                        help="address-space limit per process (runner and backend workers), so absurd drawn "
                             "inputs fail with MemoryError instead of exhausting the machine (default 4; 0: none)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress, no table; failures only")
    return parser


# ------------------------------------------------------------------------------------------------


def _select_specs(ops: list[str] | None):
    """The specs to test for --op values (None: every op with a kernel), from every spec the
    project sees (its own, then opkit's built-in ones)."""
    from .. import catalog
    from ..spec.load import load_spec_file
    from ..spec.types import suggest

    index: dict[str, list[tuple[str, str]]] = {}
    for entry in catalog.entries():
        index.setdefault(entry.op, []).append((entry.domain, entry.path))
    wanted: list[tuple[str, str]] = []
    if ops:
        for item in ops:
            domain, _, name = item.rpartition("::")
            hits = [(d, p) for d, p in index.get(name, []) if not domain or d == domain]
            if not hits:
                names = list(index) + [f"{d}::{n}" for n, v in index.items() for d, _ in v]
                raise TestUsageError(f"no spec for op {item!r}" + (suggest(item, names) or ""))
            wanted += hits
    else:
        try:
            from ..kernels.registry import available_kernels

            have = {(d, o) for d, o, _ in available_kernels()}
        except Exception:  # noqa: BLE001
            have = set()
        wanted = [(d, p) for n, v in sorted(index.items()) for d, p in v if (d, n) in have]
    specs = []
    for _, path in sorted(set(wanted)):
        spec, diags = load_spec_file(path)
        if spec is None or diags:
            raise TestUsageError(f"{path} does not load ({len(diags)} problem(s)); run `opkit validate`")
        specs.append(spec)
    return specs


def _backend_specs(args):
    from ..backends.registry import BackendNotFound, resolve

    from ..project import active

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


def _expectations(args, backend_name):
    from .outcomes import Expectations, default_expectation_files, load_expectations

    if args.no_expectations:
        return Expectations(), []
    paths = list(args.expectations or []) or default_expectation_files(backend_name)
    merged = Expectations()
    for path in paths:
        merged.entries += load_expectations(path).entries
    return merged, paths


def _suites(args) -> list[str]:
    chosen = args.suite or ["all"]
    if "all" in chosen:
        return ["examples", "properties", "differential", "lowerings"]
    return list(dict.fromkeys(chosen))


def run_unit(job: dict, worker=None) -> tuple[list[dict], dict]:
    """Run every suite for some specs on one backend (in this process); returns (records, info).
    A ``worker`` given is reused and left running; otherwise one is started and closed."""
    from ..spec.load import load_spec_file
    from .lowerings import run_lowerings
    from .repro import ReproWriter
    from .runner import BackendRunner, Runner
    from .worker import InProcess, Worker

    from .limits import restore_memory_limit, set_memory_limit

    spec_b = job["backend"]
    memory = job.get("memory_gb")
    own = worker is None
    if own:
        worker = (InProcess if job["no_isolate"] else Worker)(spec_b, timeout=job["timeout"], memory_gb=memory)
    previous = set_memory_limit(memory)
    try:
        info = worker.describe()
        backend = BackendRunner(worker, info)
        repro = None
        if job["repro_dir"]:
            repro = ReproWriter(job["repro_dir"], spec_b, info, backend.ir_version)
        runner = Runner(backend, max_examples=job["max_examples"], seed=job["seed"], timeout=job["timeout"],
                        repro=repro, expectations=job["expectations"], progress=job.get("progress"),
                        backend_name=info.get("name", spec_b.name), siblings=job["siblings"],
                        max_bindings=job.get("max_bindings") or None, shrink_budget=job.get("shrink_budget"))
        try:
            for path in job["paths"]:
                spec, _ = load_spec_file(path)
                runner.run_spec(spec, job["suites"])
                if "lowerings" in job["suites"]:
                    run_lowerings(runner, spec)
        except KeyboardInterrupt:
            if not own:  # a pool process: the parent reports what finished
                raise
            info = dict(info, interrupted=True)  # keep the cases that finished
        # bindings not run travel with the records (marked) so pool processes can return them too
        return runner.results + [dict(item, skipped=True) for item in runner.skipped], info
    finally:
        if own:
            worker.close()
        restore_memory_limit(previous)


_POOL_WORKERS: dict = {}


def _pool_unit(job):
    """One op on one backend in a pool process; the backend worker is kept for the next op."""
    import warnings

    from .worker import InProcess, Worker

    warnings.simplefilter("ignore")
    job = dict(job)
    job["progress"] = None
    spec_b = job["backend"]
    worker = _POOL_WORKERS.get(spec_b)
    if worker is None:
        worker = (InProcess if job["no_isolate"] else Worker)(spec_b, timeout=job["timeout"],
                                                              memory_gb=job.get("memory_gb"))
        _POOL_WORKERS[spec_b] = worker
    return run_unit(job, worker)


class _sigterm_interrupts:
    """SIGTERM raises KeyboardInterrupt, like Ctrl-C, so a killed run still writes its report."""

    previous = None

    def __enter__(self):
        import signal

        def on_term(signum, frame):
            raise KeyboardInterrupt

        try:
            self.previous = signal.signal(signal.SIGTERM, on_term)
        except ValueError:  # not the main thread
            self.previous = None
        return self

    def __exit__(self, *exc):
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False


class _terminating(_sigterm_interrupts):
    """Shut a process pool down; on Ctrl-C / SIGTERM kill its processes (and so their backend
    workers) instead of leaving orphans."""

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        super().__enter__()
        return self.pool

    def __exit__(self, kind, exc, tb):
        super().__exit__(kind, exc, tb)
        if kind is None:
            self.pool.shutdown(wait=True)
            return False
        for proc in list(getattr(self.pool, "_processes", {}).values()):
            for child in _children(proc.pid):
                _kill(child)
            proc.kill()
        self.pool.shutdown(wait=False, cancel_futures=True)
        return False


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _runner_error(path: str, backend: str, exc: BaseException) -> dict:
    from ..spec.load import load_spec_file

    spec, _ = load_spec_file(path)
    return {"backend": backend, "suite": "differential", "op": spec.name if spec else os.path.basename(path)[:-5],
            "domain": spec.domain if spec else "?", "version": spec.versions[-1].since if spec else 0, "types": {},
            "example": "runner", "outcome": "error", "message": f"runner process failed: {type(exc).__name__}: {exc}",
            "examples_run": 0, "duration_s": 0.0, "repro": None, "details": {"stage": "runner"}}


def run_test(args: argparse.Namespace) -> int:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # kernels' numeric warnings (overflow, NaN)
            try:
                from hypothesis.errors import HypothesisWarning, NonInteractiveExampleWarning

                warnings.simplefilter("ignore", HypothesisWarning)
                warnings.simplefilter("ignore", NonInteractiveExampleWarning)
            except ImportError:  # pragma: no cover
                pass
            with _sigterm_interrupts():
                return _run_test(args)
    except TestUsageError as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run_test(args: argparse.Namespace) -> int:
    from .. import catalog
    from ..backends.registry import BackendUnavailable
    from .outcomes import SUCCESS, ExpectationsError
    from .report import Progress, build_report, environment, failures_text, summary_table, write_report
    from .worker import WorkerStartError

    if args.max_examples < 1:
        raise TestUsageError("--max-examples must be at least 1")
    if args.timeout <= 0:
        raise TestUsageError("--timeout must be positive")
    if args.shrink_budget is not None and args.shrink_budget < 0:
        raise TestUsageError("--shrink-budget must be 0 or more")
    from ..project import active

    project = active()
    conflicts = catalog.conflicts()
    if conflicts:
        raise TestUsageError(str(conflicts[0]))
    backend_specs = _backend_specs(args)
    for spec_b in backend_specs:
        try:
            _check_available(spec_b)
        except BackendUnavailable as exc:
            raise TestUsageError(str(exc)) from None
    specs = _select_specs(args.op)
    from ..generate import stale_kernels

    stale = stale_kernels(project, specs)
    if stale:
        raise TestUsageError(f"generated kernels are missing or older than their specs ({', '.join(stale)}): "
                             "run `opkit gen` first")
    if not specs:
        raise TestUsageError("no ops to test (no spec has a reference kernel yet?)")
    suites = _suites(args)
    repro_dir = None if args.no_repro else (args.repro_dir or os.path.join(project.root, ".opkit", "repro"))
    progress = Progress(enabled=not args.quiet)
    start = time.perf_counter()
    records, infos, expectation_files = [], [], []
    interrupted = False
    for position, spec_b in enumerate(backend_specs):
        unit_suites = suites if position == 0 else [x for x in suites if x != "lowerings"]
        try:
            expectations, files = _expectations(args, spec_b.name)
        except (ExpectationsError, OSError) as exc:
            raise TestUsageError(str(exc)) from None
        expectation_files += files
        job = {"backend": spec_b, "timeout": args.timeout, "max_examples": args.max_examples, "seed": args.seed,
               "repro_dir": repro_dir, "expectations": expectations, "suites": unit_suites, "siblings": args.siblings,
               "no_isolate": args.no_isolate, "progress": progress, "memory_gb": args.memory_limit,
               "max_bindings": args.max_bindings, "shrink_budget": args.shrink_budget}
        paths = [s.path for s in specs]
        try:
            if args.jobs > 1 and len(paths) > 1:
                from concurrent.futures import ProcessPoolExecutor
                import multiprocessing as mp

                from concurrent.futures import as_completed

                from concurrent.futures.process import BrokenProcessPool

                workers = min(args.jobs, len(paths))
                done: dict[int, list] = {}
                info = None
                pending, attempts = list(range(len(paths))), {}
                try:
                    # A pool process that dies (the OOM killer, a kernel segfault) breaks the whole
                    # pool and fails every pending op: start a new pool for those. An op that was
                    # running when the pool broke MAX_POOL_ATTEMPTS times is reported as a runner
                    # error (it, or its neighbour, kills its process).
                    while pending:
                        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))
                        broken = []
                        with _terminating(pool):
                            futures = {pool.submit(_pool_unit, {**job, "paths": [paths[i]], "progress": None}): i
                                       for i in pending}  # one op per task: live progress
                            for fut in as_completed(futures):
                                i = futures[fut]
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
                                        progress(r)
                                done[i] = recs
                        pending = sorted(broken)
                except KeyboardInterrupt:  # Ctrl-C / SIGTERM: keep what finished, report it
                    interrupted = True
                for i in sorted(done):  # report order does not depend on scheduling
                    records += done[i]
                infos.append(info or {"name": spec_b.name, "version": "unknown"})
            else:
                recs, info = run_unit({**job, "paths": paths})
                records += recs
                infos.append(info)
                interrupted = interrupted or bool(info.get("interrupted"))
            if interrupted:
                break
        except WorkerStartError as exc:
            raise TestUsageError(str(exc)) from None
        except BackendUnavailable as exc:
            raise TestUsageError(str(exc)) from None
    progress.done()
    skipped = [{k: v for k, v in r.items() if k != "skipped"} for r in records if r.get("skipped")]
    records = [r for r in records if not r.get("skipped")]
    duration = time.perf_counter() - start
    target = environment([{k: v for k, v in i.items() if k != "max_ir_version"} | {"max_ir_version": i.get("max_ir_version")}
                          for i in infos], args.seed)
    settings = {"suites": suites, "ops": args.op, "max_examples": args.max_examples, "timeout_s": args.timeout,
                "expectations": expectation_files}
    if interrupted:
        settings["interrupted"] = True  # the report holds the cases that finished before Ctrl-C/SIGTERM
    report = build_report(records, target, settings, duration, skipped)
    if args.report:
        write_report(report, args.report)
    if not args.quiet:
        print(summary_table(records))
    failing = failures_text(records)
    if failing:
        print(failing)
    s = report["summary"]
    print(f"opkit test: {s['total']} cases ({s['examples_run']} examples) in {duration:.1f} s: "
          + ", ".join(f"{n} {o}" for o, n in s["outcomes"].items())
          + (f"; {len(skipped)} skipped (invalid type bindings, deprecated versions: see the report)"
             if skipped else "")
          + (f"; report: {args.report}" if args.report else ""), file=sys.stderr)
    if interrupted:
        print("opkit test: interrupted; the report holds the cases that finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    bad = [r for r in records if r["outcome"] not in SUCCESS]
    return EXIT_OK if not bad else EXIT_FAIL


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
