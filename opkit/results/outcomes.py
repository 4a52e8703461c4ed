"""Outcome vocabulary and expectations files.

Outcomes: pass, mismatch (values, shape or dtype), unsupported (the backend does not implement the op
or the type: no kernel is registered for them), refused (the backend implements the op and type but
raised on an input every rule of the spec allows: an attribute value, a shape or a type combination it
does not support), error, crash (the backend process died), timeout, xfail / xpass (an expectations entry said the
case fails: it did / it did not), unconverted: the converter or compiler in front of the runtime
(onnx2torch, jaxonnxruntime, IREE's ONNX importer or iree-compile) could not translate the model, so
the runtime never saw it (the record's ``details.converter`` names the converter and its version),
and untested: opkit could not test the case (no valid input could be drawn, the reference kernel or
a property failed, a model opkit could not build). Only pass and xfail count as success; unconverted
is the converter's and untested is opkit's, never the backend's, so neither is a success nor a
failure of the backend (``CHARGED`` lists the outcomes that are).

Expectations (``conformance/expectations/<backend>.yaml``)::

    backend: onnxruntime
    expectations:
      - op: Trilu                 # required
        domain: ai.onnx           # default ai.onnx
        version: 14               # optional: any version
        types: {T: [tensor(bfloat16), tensor(string)]}   # optional: a type string or a list
        suite: differential       # optional: a suite or a list (default any)
        example: ...              # optional: an example/property name or a list (default any)
        outcome: unsupported      # optional: a failing outcome or a list of them; default any failure
                                  # (a known refusal of valid input: outcome: refused)
        reason: "CPU kernel registered for 6 types only"   # required
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # record.py imports this module
    from .record import CaseRecord

PASS, MISMATCH, UNSUPPORTED, REFUSED, ERROR, CRASH, TIMEOUT, XFAIL, XPASS, UNCONVERTED, UNTESTED = (
    "pass", "mismatch", "unsupported", "refused", "error", "crash", "timeout", "xfail", "xpass", "unconverted",
    "untested")
OUTCOMES = (PASS, MISMATCH, UNSUPPORTED, REFUSED, ERROR, CRASH, TIMEOUT, XFAIL, XPASS, UNCONVERTED, UNTESTED)
# worst first: the outcome a table cell holding several cases shows (opkit compare, the scoreboard);
# the outcomes that are not the runtime's come last, so a cell shows them only when nothing else ran
SEVERITY = (CRASH, TIMEOUT, ERROR, MISMATCH, REFUSED, XPASS, UNSUPPORTED, XFAIL, PASS, UNCONVERTED, UNTESTED)
FAILING = (MISMATCH, UNSUPPORTED, REFUSED, ERROR, CRASH, TIMEOUT)
SUCCESS = (PASS, XFAIL)
# outcomes that say nothing about the backend: the converter's (unconverted) and opkit's (untested)
NOT_CHARGED = (UNCONVERTED, UNTESTED)
# outcomes that say something about the backend
CHARGED = tuple(o for o in OUTCOMES if o not in NOT_CHARGED)
LETTERS = {PASS: ".", MISMATCH: "M", UNSUPPORTED: "U", REFUSED: "R", ERROR: "E", CRASH: "C", TIMEOUT: "T", XFAIL: "x",
           XPASS: "X", UNCONVERTED: "V", UNTESTED: "-"}


def run_ok(outcomes) -> bool:
    """A run succeeded when every case the backend was asked succeeded and at least one was: cases
    opkit could not test and models the converter could not translate are neither."""
    tested = [o for o in outcomes if o not in NOT_CHARGED]
    return bool(tested) and all(o in SUCCESS for o in tested)
# the suite names, one vocabulary: the spec-driven suites of `opkit test` (in run order), then onnx's
# node tests; the suites whose failures are about outputs for given inputs (the second opinion and
# the comparison matrix read those first); the outcomes charged to a runtime as findings
SPEC_SUITES = ("examples", "properties", "differential", "robustness", "lowerings")
SUITES = SPEC_SUITES + ("onnx-node",)
OUTPUT_SUITES = ("differential", "examples")
FINDING_OUTCOMES = (MISMATCH, REFUSED, ERROR, CRASH, TIMEOUT)


class ExpectationsError(ValueError):
    pass


@dataclass(frozen=True)
class Expectation:
    op: str
    reason: str
    domain: str = "ai.onnx"
    version: int | None = None
    types: tuple = ()  # (param, (type strings...))
    suite: tuple = ()  # any of these suites (empty: any)
    example: tuple = ()  # any of these examples / properties (empty: any)
    outcomes: tuple = ()
    source: str = ""  # file name#index, as the report's "expected" field shows it
    path: str = field(default="", compare=False)  # the file, for warnings
    index: int = field(default=-1, compare=False)  # the entry's position in the file

    def matches(self, case: CaseRecord) -> bool:
        return self.matches_fields(case.op, case.domain, case.version, case.suite, case.example, case.types)

    def matches_fields(self, op: str, domain: str, version: int, suite: str | None, example: str | None,
                       types: dict) -> bool:
        """``matches`` of a case's fields (also of a skipped item, which is not a record)."""
        if op != self.op or domain != self.domain:
            return False
        if self.version is not None and version != self.version:
            return False
        if self.suite and suite not in self.suite:
            return False
        if self.example and example not in self.example:
            return False
        for param, allowed in self.types:
            if types.get(param) not in allowed:
                return False
        return True


