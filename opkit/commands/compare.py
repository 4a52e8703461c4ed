"""``opkit compare``: several runtimes' conformance reports side by side.

    opkit compare REPORT.json [REPORT.json ...] [--op OP] [--disagree] [--json]

Prints, per op version x type binding, each runtime's outcome (the cases of every suite for that
binding folded into one cell) and whether it agrees with the reference kernel: a runtime agrees on
a binding when every case passed. xfail still disagrees (it is a known failure, not a pass).
The per-op x type cells are also what the scoreboard pages (``opkit.emit.scoreboard``) render.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

# cell outcome precedence: the worst case outcome names the cell
SEVERITY = ("crash", "timeout", "error", "mismatch", "xpass", "unsupported", "xfail", "pass", "untested")
TYPE_ORDER = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16",
              "bfloat16", "float", "double", "complex64", "complex128", "string"]


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
        """Cases that say something about the runtime (all but opkit's untested ones)."""
        return self.total - self.counts.get("untested", 0)

    @property
    def agrees(self) -> bool:
        return self.tested > 0 and self.counts.get("pass", 0) == self.tested

    def text(self) -> str:
        o = self.outcome
        if o in ("pass", "untested"):
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
    head = label.split(",")[0]
    return (TYPE_ORDER.index(head) if head in TYPE_ORDER else len(TYPE_ORDER), label)


def load_reports(paths: list[str]) -> list[dict]:
    """The reports at ``paths``; a file that is not one (broken JSON, a truncated file, not a
    report) raises ``ReportError`` (a ValueError) with a one-line message naming the file and, for
    broken JSON, the position."""
    from ..results.report import read_report

    reports = []
    for path in paths:
        data = read_report(path)
        data["_path"] = path
        reports.append(data)
    return reports


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
    from ..results.record import records

    for report in reports:
        infos = {b.get("name"): b for b in report.get("target", {}).get("backends", [])}
        for case in records(report["cases"], report.get("_path", "report")):
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
            rank = (0 if case.suite in ("differential", "examples") else 1) if case.repro else 2
            if cell.shown != cell.outcome or rank < cell.rank:
                cell.message = case.message
                cell.repro = case.repro
                cell.shown, cell.rank = cell.outcome, rank
    return Matrix(runtimes, versions, {k: dict(v) for k, v in cells.items()}, sources)


def op_title(key) -> str:
    domain, op, version = key
    return (op if domain == "ai.onnx" else f"{domain}::{op}") + f"-{version}"


def render_text(matrix: Matrix, disagree_only: bool = False) -> str:
    lines = []
    width = max([11] + [len(r) + 2 for r in matrix.runtimes])
    lines.append("runtimes: " + ", ".join(f"{r} {matrix.versions[r].get('version', '?')}" for r in matrix.runtimes))
    lines.append("")
    opw = max([16] + [len(op_title(k)) + 1 for k in matrix.cells])
    header = f"{'op':<{opw}} {'types':<12}" + "".join(f"{r:<{width + 12}}" for r in matrix.runtimes)
    lines.append(header.rstrip())
    agree_count: Counter = Counter()
    seen: Counter = Counter()
    for key in sorted(matrix.cells):
        for label in sorted(matrix.cells[key], key=label_order):
            row = matrix.cells[key][label]
            parts = []
            any_disagree = False
            for r in matrix.runtimes:
                cell = row.get(r)
                if cell is None:
                    parts.append(f"{'-':<{width + 12}}")
                    continue
                if not cell.tested:  # opkit could not test it: no claim either way
                    parts.append(f"{'- ' + cell.text():<{width + 12}}")
                    continue
                seen[r] += 1
                agree_count[r] += cell.agrees
                any_disagree |= not cell.agrees
                mark = "=" if cell.agrees else "x"
                parts.append(f"{mark} {cell.text():<{width + 10}}")
            if disagree_only and not any_disagree:
                continue
            lines.append((f"{op_title(key):<{opw}} {label:<12}" + "".join(parts)).rstrip())
    lines.append("")
    lines.append("= agrees with the reference kernel on every case; x does not (outcome (failing/total cases))")
    for r in matrix.runtimes:
        lines.append(f"{r}: agrees on {agree_count[r]}/{seen[r]} op x type bindings")
    return "\n".join(lines)


def to_json(matrix: Matrix) -> dict:
    rows = []
    for key in sorted(matrix.cells):
        for label in sorted(matrix.cells[key], key=label_order):
            row = {"domain": key[0], "op": key[1], "version": key[2], "types": label, "runtimes": {}}
            for r, cell in matrix.cells[key][label].items():
                row["runtimes"][r] = {"outcome": cell.outcome, "agrees": cell.agrees, "counts": dict(cell.counts),
                                      "repro": cell.repro}
            rows.append(row)
    return {"runtimes": [{"name": r, "version": matrix.versions[r].get("version", "?")} for r in matrix.runtimes],
            "rows": rows}


def cmd_compare(args: argparse.Namespace) -> int:
    missing = [p for p in args.reports if not os.path.exists(p)]
    if missing:
        print(f"opkit compare: no such report: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        matrix = build_matrix(load_reports(args.reports), args.op)
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"opkit compare: {exc}", file=sys.stderr)
        return 2
    if not matrix.cells:
        print("opkit compare: no cases in these reports" + (" for that op" if args.op else ""), file=sys.stderr)
        return 2
    try:
        if args.json:
            json.dump(to_json(matrix), sys.stdout, indent=1)
            print()
        else:
            print(render_text(matrix, args.disagree))
    except BrokenPipeError:
        pass
    return 0


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("reports", nargs="+", metavar="REPORT.json", help="conformance reports (opkit test --report)")
    p.add_argument("--op", action="append", metavar="OP", help="only this op (repeatable; 'Trilu' or 'domain::Op')")
    p.add_argument("--disagree", action="store_true", help="only rows where some runtime disagrees")
    p.add_argument("--json", action="store_true", help="print the matrix as JSON")
    return p


def register(subparsers) -> None:
    p = subparsers.add_parser("compare", help="several runtimes' conformance reports side by side",
                              description=__doc__.split("\n\n")[0])
    add_arguments(p)
    p.set_defaults(func=cmd_compare)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="opkit compare", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return cmd_compare(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
