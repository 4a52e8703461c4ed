"""Conformance reports: the JSON document and its JSON Schema (the terminal side of a run is in
:mod:`opkit.results.report_text`).

The document layout is described in docs/conformance-report.md; ``REPORT_SCHEMA`` is its JSON
Schema (also written next to a report with ``--report`` as ``<report>.schema.json`` on request and
published at opkit/results/report.schema.json).

``write_report`` is atomic (a temporary file beside the report, fsynced, renamed over it: readers
and runs killed at any moment see the old report or the complete new one); ``read_report`` loads
one and turns every way it can be broken into a one-line ``ReportError`` naming the file (and the
line and column of broken JSON). ``summary.warnings`` (optional, a list of strings) holds what a run
wants a reader to know besides the outcomes; ``settings.interrupted`` (and ``interrupted_by``, the
signal) marks a run stopped by Ctrl-C or SIGTERM, whose ``summary.ok`` is then false.
``target.created`` (when the run started) and ``target.code`` (the fingerprint of the code that
decided the verdicts) let pages say when a report is older than the code rendering it; both are
optional, as reports made before them lack them.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import secrets
from collections import Counter

from .outcomes import NOT_CHARGED, OUTCOMES, SUCCESS, SUITES, UNCONVERTED, run_ok
from .attribute_coverage import COVERAGE_KEY, COVERAGE_SCHEMA
from .causes import causes
from .record import CaseRecord
from .verdicts import VERDICTS, needs_review

SCHEMA_ID = "https://opkit.dev/schemas/conformance-report-1.json"
FORMAT = "opkit-conformance-report/1"

CREATED_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"  # "2026-11-29T03:10:00Z"
CODE_PATTERN = r"^[0-9a-f]{12}$"
_TYPES = {"type": "object", "additionalProperties": {"type": "string", "pattern": r"^[a-z_]+\(.*\)$"}}
REPORT_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "opkit conformance report",
    "type": "object",
    "required": ["format", "target", "settings", "summary", "cases"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "target": {
            "type": "object",
            "required": ["backends", "opkit", "onnx", "numpy", "seed", "machine"],
            "properties": {
                "backends": {"type": "array", "items": {
                    "type": "object", "required": ["name", "version"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string"}}}},
                "opkit": {"type": "string"}, "onnx": {"type": "string"}, "numpy": {"type": "string"},
                "hypothesis": {"type": "string"}, "python": {"type": "string"},
                "seed": {"type": "integer"},
                # optional (reports made before they existed lack them): when the run started (UTC)
                # and the fingerprint of the code that decided its verdicts (opkit.core.code_fingerprint)
                "created": {"type": "string", "pattern": CREATED_PATTERN},
                "code": {"type": "string", "pattern": CODE_PATTERN},
                # the runtime adapters the code fingerprint covers (opkit.core.code_fingerprint.ADAPTERS)
                "code_scope": {"type": "array", "items": {"type": "string"}},
                "machine": {"type": "object", "required": ["platform", "cpu_count"],
                            "properties": {"platform": {"type": "string"}, "machine": {"type": "string"},
                                           "cpu_count": {"type": ["integer", "null"]}}},
            },
        },
        "settings": {"type": "object", "properties": {
            "suites": {"type": "array", "items": {"enum": list(SUITES)}},
            "ops": {"type": ["array", "null"], "items": {"type": "string"}},
            "max_examples": {"type": "integer"}, "timeout_s": {"type": "number"},
            "expectations": {"type": "array", "items": {"type": "string"}},
            # true when Ctrl-C or SIGTERM ended the run: the cases are those that finished
            "interrupted": {"type": "boolean"}, "interrupted_by": {"type": "string"},
            # the Dask cluster that ran the cases (--scheduler): lost workers' ops were rerun elsewhere
            "cluster": {"type": "object", "required": ["scheduler", "workers"], "properties": {
                "scheduler": {"type": "string"}, "workers": {"type": "integer"},
                "workers_lost": {"type": "integer"}, "tasks_rerun": {"type": "integer"}}}}},
        "summary": {"type": "object", "required": ["total", "outcomes", "ok", "duration_s"],
                    "properties": {"total": {"type": "integer"},
                                   "outcomes": {"type": "object", "propertyNames": {"enum": list(OUTCOMES)},
                                                "additionalProperties": {"type": "integer"}},
                                   "examples_run": {"type": "integer"},
                                   "ok": {"type": "boolean"}, "duration_s": {"type": "number"},
                                   "warnings": {"type": "array", "items": {"type": "string"}},
                                   "causes": {"type": "integer", "description": "distinct root causes of the "
                                              "failures (see 'causes')"},
                                   "converters": {
                                       "type": "object", "description": "cases outcome 'unconverted' per "
                                       "converter in front of the runtime and its version (\"onnx2torch "
                                       "1.5.15\"): the converter's failures, never charged to the runtime",
                                       "additionalProperties": {"type": "object", "required": ["cases"],
                                                                "properties": {"cases": {"type": "integer"}}}},
                                   "second_opinion": {
                                       "type": "object", "description": "findings per second-opinion "
                                       "verdict, and 'review': findings a second opinion makes doubtful",
                                       "additionalProperties": {"type": "integer"}}}},
        "cases": {"type": "array", "items": {
            "type": "object",
            "required": ["backend", "suite", "op", "domain", "version", "types", "example", "outcome", "message",
                         "repro"],
            "properties": {
                "backend": {"type": "string"},
                "suite": {"enum": list(SUITES)},
                "op": {"type": "string"}, "domain": {"type": "string"}, "version": {"type": "integer"},
                "types": _TYPES,
                "example": {"type": "string"},
                "outcome": {"enum": list(OUTCOMES)},
                "message": {"type": "string"},
                "examples_run": {"type": "integer"},
                "duration_s": {"type": "number"},
                "repro": {"type": ["string", "null"]},
                "repro_error": {"type": "string"},
                "minimal_example": {"type": "string"},
                "details": {"type": "object"},
                "rejected": {"type": "integer", "description": "drawn cases the final validity check "
                             "(ONNX inference and the reference kernel) discarded before this result"},
                "test": {"type": "string", "description": "the pytest node id (generated tests)"},
                "second_opinion": {
                    "type": "array", "description": "what other engines (onnx's ReferenceEvaluator, runtimes "
                    "named with --second-opinion) say about this failure's minimal case",
                    "items": {"type": "object", "required": ["backend", "verdict"],
                              "properties": {"backend": {"type": "string"}, "verdict": {"enum": list(VERDICTS)},
                                             "message": {"type": "string"}}}},
                "expected": {"type": "object", "required": ["reason"],
                             "properties": {"reason": {"type": "string"}, "source": {"type": "string"},
                                            "outcomes": {"type": "array"}, "actual": {"type": "string"}}},
            },
        }},
        "causes": {
            "description": "The failures grouped by root cause (opkit.results.causes): per backend and op, "
                           "cases sharing outcome, message class and input feature, with the op versions and "
                           "types they span and the smallest failing case. Absent when nothing failed.",
            "type": "array", "items": {
                "type": "object",
                "required": ["backend", "domain", "op", "outcome", "signature", "feature", "versions", "types",
                             "cases", "example", "review"],
                "properties": {"backend": {"type": "string"}, "domain": {"type": "string"}, "op": {"type": "string"},
                               "outcome": {"enum": list(OUTCOMES)}, "signature": {"type": "string"},
                               "feature": {"type": "string"}, "versions": {"type": "array"},
                               "types": {"type": "array"}, "cases": {"type": "integer"},
                               "example": {"type": "object"}, "review": {"type": "boolean"}}}},
        "skipped": {
            "description": "What was not run, with the reason: (op version, type binding) pairs that are not "
                           "inputs the op takes (ONNX's schema inference rejects the binding at every input "
                           "rank: BitCast between different bit widths, say), deprecated op versions "
                           "(Scatter-11), which runtimes need not run, and op versions the backend cannot be "
                           "asked to run: newer than the newest opset it can know (\"beyond this runtime's "
                           "opset (26)\") or in a domain it cannot run as configured (\"needs the DirectML "
                           "execution provider\"). None of them is charged to the backend. Absent when there "
                           "is nothing.",
            "type": "array", "items": {
                "type": "object", "required": ["op", "domain", "version", "types", "reason"],
                "properties": {"op": {"type": "string"}, "domain": {"type": "string"},
                               "version": {"type": "integer"}, "types": _TYPES, "suite": {"type": "string"},
                               "reason": {"type": "string"}}}},
        COVERAGE_KEY: COVERAGE_SCHEMA,
    },
}


def environment(backends: list[dict], seed: int) -> dict:
    import numpy
    import onnx

    from .. import __version__

    try:
        import hypothesis

        hyp = hypothesis.__version__
    except ImportError:  # pragma: no cover
        hyp = "missing"
    return {
        "backends": backends, "opkit": __version__, "onnx": onnx.__version__, "numpy": numpy.__version__,
        "hypothesis": hyp, "python": platform.python_version(), "seed": seed,
        "machine": {"platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count()},
    }


def project_path(path: str) -> str:
    """A file a report names, as committed: relative to the project root, ``<opkit>/...`` for
    opkit's own files, else its name only; never the folder the report was made in."""
    from ..core.project import active, builtin_root

    full = os.path.abspath(path)
    for base, prefix in ((active().root, ""), (builtin_root(), "<opkit>/")):
        rel = os.path.relpath(full, base)
        if rel != ".." and not rel.startswith(".." + os.sep):
            return prefix + rel.replace(os.sep, "/")
    return os.path.basename(full)


