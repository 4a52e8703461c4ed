"""``opkit compare``: several runtimes' conformance reports side by side.

    opkit compare [REPORT.json ...] [--op OP] [--disagree] [--json]

With no report named, the project's committed ones (``conformance/reports/*.json`` and its
``[tool.opkit] reports`` folder): every runtime opkit has a report for, side by side.

Prints, per op version x type binding, each runtime's outcome (the cases of every suite for that
binding folded into one cell) and whether it agrees with the reference kernel: a runtime agrees on
a binding when every case passed. xfail still disagrees (it is a known failure, not a pass).
The per-op x type cells (built by ``opkit.results.matrix``) are also what the scoreboard pages
(``opkit.emit.scoreboard``) render.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter

from ..results.matrix import Matrix, build_matrix, label_order, op_title



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


def report_ages(reports: list[dict]) -> dict[str, str]:
    """runtime -> when its reports were made ("2026-11-29"), and "older report" when one of them
    was not made by this opkit's code (emit.scoreboard.report_age): a comparison of reports
    of different code is a comparison of different tests."""
    from ..emit.scoreboard import report_age, report_backends

    by_runtime: dict[str, list[dict]] = {}
    for report in reports:
        for backend in report_backends(report):
            by_runtime.setdefault(str(backend.get("name", "?")), []).append(report)
    ages = {}
    for name, found in by_runtime.items():
        dates, stale = report_age(found)
        ages[name] = "; ".join(([", ".join(dates)] if dates else []) + (["older report"] if stale else []))
    return ages


def render_text(matrix: Matrix, disagree_only: bool = False, ages: dict | None = None) -> str:
    lines = []
    width = max([11] + [len(r) + 2 for r in matrix.runtimes])
    ages = ages or {}
    lines.append("runtimes: " + ", ".join(f"{r} {matrix.versions[r].get('version', '?')}"
                                          + (f" ({ages[r]})" if ages.get(r) else "") for r in matrix.runtimes))
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


def committed_reports() -> list[str]:
    """The project's committed reports (what its pages show), in file-name order."""
    import glob

    from ..core.project import active

    try:
        project = active()
    except Exception:  # noqa: BLE001 - no project here: nothing committed to compare
        return []
    folders = [os.path.join(project.root, "conformance", "reports"), project.reports]
    found = {p for folder in folders if folder for p in glob.glob(os.path.join(folder, "*.json"))
             if not p.endswith(".schema.json")}
    return sorted(found)


def cmd_compare(args: argparse.Namespace) -> int:
    paths = args.reports or committed_reports()
    if not paths:
        print("opkit compare: no reports named and none committed here (conformance/reports/*.json); "
              "give REPORT.json files from `opkit test --report`", file=sys.stderr)
        return 2
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print(f"opkit compare: no such report: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        reports = load_reports(paths)
        matrix = build_matrix(reports, args.op)
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
            print(render_text(matrix, args.disagree, report_ages(reports)))
    except BrokenPipeError:
        pass
    return 0


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("reports", nargs="*", metavar="REPORT.json",
                   help="conformance reports (opkit test --report; default: the project's committed ones, "
                        "conformance/reports/*.json)")
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
