"""Outcome vocabulary and expectations files.

Outcomes: pass, mismatch (values, shape or dtype), unsupported (the backend refuses the op or type),
error, crash (the backend process died), timeout, xfail / xpass (an expectations entry said the
case fails: it did / it did not). Only pass and xfail count as success.

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
        reason: "CPU kernel registered for 6 types only"   # required
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

PASS, MISMATCH, UNSUPPORTED, ERROR, CRASH, TIMEOUT, XFAIL, XPASS = (
    "pass", "mismatch", "unsupported", "error", "crash", "timeout", "xfail", "xpass")
OUTCOMES = (PASS, MISMATCH, UNSUPPORTED, ERROR, CRASH, TIMEOUT, XFAIL, XPASS)
FAILING = (MISMATCH, UNSUPPORTED, ERROR, CRASH, TIMEOUT)
SUCCESS = (PASS, XFAIL)
LETTERS = {PASS: ".", MISMATCH: "M", UNSUPPORTED: "U", ERROR: "E", CRASH: "C", TIMEOUT: "T", XFAIL: "x",
           XPASS: "X"}
SUITES = ("examples", "properties", "differential", "lowerings")


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
    source: str = ""

    def matches(self, case: dict) -> bool:
        if case["op"] != self.op or case["domain"] != self.domain:
            return False
        if self.version is not None and case["version"] != self.version:
            return False
        if self.suite and case.get("suite") not in self.suite:
            return False
        if self.example and case.get("example") not in self.example:
            return False
        for param, allowed in self.types:
            if case.get("types", {}).get(param) not in allowed:
                return False
        return True


@dataclass
class Expectations:
    entries: list[Expectation] = field(default_factory=list)

    def find(self, case: dict) -> Expectation | None:
        return next((e for e in self.entries if e.matches(case)), None)

    def apply(self, case: dict) -> dict:
        """Turn a failing case an entry expects into xfail, and an expected failure that passed into
        xpass. Mutates and returns ``case``."""
        entry = self.find(case)
        if entry is None:
            return case
        outcome = case["outcome"]
        if outcome == PASS:
            case["outcome"] = XPASS
            case["message"] = f"unexpectedly passed; expected to fail because: {entry.reason}"
            case["expected"] = {"reason": entry.reason, "outcomes": list(entry.outcomes), "source": entry.source}
        elif outcome in FAILING and (not entry.outcomes or outcome in entry.outcomes):
            case["expected"] = {"reason": entry.reason, "outcomes": list(entry.outcomes), "source": entry.source,
                                "actual": outcome}
            case["outcome"] = XFAIL
        return case


KEYS = {"op", "domain", "version", "types", "suite", "example", "outcome", "reason"}


def load_expectations(path: str) -> Expectations:
    import yaml

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict) or not isinstance(data.get("expectations", []), list):
        raise ExpectationsError(f"{path}: expected a mapping with an 'expectations' list")
    out = []
    for i, item in enumerate(data.get("expectations") or []):
        where = f"{path}: expectations[{i}]"
        if not isinstance(item, dict):
            raise ExpectationsError(f"{where}: expected a mapping")
        unknown = set(item) - KEYS
        if unknown:
            raise ExpectationsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        if not item.get("op"):
            raise ExpectationsError(f"{where}: 'op' is required")
        if not str(item.get("reason") or "").strip():
            raise ExpectationsError(f"{where}: every expectation needs a 'reason'")
        outcomes = item.get("outcome") or ()
        outcomes = (outcomes,) if isinstance(outcomes, str) else tuple(outcomes)
        bad = [o for o in outcomes if o not in FAILING]
        if bad:
            raise ExpectationsError(f"{where}: outcome {bad[0]!r} is not a failing outcome ({', '.join(FAILING)})")
        types = []
        for param, allowed in (item.get("types") or {}).items():
            types.append((param, (allowed,) if isinstance(allowed, str) else tuple(allowed)))
        out.append(Expectation(str(item["op"]), str(item["reason"]).strip(), item.get("domain", "ai.onnx"),
                               item.get("version"), tuple(types), _strings(item.get("suite")),
                               _strings(item.get("example")), outcomes, f"{os.path.basename(path)}#{i}"))
    return Expectations(out)


def _strings(value) -> tuple:
    if value is None:
        return ()
    return (str(value),) if isinstance(value, (str, int)) else tuple(str(v) for v in value)


def default_expectations_path(root: str, backend_name: str) -> str:
    return os.path.join(root, "conformance", "expectations", f"{backend_name}.yaml")


def default_expectation_files(backend_name: str) -> list[str]:
    """The expectation files that apply when none is named: the project's own for the backend, then
    the one opkit ships for its built-in ops (both when they exist)."""
    from ..project import active, builtin_expectations

    found = []
    for folder in (active().expectations, builtin_expectations()):
        path = os.path.join(folder, f"{backend_name}.yaml")
        if os.path.exists(path) and all(not os.path.samefile(path, f) for f in found):
            found.append(path)
    return found