@dataclass
class Expectations:
    entries: list[Expectation] = field(default_factory=list)

    def find(self, case: CaseRecord) -> Expectation | None:
        return next((e for e in self.entries if e.matches(case)), None)

    def apply(self, case: dict) -> dict:
        """Turn a failing case an entry expects into xfail, and an expected failure that passed into
        xpass (``CaseRecord.with_expectation``). Mutates and returns ``case`` (a record's JSON form)."""
        from .record import CaseRecord

        entry = next((e for e in self.entries if e.matches_fields(
            case["op"], case["domain"], case["version"], case.get("suite"), case.get("example"),
            case.get("types", {}))), None)
        if entry is not None:
            case.update(CaseRecord.from_json(case).with_expectation(entry).to_json())
        return case

    def apply_record(self, record):
        """``apply`` for a ``CaseRecord``: the record as the matching entry sees it."""
        return record.with_expectation(self.find(record))


KEYS = {"op", "domain", "version", "types", "suite", "example", "outcome", "reason"}
TOP_KEYS = {"backend", "expectations"}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def load_expectations(path: str) -> Expectations:
    """Read an expectations file. Every problem (unreadable file, broken YAML, unknown keys, values
    of the wrong type) raises ``ExpectationsError`` with one line naming the file and the entry."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ExpectationsError(f"{path}: cannot read the expectations file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ExpectationsError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise ExpectationsError(f"{path}: not valid YAML{where}: {_one_line(problem)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("expectations", []), (list, type(None))):
        raise ExpectationsError(f"{path}: expected a mapping with an 'expectations' list")
    unknown = set(map(str, data)) - TOP_KEYS
    if unknown:
        raise ExpectationsError(f"{path}: unknown top-level key(s) {', '.join(sorted(unknown))} "
                                f"(known: {', '.join(sorted(TOP_KEYS))})")
    out = []
    for i, item in enumerate(data.get("expectations") or []):
        out.append(_entry(path, i, item))
    return Expectations(out)


def _entry(path: str, i: int, item) -> Expectation:
    where = f"{path}: expectations[{i}]"
    if not isinstance(item, dict):
        raise ExpectationsError(f"{where}: expected a mapping, got {_kind(item)}")
    if isinstance(item.get("op"), str) and item["op"]:
        where += f" (op {item['op']})"
    unknown = set(map(str, item)) - KEYS
    if unknown:
        raise ExpectationsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                                f"(known: {', '.join(sorted(KEYS))})")
    if not item.get("op"):
        raise ExpectationsError(f"{where}: 'op' is required")
    if not isinstance(item["op"], str):
        raise ExpectationsError(f"{where}: 'op' must be a string, got {_kind(item['op'])}")
    reason = item.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ExpectationsError(f"{where}: 'reason' must be a string, got {_kind(reason)}")
    if not str(reason or "").strip():
        raise ExpectationsError(f"{where}: every expectation needs a 'reason'")
    domain = item.get("domain", "ai.onnx")
    if not isinstance(domain, str) or not domain:
        raise ExpectationsError(f"{where}: 'domain' must be a string, got {_kind(domain)}")
    version = item.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise ExpectationsError(f"{where}: 'version' must be a positive integer (an opset version), got "
                                f"{version!r}")
    outcomes = _strings_of(where, "outcome", item.get("outcome"))
    bad = [o for o in outcomes if o not in FAILING]
    if bad:
        raise ExpectationsError(f"{where}: outcome {bad[0]!r} is not a failing outcome ({', '.join(FAILING)})")
    suites = _strings_of(where, "suite", item.get("suite"))
    bad = [x for x in suites if x not in SUITES]
    if bad:
        raise ExpectationsError(f"{where}: suite {bad[0]!r} is not one of {', '.join(SUITES)}")
    examples = _strings_of(where, "example", item.get("example"), ints=True)
    types_value = item.get("types")
    if types_value is not None and not isinstance(types_value, dict):
        raise ExpectationsError(f"{where}: 'types' must be a mapping of type parameter to type(s), e.g. "
                                f"{{T: tensor(float)}}; got {_kind(types_value)}")
    types = []
    for param, allowed in (types_value or {}).items():
        names = _strings_of(where, f"types.{param}", allowed)
        if not names:
            raise ExpectationsError(f"{where}: 'types.{param}' is empty")
        types.append((str(param), names))
    return Expectation(item["op"], reason.strip(), domain, version, tuple(types), suites, examples, outcomes,
                       f"{os.path.basename(path)}#{i}", path, i)


def _kind(value) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "nothing"}.get(type(value), type(value).__name__)


def _strings_of(where: str, key: str, value, ints: bool = False) -> tuple:
    """A string or a list of strings (integers too, with ``ints``) as a tuple; else an error."""
    if value is None:
        return ()
    ok = (str, int) if ints else (str,)
    items = value if isinstance(value, list) else [value]
    for v in items:
        if isinstance(v, bool) or not isinstance(v, ok):
            raise ExpectationsError(f"{where}: '{key}' must be a string or a list of strings, got "
                                    f"{_kind(v)} ({v!r})")
    return tuple(str(v) for v in items)


def _strings(value) -> tuple:
    if value is None:
        return ()
    return (str(value),) if isinstance(value, (str, int)) else tuple(str(v) for v in value)


def unmatched_expectations(expectations: Expectations, cases: list[CaseRecord], skipped: list[dict],
                           ops: dict[tuple[str, str], object], suites, known_ops=None) -> list[str]:
    """Warnings (one line each) for entries that matched no case of a run: stale entries, or typos
    in an op, version, type, suite or example name. Only entries the run could have matched count:
    those of an op it ran (``ops``: (domain, op) -> spec), for a suite it ran, and (when the run
    left some type bindings out, see --max-bindings) for a binding it ran; entries for an op no spec
    defines (``known_ops``: every (domain, op)) are always reported. The first entry that matches a
    case is the one that applies, so an entry shadowed by an earlier one is reported too."""
    used: set[int] = set()
    for case in cases:
        if case.backend in ("opkit", "spec"):
            continue  # backend-independent records: expectations do not apply to them
        for k, entry in enumerate(expectations.entries):
            if entry.matches(case):
                used.add(k)
                break
    for item in skipped:  # a binding ONNX rejects is not run: not the entry's fault
        for k, entry in enumerate(expectations.entries):
            if entry.matches_fields(item["op"], item["domain"], item["version"],
                                    item.get("suite", entry.suite[0] if entry.suite else None),
                                    entry.example[0] if entry.example else None, item.get("types", {})):
                used.add(k)
    out = []
    for k, entry in enumerate(expectations.entries):
        if k in used:
            continue
        where = f"{entry.path or entry.source}: expectations[{entry.index if entry.index >= 0 else k}]"
        name = (entry.op if entry.domain == "ai.onnx" else f"{entry.domain}::{entry.op}") + (
            f"-{entry.version}" if entry.version is not None else "")
        key = (entry.domain, entry.op)
        if known_ops is not None and key not in known_ops:
            out.append(f"{where} ({name}): no spec defines this op: the entry can never match")
            continue
        spec = ops.get(key)
        if spec is None:
            continue  # the op was not part of this run
        if entry.suite and not set(entry.suite) & set(suites):
            continue
        versions = [v.since for v in getattr(spec, "versions", [])]
        if entry.version is not None and versions and entry.version not in versions:
            out.append(f"{where} ({name}): the op has no version {entry.version} "
                       f"(versions: {', '.join(map(str, versions))}): the entry can never match")
            continue
        if entry.types and _binding_not_run(entry, spec, cases):
            continue
        out.append(f"{where} ({name}): matched no case of this run (stale, or a typo in its "
                   f"version, types, suite or example?)")
    return out


def _binding_not_run(entry: Expectation, spec, cases: list[CaseRecord]) -> bool:
    """True when some type binding the entry names exists for the op but no case of the run used
    it (the run tested a subset of the bindings)."""
    try:
        from ..cases.bindings import all_bindings
    except ImportError:  # pragma: no cover
        return False
    ran = {tuple(sorted(c.types.items())) for c in cases if c.op == entry.op and c.domain == entry.domain}
    for version in getattr(spec, "versions", []):
        if entry.version is not None and version.since != entry.version:
            continue
        try:
            bindings = all_bindings(version)
        except Exception:  # noqa: BLE001
            continue
        for b in bindings:
            if all(b.get(p) in allowed for p, allowed in entry.types) and tuple(sorted(b.items())) not in ran:
                return True
    return False


def default_expectations_path(root: str, backend_name: str) -> str:
    return os.path.join(root, "conformance", "expectations", f"{backend_name}.yaml")


def default_expectation_files(backend_name: str) -> list[str]:
    """The expectation files that apply when none is named: the project's own for the backend, then
    the one opkit ships for its built-in ops (both when they exist)."""
    from ..core.project import active, builtin_expectations

    found = []
    for folder in (active().expectations, builtin_expectations()):
        path = os.path.join(folder, f"{backend_name}.yaml")
        if os.path.exists(path) and all(not os.path.samefile(path, f) for f in found):
            found.append(path)
    return found