def build_report(cases: list[CaseRecord], target: dict, settings: dict, duration: float,
                 skipped: list[dict] | None = None, *, warnings: list[str] | None = None,
                 require_cases: bool = False, coverage: list[dict] | None = None) -> dict:
    """The report document. ``summary.ok`` is true only when every case succeeded (pass, xfail),
    the run was not interrupted (``settings["interrupted"]``) and, with ``require_cases``, at least
    one case ran. ``warnings`` (expectations that matched nothing, ops with nothing to run, repro
    bundles that could not be written) go to ``summary.warnings``. ``coverage``: the attribute-pair
    coverage entries (``attribute_coverage``), the report's ``attribute_coverage``."""
    if settings.get("expectations"):
        settings = {**settings, "expectations": [project_path(p) for p in settings["expectations"]]}
    counts = Counter(c.outcome for c in cases)
    # untested cases are opkit's and unconverted ones the converter's, not the backend's: they
    # neither fail nor pass a run
    ok = (all(c.outcome in SUCCESS for c in cases if c.outcome not in NOT_CHARGED) and not settings.get("interrupted"))
    if require_cases and not run_ok(c.outcome for c in cases):
        ok = False
    target = provenance(target, duration)
    report = {
        "format": FORMAT,
        "target": target,
        "settings": settings,
        "summary": {"total": len(cases), "outcomes": {o: counts[o] for o in OUTCOMES if counts[o]},
                    "examples_run": sum(c.examples_run for c in cases),
                    "ok": ok, "duration_s": round(duration, 3)},
        "cases": [c.to_json() for c in cases],
    }
    opinions = opinion_counts(cases)
    if opinions:
        report["summary"]["second_opinion"] = opinions
    converters = converter_counts(cases)
    if converters:
        report["summary"]["converters"] = converters
    found = causes(cases)
    if found:
        report["summary"]["causes"] = len(found)
        report["causes"] = [c.to_json() for c in found]
    if warnings:
        report["summary"]["warnings"] = list(warnings)
    if skipped:
        report["skipped"] = skipped
    if coverage:
        report[COVERAGE_KEY] = list(coverage)
    return machine_free(report)


