"""The comparison matrix: runtimes' conformance reports folded into per op version x type cells.

``build_matrix`` turns reports into, per op version x type binding, each runtime's outcome (the
cases of every suite for that binding folded into one cell) and whether it agrees with the
reference kernel: a runtime agrees on a binding when every case it was asked passed. xfail still
disagrees (it is a known failure, not a pass); untested (opkit's) and unconverted (the converter's)
cases say nothing about the runtime and are left out of the count. ``opkit compare`` prints these cells and the scoreboard pages
(``opkit.emit.scoreboard``) render them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..core.dtypes import type_label_order
from .outcomes import NOT_CHARGED, OUTPUT_SUITES, SEVERITY  # the worst case outcome names the cell
from .record import report_records


@dataclass
class Cell:
    """One runtime's cases for one (op version, type binding)."""

    counts: Counter = field(default_factory=Counter)
    repro: str | None = None  # the first repro bundle of the worst outcome
    message: str = ""
    shown: str = ""  # the outcome message and repro belong to
    rank: int = 3  # preference of the case shown (0 best)

    @property
    def outcome(self) -> str:
        for o in SEVERITY:
            if self.counts.get(o):
                return o
        return "none"

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def tested(self) -> int:
        """Cases that say something about the runtime (all but opkit's untested ones and the
        converter's unconverted ones)."""
        return self.total - sum(self.counts.get(o, 0) for o in NOT_CHARGED)

    @property
    def agrees(self) -> bool:
        return self.tested > 0 and self.counts.get("pass", 0) == self.tested

    def text(self) -> str:
        o = self.outcome
        if o == "pass" or o in NOT_CHARGED:
            return o
        return f"{o} ({self.tested - self.counts.get('pass', 0)}/{self.tested})"


@dataclass
class Matrix:
    runtimes: list[str]  # in the order given
    versions: dict[str, dict]  # runtime -> describe() info
    cells: dict  # (domain, op, version) -> binding label -> runtime -> Cell
    sources: dict[str, str]  # runtime -> report path


def binding_label(types: dict) -> str:
    if not types:
        return "-"
    return ",".join(v[7:-1] if v.startswith("tensor(") else v for _, v in sorted(types.items()))


def label_order(label: str):
    """Sort key of a binding label: by its first element type in the order tables use."""
    return type_label_order(label)


def legacy_untested(case):
    """Reports written before the 'untested' outcome existed charged opkit's own failures (no valid
    input drawn: ``details.stage`` generate) to the runtime as errors; read them as what they are."""
    from dataclasses import replace

    # the oldest reports carry no stage, only the generator's own message
    if case.outcome == "error" and ((case.details or {}).get("stage") == "generate"
                                    or case.message.startswith(("could not draw valid inputs",
                                                                "opkit cannot generate inputs"))):
        return replace(case, outcome="untested")
    return case


def build_matrix(reports: list[dict], ops: list[str] | None = None) -> Matrix:
    runtimes: list[str] = []
    versions: dict[str, dict] = {}
    sources: dict[str, str] = {}
    cells: dict = defaultdict(lambda: defaultdict(dict))
    for report in reports:
        infos = {b.get("name"): b for b in report.get("target", {}).get("backends", [])}
        for case in report_records(report):
            runtime = case.backend
            if runtime in ("spec", "opkit"):  # lowering checks; opkit's own failures in older reports
                continue
            case = legacy_untested(case)
            if ops and case.op not in ops and f"{case.domain}::{case.op}" not in ops:
                continue
            if runtime not in runtimes:
                runtimes.append(runtime)
                versions[runtime] = infos.get(runtime, {"name": runtime, "version": "?"})
                sources[runtime] = report.get("_path", "")
            label = binding_label(case.types)
            cell = cells[case.key][label].setdefault(runtime, Cell())
            cell.counts[case.outcome] += 1
            # the cell shows the message and repro of a case with its worst outcome, preferring the
            # differential test and examples: their bundles rerun standalone, while a property's
            # bundle holds one input of a relation that may only fail together with the others
            if case.outcome != cell.outcome:
                continue
            rank = (0 if case.suite in OUTPUT_SUITES else 1) if case.repro else 2
            if cell.shown != cell.outcome or rank < cell.rank:
                cell.message = case.message
                cell.repro = case.repro
                cell.shown, cell.rank = cell.outcome, rank
    return Matrix(runtimes, versions, {k: dict(v) for k, v in cells.items()}, sources)


def op_title(key) -> str:
    domain, op, version = key
    return (op if domain == "ai.onnx" else f"{domain}::{op}") + f"-{version}"
