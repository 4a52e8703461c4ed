"""A conformance run in the terminal: the op x type table of outcome letters, what opkit could not
test, what the converter in front of the runtime could not translate, what was skipped, the
failures grouped, and the live progress line."""

from __future__ import annotations

from collections import Counter, defaultdict

from ..core.dtypes import type_label_order
from .causes import converter_groups, runtime_output_lines
from .outcomes import FAILING, LETTERS, NOT_CHARGED, OUTCOMES, UNCONVERTED, UNTESTED
from .record import CaseRecord
from .verdicts import opinion_lines


def _short_type(types: dict) -> str:
    if not types:
        return "-"
    return ",".join(v[7:-1] if v.startswith("tensor(") else v for _, v in sorted(types.items()))


def summary_table(cases: list[CaseRecord]) -> str:
    """op x type table of outcome letters (one per case: examples, properties, differential)."""
    if not cases:
        return "no cases ran"
    rows: dict[tuple, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    backends = []
    for c in cases:
        if c.backend not in backends:
            backends.append(c.backend)
        rows[(c.backend, c.domain, c.op, c.version)][_short_type(c.types)].append(LETTERS[c.outcome])
    lines = []
    for key in sorted(rows, key=lambda k: (backends.index(k[0]), k[1], k[2], k[3])):
        backend, domain, op, version = key
        cells = rows[key]
        label = f"{backend}  {'' if domain == 'ai.onnx' else domain + '::'}{op}-{version}"
        lines.append(label)
        width = max(len(t) for t in cells)
        for t in sorted(cells, key=type_label_order):
            letters = "".join(cells[t])
            counts = Counter(letters)
            tally = " ".join(f"{n}{l}" for l, n in sorted(counts.items()))
            lines.append(f"  {t:<{width}}  {letters:<12} {tally}")
    counts = Counter(c.outcome for c in cases)
    lines.append("")
    lines.append("legend: " + "  ".join(f"{LETTERS[o]} {o}" for o in OUTCOMES))
    lines.append("total: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o] and o not in NOT_CHARGED)
                 + f"  ({sum(c.examples_run for c in cases)} examples run)")
    if counts[UNTESTED]:
        lines.append(f"untested: {counts[UNTESTED]} cases opkit could not test (not charged to the backend; "
                     f"see untested_text / the report's cases with outcome 'untested')")
    if counts[UNCONVERTED]:
        lines.append(f"unconverted: {counts[UNCONVERTED]} cases the converter in front of the runtime could not "
                     "translate (the converter's, not charged to the runtime):")
        lines.append(unconverted_text(cases))
    return "\n".join(lines)


def unconverted_text(cases: list[CaseRecord], limit: int = 12) -> str:
    """The unconverted cases, one line per backend, converter and message class."""
    groups = converter_groups(cases)
    lines = [group.line() for group in groups[:limit]]
    if len(groups) > limit:
        lines.append(f"... and {len(groups) - limit} more groups (see the JSON report's summary.converters)")
    return "\n".join(lines)


def untested_text(cases: list[CaseRecord], limit: int = 20) -> str:
    """What opkit could not test, grouped by op version and reason: one line each."""
    groups: dict[tuple, list[CaseRecord]] = {}
    for c in cases:
        if c.outcome == UNTESTED:
            stage = (c.details or {}).get("stage", "")
            groups.setdefault((c.domain, c.op, c.version, stage), []).append(c)
    lines = []
    for (domain, op, version, stage), items in list(groups.items())[:limit]:
        name = op if domain == "ai.onnx" else f"{domain}::{op}"
        lines.append(f"UNTESTED    {name}-{version} ({len(items)} case{'s' if len(items) != 1 else ''}"
                     f"{', ' + stage if stage else ''}) {items[0].message[:200]}")
    if len(groups) > limit:
        lines.append(f"... and {len(groups) - limit} more groups (see the JSON report)")
    return "\n".join(lines)


def skipped_text(skipped: list[dict], limit: int = 8) -> str:
    """What was not run, one line per reason: how many op versions (and type bindings) and which
    ones. Skips are not findings; they are shown apart from the cases."""
    groups: dict[str, dict[str, int]] = {}
    for item in skipped:
        name = item["op"] if item["domain"] == "ai.onnx" else f"{item['domain']}::{item['op']}"
        versions = groups.setdefault(item["reason"], {})
        key = f"{name}-{item['version']}"
        versions[key] = versions.get(key, 0) + 1
    lines = []
    for reason, versions in sorted(groups.items(), key=lambda kv: -sum(kv[1].values())):
        shown = ", ".join(list(versions)[:limit]) + (f" and {len(versions) - limit} more" if len(versions) > limit else "")
        bindings = sum(versions.values())
        count = f"{len(versions)} op version{'s' if len(versions) != 1 else ''}" + (
            f", {bindings} type bindings" if bindings != len(versions) else "")
        lines.append(f"SKIPPED     {reason}: {count} ({shown})")
    return "\n".join(lines)


def failures_text(cases: list[CaseRecord], limit: int = 40) -> str:
    """Failures grouped by (backend, op version, types, outcome): one line each, with the suites."""
    groups: dict[tuple, list[CaseRecord]] = {}
    for c in cases:
        if c.outcome in FAILING or c.outcome == "xpass":
            key = (c.backend, c.domain, c.op, c.version, _short_type(c.types), c.outcome)
            groups.setdefault(key, []).append(c)
    lines = []
    for (backend, domain, op, version, types, outcome), items in list(groups.items())[:limit]:
        first = items[0]
        said = {"details": first.details, "second_opinion": first.second_opinion}  # what the line helpers read
        where = ", ".join(f"{c.suite}:{c.example}" for c in items[:4]) + (" ..." if len(items) > 4 else "")
        name = op if domain == "ai.onnx" else f"{domain}::{op}"
        lines.append(f"{outcome.upper():<11} {backend} {name}-{version} {types} [{where}] {first.message[:240]}"
                     + (f"\n            repro: {first.repro}" if first.repro else "")
                     + "".join(f"\n            {line}" for line in runtime_output_lines(said) + opinion_lines(said)))
    if len(groups) > limit:
        lines.append(f"... and {len(groups) - limit} more groups (see the JSON report)")
    return "\n".join(lines)