def machine_free(value, root: str | None = None):
    """``value`` (a report or part of one) without the paths of the machine it was made on, so a
    report can be committed as written: a ``repro`` folder inside the project is relative to its
    root (a cluster's workers write absolute ones; one outside, which the user chose, stays as it
    is), and every other string goes through ``portable_text`` (engine messages carry their build
    folders and temporary files)."""
    from ..core.jsonfiles import portable_text
    from ..core.project import active

    root = root if root is not None else active().root
    if isinstance(value, dict):
        return {k: (_inside(v, root) if k == "repro" and isinstance(v, str) else machine_free(v, root))
                for k, v in value.items()}
    if isinstance(value, list):
        return [machine_free(v, root) for v in value]
    return portable_text(value) if isinstance(value, str) else value


def _inside(path: str, root: str) -> str:
    """``path`` relative to ``root`` when it lies inside it, else unchanged."""
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path, root)
    return path if rel == ".." or rel.startswith(".." + os.sep) else rel.replace(os.sep, "/")


def provenance(target: dict, duration: float) -> dict:
    """``target`` with ``code`` (the fingerprint of the code deciding the verdicts) and, for a timed
    run, ``created``: when it started (now less its ``duration``), UTC to the second. Values the
    caller set are kept. A report with no duration gets no date: onnx's node suite writes 0.0 so that
    its committed results are the same bytes run after run."""
    import datetime

    from ..core.code_fingerprint import code_fingerprint

    out = {**target}
    scope = out.get("code_scope")
    out.setdefault("code", code_fingerprint(tuple(sorted(scope)) if isinstance(scope, list) else None))
    if duration > 0 and "created" not in out:
        now = datetime.datetime.now(datetime.timezone.utc)
        started = now - datetime.timedelta(seconds=duration)
        out["created"] = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


