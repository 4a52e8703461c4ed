"""The Conformance section of an operator page, from the committed conformance reports.

Inputs are what the scoreboard reads (``conformance/reports/*.json``, loaded once by
:func:`opkit.emit.scoreboard.load`) folded into runtime x type cells by
:func:`opkit.results.matrix.build_matrix`, and the root causes the findings pages show
(:func:`opkit.emit.findings.backend_causes`, recomputed per op version with
:func:`opkit.results.causes.causes`). Per op version: one row per runtime with the types that
pass, fail (by outcome: the charged ones, expected failures with their reason, unsupported, and
untested, opkit's own gap; in the words of ``opkit test`` and the scoreboard; types with the same
outcome grouped, with case counts), then the
root causes of its failures, and links to the scoreboard's op page (every binding, message and
repro) and the runtime's findings page. The section stays short: details live on the scoreboard.

Each row's runtime cell also says who made the reports behind it and warns when that was not the
code rendering the page (:func:`opkit.emit.scoreboard.made_by`).

Deterministic: runtimes and types sorted, no timings. Report text (runtime names, messages, types)
is foreign: every piece is escaped for a table cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.markdown import safe_inline
from ..results.attribute_coverage import report_coverage
from ..results.causes import cut_at_word
from ..results.outcomes import (CRASH, ERROR, MISMATCH, PASS, REFUSED, SEVERITY, TIMEOUT, UNCONVERTED, UNSUPPORTED, UNTESTED,
                                XFAIL, XPASS)
from ..results.record import CaseRecord, report_records
from .bundles import bundle_link

FAILING_SHOWN = 3  # root causes listed per runtime and version; the findings page has the rest
REASONS_SHOWN = 2  # expectations reasons quoted per runtime and version
REASON_LENGTH = 200
# the outcomes a row lists as failures charged to the runtime (xpass: an expected failure that passed)
SHOWN_FAILING = (CRASH, TIMEOUT, ERROR, MISMATCH, REFUSED, XPASS)
MISSING_SHOWN = 5  # attribute pairs not reached listed per runtime and version; the report has the rest
_PLAIN_LABEL = re.compile(r"^[A-Za-z0-9_,()-]+$")


@dataclass(frozen=True)
class RuntimeRow:
    """One runtime on one op version, each type binding under its worst outcome in the words of
    ``opkit test`` and the scoreboard (cell-safe; "-" for none)."""

    runtime: str  # "name version"
    passed: str  # "`float`, `double` (12 cases)"
    failing: str  # the charged outcomes: "mismatch: `float` (3 cases); refused: `bfloat16` (1 case)"
    expected: str  # xfail: failures an expectations entry predicts, with its reason
    unsupported: str  # no kernel for the type
    untested: str  # opkit could not test the binding: never the runtime's fault
    findings: str  # a link to the runtime's findings page, or ""


@dataclass(frozen=True)
class CauseLine:
    runtime: str
    outcome: str
    signature: str  # cell-safe
    cases: int
    feature: str
    repro: str  # a link to the zip of the cause's smallest failing case, or ""


@dataclass(frozen=True)
class AttributeTable:
    """The attribute-pair coverage of a version (the reports' ``attribute_coverage``): per attribute
    its levels and, per runtime, the levels and pairs of levels with another attribute a case ran
    with; then the totals and the first pairs (or values) not reached, with why. Cell-safe."""

    runtimes: tuple[str, ...]
    rows: tuple[tuple[str, str, tuple[str, ...]], ...]  # (attribute, levels, a cell per runtime)
    totals: tuple[str, ...]  # per runtime
    missing: tuple[tuple[str, str, str], ...]  # (runtime, pair or value, why)
    more_missing: tuple[tuple[str, int], ...] = ()  # (runtime, not listed)


@dataclass(frozen=True)
class VersionConformance:
    rows: tuple[RuntimeRow, ...]
    causes: tuple[CauseLine, ...]
    more_causes: tuple[tuple[str, int, str], ...]  # (runtime, causes not listed, findings link)
    attributes: AttributeTable | None = None
    # who made each report behind the rows (scoreboard.provenance): opkit version, code, date, and
    # a warning when that is not the code rendering the page
    reports: tuple[str, ...] = ()


# Links are {doc} roles with document names relative to the operator page
# (generated/docs/operators/<domain>/<Op>.md): Sphinx checks that the page exists (a warning, an
# error under -W), and the page's link rewriting for imported docs (absolute_links) leaves roles
# alone, while it would point a markdown link to a .md file at the upstream repository.


def scoreboard_page(domain: str, op: str) -> str:
    """The scoreboard's op page, as a document name relative to an operator page."""
    from .scoreboard import _slug

    return f"../../scoreboard/op-{_slug(domain)}-{_slug(op)}"


def findings_page(backend: str) -> str:
    from .scoreboard import _slug

    return f"../../findings/{_slug(backend)}"


def doc_link(title: str, docname: str) -> str:
    return f"{{doc}}`{title} <{docname}>`"


def _types(labels: list[str]) -> str:
    from ..results.matrix import label_order

    shown = []
    for label in sorted(labels, key=label_order):
        shown.append(f"`{label}`" if _PLAIN_LABEL.match(label) else safe_inline(label))
    return ", ".join(shown)


def _ratio(reached, total) -> str:
    """"2/3" from a report's counts (anything else shows as "?")."""
    ok = all(isinstance(n, int) and not isinstance(n, bool) for n in (reached, total))
    return f"{reached}/{total}" if ok else "?"


def _group(items: list[tuple[str, int]]) -> str:
    """Types with one outcome and their case count: "`float`, `double` (12 cases)"."""
    if not items:
        return "-"
    cases = sum(n for _, n in items)
    return f"{_types([label for label, _ in items])} ({cases} case{'s' if cases != 1 else ''})"


class OpConformance:
    """The conformance of every op version, built once per ``opkit gen`` from the loaded reports."""

    def __init__(self, root: str, reports: list[dict], linked: bool = True):
        from ..results.matrix import build_matrix
        from .findings import CHARGED, backend_causes

        self.root = root
        # opkit's own site links the scoreboard, findings pages and repro zips; a project's site
        # has none of them: its sections stand alone
        self.linked = linked
        self.matrix = build_matrix(reports)
        self._charged = CHARGED
        self._found = backend_causes(reports)  # backend -> (its report, causes): a findings page each
        self._cases: dict[tuple, list[CaseRecord]] = {}  # (backend, domain, op, version) -> failing cases
        for backend, (report, _) in self._found.items():
            for case in report_records(report):
                if case.backend == backend and case.outcome in CHARGED:
                    self._cases.setdefault((backend, case.domain, case.op, case.version), []).append(case)
        self._ops = {(domain, op) for domain, op, _ in self.matrix.cells}
        # (backend, domain, op, version) -> the reasons of the expectations entries its xfail cases met
        self._reasons: dict[tuple, set[str]] = {}
        self._reports = reports
        # (backend, domain, op, version) -> the indexes of the reports with its cases: a row says who made them
        self._sources: dict[tuple, set[int]] = {}
        for i, report in enumerate(reports):
            for case in report_records(report):
                self._sources.setdefault((case.backend, case.domain, case.op, case.version), set()).add(i)
                if case.outcome == XFAIL and isinstance(case.expected, dict) and case.expected.get("reason"):
                    self._reasons.setdefault((case.backend, case.domain, case.op, case.version), set()).add(
                        cut_at_word(" ".join(str(case.expected["reason"]).split()), REASON_LENGTH))
        self._coverage: dict[tuple, dict[str, dict]] = {}  # (domain, op, version) -> backend -> entry
        for report in reports:
            for (backend, domain, op, since), entry in report_coverage(report).items():
                self._coverage.setdefault((domain, op, since), {})[str(backend)] = entry

    def has_page(self, domains: tuple[str, ...], op: str) -> str:
        """The scoreboard page of the op ("" when the reports have no case of it, or the site has
        no scoreboard)."""
        if not self.linked:
            return ""
        for domain in domains:
            if (domain, op) in self._ops:
                return scoreboard_page(domain, op)
        return ""

    def version(self, domains: tuple[str, ...], op: str, since: int) -> VersionConformance | None:
        key = next(((d, op, since) for d in domains if (d, op, since) in self.matrix.cells), None)
        if key is None:
            return None
        bindings = self.matrix.cells[key]
        rows, lines, more = [], [], []
        for runtime in sorted({r for cells in bindings.values() for r in cells}):
            groups: dict[str, list[tuple[str, int]]] = {}
            for label, cells in bindings.items():
                cell = cells.get(runtime)
                if cell is None:
                    continue
                # nothing the runtime answered: the converter's when it failed on any case, else opkit's
                outcome = cell.outcome if cell.tested else (UNCONVERTED if cell.counts.get(UNCONVERTED) else UNTESTED)
                count = cell.counts.get(outcome, 0) if outcome != PASS else cell.counts.get(PASS, 0)
                groups.setdefault(outcome, []).append((label, count or cell.total))
            if not groups:
                continue
            version = str(self.matrix.versions.get(runtime, {}).get("version") or "")
            name = safe_inline(f"{runtime} {version}" if version and version != "?" else runtime) + self._dated(runtime, key)
            findings = findings_page(runtime) if runtime in self._found and self.linked else ""
            failing = "; ".join(f"{o}: {_group(groups[o])}" for o in SEVERITY if o in groups and o in SHOWN_FAILING)
            reasons = sorted(self._reasons.get((runtime,) + key, ()))
            expected = _group(groups.get(XFAIL, []))
            if reasons and expected != "-":
                expected += ": " + "; ".join(safe_inline(r) for r in reasons[:REASONS_SHOWN]) + (
                    f" (and {len(reasons) - REASONS_SHOWN} more)" if len(reasons) > REASONS_SHOWN else "")
            unsupported = _group(groups.get(UNSUPPORTED, []))
            if groups.get(UNCONVERTED):  # the converter in front of the runtime could not translate them
                unconverted = f"unconverted (the converter's): {_group(groups[UNCONVERTED])}"
                unsupported = unconverted if unsupported == "-" else f"{unsupported}; {unconverted}"
            rows.append(RuntimeRow(name, _group(groups.get(PASS, [])), failing or "-", expected,
                                   unsupported, _group(groups.get(UNTESTED, [])),
                                   doc_link("findings", findings) if findings else ""))
            found = self._causes(runtime, key)
            for c in found[:FAILING_SHOWN]:
                lines.append(CauseLine(safe_inline(runtime), c.outcome, safe_inline(c.signature), c.cases,
                                       c.feature, bundle_link(self.root, c.example.get("repro")) if self.linked else ""))
            if len(found) > FAILING_SHOWN:
                more.append((safe_inline(runtime), len(found) - FAILING_SHOWN, findings))
        if not rows:
            return None
        return VersionConformance(tuple(rows), tuple(lines), tuple(more), self._attributes(key), self._made(key))

    def _behind(self, key: tuple, runtime: str | None = None) -> list[int]:
        """The indexes of the reports behind a version's rows (one runtime's, or every runtime's)."""
        return sorted({i for (r, *k), found in self._sources.items() if tuple(k) == key
                       and (runtime is None or r == runtime) for i in found})

    def _dated(self, runtime: str, key: tuple) -> str:
        """After the runtime's name: the date of its reports, and "older report" when one was not
        made by the code rendering the page (the list under the table says more)."""
        from .scoreboard import report_age

        dates, stale = report_age([self._reports[i] for i in self._behind(key, runtime)])
        text = f" ({', '.join(dates)})" if dates else ""
        return text + (" **older report**" if stale else "")

    def _made(self, key: tuple) -> tuple[str, ...]:
        """Who made each report behind the version's rows (``scoreboard.provenance``)."""
        from .scoreboard import provenance

        return tuple(provenance(self._reports[i]) for i in self._behind(key))

    def _attributes(self, key: tuple) -> AttributeTable | None:
        """The version's attribute-pair coverage table, or None when no report has it."""
        entries = self._coverage.get(key)
        if not entries:
            return None
        runtimes = sorted(entries)
        names: dict[str, list[str]] = {}  # attribute -> its levels (the first report that names it)
        for runtime in runtimes:
            for attr in entries[runtime].get("attributes") or ():
                names.setdefault(str(attr.get("name")), [str(v) for v in attr.get("levels") or ()])
        rows = []
        for name, levels in names.items():
            cells = []
            for runtime in runtimes:
                attr = next((a for a in entries[runtime].get("attributes") or () if str(a.get("name")) == name), None)
                cells.append("-" if attr is None else
                             f"{_ratio(attr.get('values_reached'), len(attr.get('levels') or ()))}, "
                             f"pairs {_ratio(attr.get('pairs_reached'), attr.get('pairs'))}")
            rows.append((safe_inline(name), ", ".join(f"`{v}`" if _PLAIN_LABEL.match(v) else safe_inline(v)
                                                       for v in levels), tuple(cells)))
        totals, missing, more = [], [], []
        for runtime in runtimes:
            entry = entries[runtime]
            values, pairs = entry.get("values") or (0, 0), entry.get("pairs") or (0, 0)
            totals.append(f"{_ratio(*values[:2])}, pairs {_ratio(*pairs[:2])}")
            gaps = list(entry.get("missing_values") or ()) + list(entry.get("missing_pairs") or ())
            for gap in gaps[:MISSING_SHOWN]:
                missing.append((safe_inline(runtime), safe_inline(gap.get("what", "")), safe_inline(gap.get("why", ""))))
            more_in_report = entry.get("missing_more")
            rest = max(len(gaps) - MISSING_SHOWN, 0) + (more_in_report if isinstance(more_in_report, int) else 0)
            if rest > 0:
                more.append((safe_inline(runtime), rest))
        return AttributeTable(tuple(safe_inline(r) for r in runtimes), tuple(rows), tuple(totals), tuple(missing),
                              tuple(more))

    def _causes(self, runtime: str, key: tuple) -> list:
        from ..results.causes import causes

        domain, op, since = key
        cases = self._cases.get((runtime, domain, op, since), [])
        return causes(cases, outcomes=self._charged) if cases else []
