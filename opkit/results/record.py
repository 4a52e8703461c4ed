"""The case record: one test item's result, as every producer writes it and every reader reads it.

Producers: the runner (``opkit test``: examples, properties, differential, robustness, lowerings), the pytest
plugin (generated tests) and the onnx-node suite. Readers: the report, ``opkit compare``, the
scoreboard and the docs' conformance cells. The JSON form (``to_json``) is what a report's
``cases`` hold (schema: ``report.schema.json``); ``from_json`` reads it back, refusing a case that
is not one with a one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from .outcomes import FAILING, OUTCOMES, PASS, XFAIL, XPASS


class RecordError(ValueError):
    """A JSON object that is not a case record (the message names the missing or bad key)."""


@dataclass(frozen=True)
class CaseRecord:
    backend: str
    suite: str
    op: str
    domain: str
    version: int
    types: dict = field(default_factory=dict)  # type parameter -> ONNX type string
    example: str = ""  # the example, property or lowering name; the suite name for generated cases
    outcome: str = PASS
    message: str = ""
    examples_run: int = 0
    duration_s: float = 0.0
    repro: str | None = None
    details: dict | None = None  # stage, what differed, traceback ...
    minimal_example: str | None = None
    repro_error: str | None = None
    expected: dict | None = None  # the expectations entry that turned the outcome into xfail / xpass
    rejected: int | None = None  # drawn cases the final validity check discarded (opkit's generator)
    test: str | None = None  # the pytest node id, for records the pytest plugin writes
    # what other engines say about a failure (opkit.conformance.second_opinion), in JSON form
    second_opinion: list | None = None

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise RecordError(f"outcome {self.outcome!r} is not one of {', '.join(OUTCOMES)}")

    @property
    def key(self) -> tuple:
        return (self.domain, self.op, self.version)

    @property
    def qualified(self) -> str:
        return (self.op if self.domain == "ai.onnx" else f"{self.domain}::{self.op}") + f"-{self.version}"

    def to_json(self) -> dict[str, Any]:
        """The report form: the required keys always, the optional ones when set."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in REQUIRED or value is not None:
                out[f.name] = dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "case") -> "CaseRecord":
        if not isinstance(data, dict):
            raise RecordError(f"{where} is not an object")
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise RecordError(f"{where} lacks {', '.join(repr(k) for k in missing)}")
        unknown = sorted(set(data) - NAMES)
        if unknown:
            raise RecordError(f"{where} has unknown key(s) {', '.join(repr(k) for k in unknown)}")
        for key, kind in _KINDS.items():
            value = data.get(key)
            if value is not None and not isinstance(value, kind):
                raise RecordError(f"{where}: {key!r} must be {_KIND_WORDS[kind]}, got {type(value).__name__}")
        try:
            return cls(**{k: v for k, v in data.items() if k in NAMES})
        except RecordError as exc:
            raise RecordError(f"{where}: {exc}") from None

    def with_expectation(self, entry) -> "CaseRecord":
        """The record as an expectations entry (``outcomes.Expectation``) or None sees it: a
        failure it expects becomes xfail, an expected failure that passed becomes xpass."""
        if entry is None:
            return self
        if self.outcome == PASS:
            return replace(self, outcome=XPASS,
                           message=f"unexpectedly passed; expected to fail because: {entry.reason}",
                           expected={"reason": entry.reason, "outcomes": list(entry.outcomes), "source": entry.source})
        if self.outcome in FAILING and (not entry.outcomes or self.outcome in entry.outcomes):
            return replace(self, outcome=XFAIL,
                           expected={"reason": entry.reason, "outcomes": list(entry.outcomes), "source": entry.source,
                                     "actual": self.outcome})
        return self


REQUIRED = ("backend", "suite", "op", "domain", "version", "types", "example", "outcome", "message", "repro")
NAMES = frozenset(f.name for f in fields(CaseRecord))
_KINDS = {"backend": str, "suite": str, "op": str, "domain": str, "version": int, "types": dict, "example": str,
          "outcome": str, "message": str, "examples_run": int, "duration_s": (int, float), "repro": str,
          "details": dict, "minimal_example": str, "repro_error": str, "expected": dict, "rejected": int,
          "test": str, "second_opinion": list}
_KIND_WORDS = {str: "a string", int: "an integer", dict: "an object", (int, float): "a number", list: "a list"}


def records(cases: list, where: str = "report") -> list[CaseRecord]:
    """Every case of a report's ``cases`` list as a record (RecordError names the first bad one)."""
    return [CaseRecord.from_json(c, f"{where}: cases[{i}]") for i, c in enumerate(cases)]


def report_records(report: dict) -> list[CaseRecord]:
    """A loaded report's cases as records, read once per report: kept in the report under the
    private key ``_records`` (as a loaded report keeps its file under ``_path``), so that the
    emitters reading one report each get the same records without converting it again."""
    found = report.get("_records")
    if found is None:
        found = report["_records"] = records(report.get("cases", []), report.get("_path", "report"))
    return found