TEMP_SUFFIX = ".tmp"  # a report being written is ``.<name>.<pid>.<random>.tmp`` beside it


def temp_report_name(path: str) -> str:
    """The temporary file a report is written to before it is renamed over ``path``."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


def is_temp_report(name: str, report_name: str) -> bool:
    """Whether the file ``name`` (in the report's folder) is a temporary file of ``report_name``."""
    return name.startswith(f".{report_name}.") and name.endswith(TEMP_SUFFIX)


def write_report(report: dict, path: str) -> None:
    """Write ``report`` to ``path`` atomically: serialize it, write a temporary file beside
    ``path``, fsync it and rename it over ``path``. A reader (or a run killed at any moment,
    kill -9 included) sees the previous file or the complete new one, never a truncated one; the
    temporary file is removed when anything fails. On Linux the file is written unnamed
    (O_TMPFILE) and only gets its temporary name just before the rename, so even kill -9 leaves a
    named temporary file only in that instant; such leftovers of dead processes are removed by the
    next write. SIGINT and SIGTERM are deferred while the file is written (their handlers run
    afterwards), so a second Ctrl-C cannot cut it short."""
    data = (json.dumps(report, indent=1, sort_keys=False) + "\n").encode("utf-8")  # fails before any file
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with _signals_deferred():
        _remove_stale_temps(path)
        if not _write_unnamed(data, path, folder):
            tmp = temp_report_name(path)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, path)
            except BaseException:
                _unlink(tmp)
                raise
        _fsync_folder(folder)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_unnamed(data: bytes, path: str, folder: str) -> bool:
    """Write through an unnamed O_TMPFILE file, linked to a temporary name and renamed over
    ``path``; False (nothing written) where the system or file system has no O_TMPFILE."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        fd = os.open(folder, flag | os.O_WRONLY, 0o666)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return False  # not supported here: write a named temporary file instead
        raise
    tmp = None
    try:
        _write_all(fd, data)
        os.fsync(fd)
        tmp = temp_report_name(path)
        try:
            os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                raise
            return False  # /proc magic links not usable: a named temporary file instead
        os.replace(tmp, path)
        tmp = None
        return True
    except BaseException:
        if tmp is not None:
            _unlink(tmp)
        raise
    finally:
        os.close(fd)


def _remove_stale_temps(path: str) -> None:
    """Remove temporary files of ``path`` left by processes that no longer run (kill -9 at the
    instant between naming a temporary file and renaming it)."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not is_temp_report(entry, name):
            continue
        try:
            pid = int(entry[len(name) + 2:].split(".")[0])
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _unlink(os.path.join(folder, entry))
        except OSError:
            pass


def _fsync_folder(folder: str) -> None:
    """Make the rename durable (a power loss after it keeps the new report); best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _signals_deferred:
    """SIGINT and SIGTERM only noted while the block runs (main thread only); on exit the previous
    handlers are restored and called for what arrived (a default SIGTERM is re-sent)."""

    SIGNALS = ("SIGINT", "SIGTERM")

    def __enter__(self):
        import signal
        import threading

        self.previous, self.arrived = {}, []
        if threading.current_thread() is not threading.main_thread():
            return self
        for name in self.SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            try:
                self.previous[signum] = signal.signal(signum, lambda n, frame: self.arrived.append(n))
            except (ValueError, OSError):  # pragma: no cover
                pass
        return self

    def __exit__(self, *exc):
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        for signum in self.arrived:
            handler = self.previous.get(signum)
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)
        return False


class ReportError(ValueError):
    """A report file that cannot be read: the message is one line naming the file."""


def read_report(path: str) -> dict:
    """Load a report written by ``write_report``; raise ``ReportError`` (one line: the file, and
    the position in it for broken JSON) when it cannot be read or is not a conformance report."""
    from ..core.jsonfiles import JSONFileError, read_json

    try:
        data = read_json(path)  # one reader of committed JSON: PATH:LINE:COL: not valid JSON (...)
    except JSONFileError as exc:
        raise ReportError(str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ReportError(f"{path}: not an opkit conformance report (no 'cases' list)")
    from .record import RecordError, records

    try:
        records(data["cases"], path)
    except RecordError as exc:
        raise ReportError(str(exc)) from None
    return data


def validate_report(report: dict) -> list[str]:
    """Problems with ``report`` against REPORT_SCHEMA (uses jsonschema when installed, else a
    structural check of the required keys)."""
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(REPORT_SCHEMA)
        return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(report)]
    problems = []
    _check(report, REPORT_SCHEMA, "", problems)
    return problems


def _check(value, schema, where, problems):
    t = schema.get("type")
    kinds = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
             "boolean": bool, "null": type(None)}
    if t is not None:
        allowed = t if isinstance(t, list) else [t]
        if not any(isinstance(value, kinds[k]) and not (k in ("integer", "number") and isinstance(value, bool))
                   for k in allowed):
            problems.append(f"{where or '/'}: expected {t}, got {type(value).__name__}")
            return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where}: expected {schema['const']!r}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        problems.append(f"{where}: {value!r} does not match {schema['pattern']!r}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(f"{where}/{key}: missing")
        props = schema.get("properties", {})
        for key, sub in value.items():
            if key in props:
                _check(sub, props[key], f"{where}/{key}", problems)
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}/{key}: unexpected key")
            elif isinstance(schema.get("additionalProperties"), dict):
                _check(sub, schema["additionalProperties"], f"{where}/{key}", problems)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{where}/{i}", problems)


def opinion_counts(cases: list[CaseRecord]) -> dict[str, int]:
    """How the second opinions went over a run's findings: verdict -> findings (a finding counts
    under each distinct verdict its engines gave), plus ``review``: findings to look at first."""
    counts: Counter = Counter()
    for c in cases:
        opinions = c.second_opinion
        if not opinions:
            continue
        for verdict in {o["verdict"] for o in opinions}:
            counts[verdict] += 1
        counts["review"] += needs_review(opinions)
    return {k: counts[k] for k in (*VERDICTS, "review") if counts[k]}


def converter_counts(cases: list[CaseRecord]) -> dict[str, dict]:
    """The unconverted cases per converter and version ("onnx2torch 1.5.15": {"cases": N}), from
    each case's ``details.converter``; the converter's failures, kept apart from the runtime's."""
    counts: Counter = Counter()
    for c in cases:
        if c.outcome == UNCONVERTED:
            counts[str((c.details or {}).get("converter") or "unknown converter")] += 1
    return {name: {"cases": counts[name]} for name in sorted(counts)}
