"""Attribute-pair coverage (issue #29, part 2): the levels and the pairwise covering array
(opkit.cases.covering), pinned draws (cases(..., pinned=...)), the rows run by the differential
suite (opkit.conformance.attribute_pairs), their coverage in the report (also from -j pool
processes) and the table on the op page."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opkit.cases import cases
from opkit.cases.case import ABSENT
from opkit.cases.covering import Levels, all_pairs, attribute_levels, covering_rows, pairs_of
from opkit.spec.load import load_spec_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spec(op: str, domain: str = "ai.onnx"):
    spec, _ = load_spec_file(os.path.join(ROOT, "specs", domain, f"{op}.yaml"))
    return spec


def _version(op: str, since: int):
    spec = _spec(op)
    return spec, next(v for v in spec.versions if v.since == since)


# -- the covering array

_LEVEL_SETS = st.lists(st.integers(1, 6), min_size=0, max_size=7).map(
    lambda sizes: tuple(Levels(f"a{i}", tuple(range(n)), "enumerated") for i, n in enumerate(sizes)))


@settings(max_examples=150, deadline=None)
@given(_LEVEL_SETS)
def test_rows_cover_every_value_and_pair(levels):
    array = covering_rows(levels, max_rows=10_000)
    assert array.left_out == ()
    for row in array.rows:
        assert [name for name, _ in row] == [lv.name for lv in levels]
        assert all(value in lv.values for (_, value), lv in zip(row, levels))
    seen_values = {item for row in array.rows for item in row}
    assert seen_values == {(lv.name, v) for lv in levels for v in lv.values}
    seen_pairs = {pair for row in array.rows for pair in pairs_of(row)}
    assert set(all_pairs(levels)) <= seen_pairs
    # no worse than the trivial array (every combination of the two largest level sets, once each)
    sizes = sorted((len(lv.values) for lv in levels), reverse=True)
    if len(sizes) >= 2:
        assert len(array.rows) <= sizes[0] * sizes[1] * max(1, len(sizes) - 1)
    # deterministic
    assert covering_rows(levels, max_rows=10_000) == array


@settings(max_examples=50, deadline=None)
@given(_LEVEL_SETS, st.integers(1, 8))
def test_capped_rows_name_the_pairs_left_out(levels, cap):
    array = covering_rows(levels, max_rows=cap)
    assert len(array.rows) <= cap
    covered = {pair for row in array.rows for pair in pairs_of(row)}
    assert set(array.left_out) == set(all_pairs(levels)) - covered


def test_pairwise_is_smaller_than_all_combinations():
    # Resize-11: 2 x 4 x 6 x 3 = 144 combinations; pairwise needs at least 6 x 4 = 24 rows
    _, version = _version("Resize", 11)
    levels = attribute_levels(version)
    assert [lv.name for lv in levels] == ["exclude_outside", "nearest_mode", "coordinate_transformation_mode", "mode"]
    assert 24 <= len(covering_rows(levels).rows) <= 30


def test_levels_from_the_spec():
    _, cumsum = _version("CumSum", 14)
    assert [(lv.name, lv.values, lv.kind) for lv in attribute_levels(cumsum)] == [
        ("reverse", (0, 1), "flag"), ("exclusive", (0, 1), "flag")]
    # a rule that changes branch: Gemm's `beta != 0 or ...` gives 0 and a value across it; the default 1
    _, gemm = _version("Gemm", 13)
    assert {lv.name: lv.values for lv in attribute_levels(gemm)}["beta"] == (1.0, 0.0, 0.5)
    # a comparison that must hold admits only its side: Conv's `group >= 1` leaves 1 only (no level)
    _, conv = _version("Conv", 22)
    assert [lv.name for lv in attribute_levels(conv)] == ["auto_pad"]
    # enumerated values honour the domain; axis, type and list attributes are left out
    _, scatter = _version("ScatterElements", 18)
    assert [(lv.name, lv.values) for lv in attribute_levels(scatter)] == [
        ("reduction", ("none", "add", "mul", "max", "min"))]


def test_optional_attribute_without_a_default_gets_absent():
    from opkit.cases.covering import _levels
    from opkit.spec.model import Attribute, ValueDomain

    attr = Attribute("k", "int", domain=ValueDomain(min=1, max=3))
    assert _levels(attr, ()).values == (1, 3, ABSENT)
    assert _levels(Attribute("k", "int", required=True, domain=ValueDomain(min=1, max=3)), ()).values == (1, 3)


# -- pinned draws


def _drawn(strategy, n=25):
    out = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(strategy)
    def collect(case):
        out.append(case)

    collect()
    return out


def _effective(case, name):
    return case.kernel_attributes().get(name)


def test_pinned_draws_honour_the_pins():
    spec, trilu = _version("Trilu", 14)
    drawn = _drawn(cases(spec, trilu, types={"T": "tensor(float)"}, pinned={"upper": 0}))
    assert drawn and all(dict(c.attributes).get("upper") == 0 for c in drawn)
    # a family hook sets CumSum's flags itself: draws with other values are rejected
    spec, cumsum = _version("CumSum", 14)
    drawn = _drawn(cases(spec, cumsum, pinned={"reverse": 1, "exclusive": 1}), 40)
    assert drawn and all(_effective(c, "reverse") == 1 and _effective(c, "exclusive") == 1 for c in drawn)
    drawn = _drawn(cases(spec, cumsum, pinned={"reverse": 1, "exclusive": 1}, pin_hooks=True))
    assert drawn and all(_effective(c, "reverse") == 1 and _effective(c, "exclusive") == 1 for c in drawn)
    # ABSENT pins "left off": the default applies
    spec, resize = _version("Resize", 11)
    drawn = _drawn(cases(spec, resize, types={"T1": "tensor(float)", "T2": "tensor(float)"},
                         pinned={"mode": "linear", "nearest_mode": "floor"}, pin_hooks=True))
    assert drawn and all(_effective(c, "mode") == "linear" and _effective(c, "nearest_mode") == "floor"
                         for c in drawn)


def test_unpinned_draws_are_unchanged():
    spec, trilu = _version("Trilu", 14)
    a = _drawn(cases(spec, trilu, types={"T": "tensor(float)"}))
    b = _drawn(cases(spec, trilu, types={"T": "tensor(float)"}, pinned={}))
    assert [c.describe() for c in a] == [c.describe() for c in b]
    assert {dict(c.attributes).get("upper", "absent") for c in a} != {0}


# -- the rows in a run, the report, the page


def _run(tmp_path, *args) -> dict:
    from opkit.cli import main

    path = tmp_path / "report.json"
    code = main(["test", "--backend", "reference", "--suite", "differential", "--max-examples", "3", "--no-repro",
                 "-q", "--report", str(path), *args])
    assert code == 0
    return json.loads(path.read_text())


def test_report_shows_every_value_and_pair_reached(tmp_path):
    from opkit.results.report import validate_report

    report = _run(tmp_path, "--op", "CumSum", "--op", "Trilu")
    assert validate_report(report) == []
    coverage = {(e["op"], e["version"]): e for e in report["attribute_coverage"] if e["domain"] == "ai.onnx"}
    # CumSum-11 is CumSum-14 with fewer types (conformance.superseded): its pairs are asked in 14
    assert set(coverage) == {("CumSum", 14), ("Trilu", 14)}
    cumsum = coverage[("CumSum", 14)]
    assert cumsum["backend"] == "reference" and cumsum["domain"] == "ai.onnx"
    assert cumsum["values"] == [4, 4] and cumsum["pairs"] == [4, 4] and cumsum["rows"] == [4, 4]
    assert [(a["name"], a["levels"], a["values_reached"], a["pairs"], a["pairs_reached"])
            for a in cumsum["attributes"]] == [("reverse", ["0", "1"], 2, 4, 4), ("exclusive", ["0", "1"], 2, 4, 4)]
    assert "missing_pairs" not in cumsum and "missing_values" not in cumsum
    assert coverage[("Trilu", 14)]["values"] == [2, 2] and coverage[("Trilu", 14)]["pairs"] == [0, 0]
    # coverage is not a skipped item
    assert all("attribute_coverage" not in s for s in report.get("skipped", []))


def test_coverage_travels_from_pool_processes(tmp_path):
    report = _run(tmp_path, "--op", "CumSum", "--op", "Trilu", "-j", "2")
    coverage = {(e["op"], e["version"]): (e["values"], e["pairs"]) for e in report["attribute_coverage"]
                if e["domain"] == "ai.onnx"}
    # CumSum-11's pairs are asked in CumSum-14, which computes it the same way (conformance.superseded)
    assert coverage == {("CumSum", 14): ([4, 4], [4, 4]), ("Trilu", 14): ([2, 2], [0, 0])}


def test_unreachable_rows_say_why(tmp_path):
    # Resize-18: scales with a keep_aspect_ratio_policy other than stretch is refused by ONNX inference
    report = _run(tmp_path, "--op", "Resize-18")
    entry = next(e for e in report["attribute_coverage"] if e["version"] == 18)
    assert entry["values"][0] == entry["values"][1]
    assert 0 < entry["pairs"][0] < entry["pairs"][1]
    missing = entry["missing_pairs"]
    assert all(m["why"] for m in missing)
    assert any("keep_aspect_ratio_policy" in m["what"] for m in missing)


def test_failing_rows_are_recorded_once_per_class():
    from opkit.conformance import attribute_pairs as ap
    from opkit.conformance.case_exec import Exec
    from opkit.results.outcomes import MISMATCH, PASS

    spec, cumsum = _version("CumSum", 14)

    from opkit.conformance.refusals import Refusals

    class FakeRunner(Refusals):
        seed, backend_name, results = 0, "fake", []
        _shrunk_classes: dict = {}

        def __init__(self):
            self.records, self.emitted, self.coverage = [], [], []

        def rank_plan(self, *a):
            return None

        def execute_differential(self, version, case):
            from opkit.cases.fixed import edge_cases  # noqa: F401 - the real harness decides validity
            from opkit.conformance import harness

            harness.expected_outputs(case)
            if _effective(case, "reverse") == 1:
                return Exec(MISMATCH, "Y: values differ", {"what": "values"})
            return Exec(PASS)

        def _record(self, spec, version, suite, example, types, ex, runs, duration, minimal=None):
            self.records.append((suite, example, ex.outcome, ex.details["attribute_pairs"]))

        def _emit(self, item):
            self.emitted.append(item)

    runner = FakeRunner()
    ap.run_attribute_pairs(runner, spec, cumsum, [{"T": "tensor(float)", "T2": "tensor(int64)"}])
    assert len(runner.records) == 1
    suite, example, outcome, details = runner.records[0]
    assert (suite, example, outcome) == ("differential", "attribute pairs", MISMATCH)
    assert details["row"]["reverse"] == "1" and details["rows_failing_alike"] == 2
    entry = runner.emitted[0]["attribute_coverage"]
    assert entry["pairs"] == [4, 4] and entry["failing_rows"] == 2


def _page(tmp_path, report):
    from opkit.emit import GenContext
    from opkit.emit import docs_pages as dp
    from opkit.spec.load import load_specs

    folder = tmp_path / "conformance" / "reports"
    folder.mkdir(parents=True)
    (folder / "rt.json").write_text(json.dumps(report))
    root = str(tmp_path)
    specs, _ = load_specs([os.path.join(ROOT, "specs", "ai.onnx", "CumSum.yaml")])
    ctx = GenContext(tuple(specs), root)
    return dp.render_page(ctx, specs[0], dp.load_reports(root))


def test_op_page_shows_the_coverage_table(tmp_path):
    report = _run(tmp_path, "--op", "CumSum")
    entry = next(e for e in report["attribute_coverage"] if e["version"] == 14)
    # foreign text in a report is escaped; a gap is listed with why
    entry["attributes"][0]["levels"][1] = "1|<b>"
    entry["pairs"] = [3, 4]
    entry["missing_pairs"] = [{"what": "reverse=1, exclusive=1", "why": "a rule excludes it: `x` | y"}]
    page = _page(tmp_path / "site", report)
    section = page.split("## CumSum - 14", 1)[1]
    section = section[section.index("Attribute coverage"):]
    assert "| Attribute | Levels | reference |" in section
    assert "| reverse | `0`, 1\\|\\<b\\> | 2/2, pairs 4/4 |" in section
    assert "| exclusive | `0`, `1` | 2/2, pairs 4/4 |" in section
    assert "| all | | 4/4, pairs 3/4 |" in section
    assert "- reference: reverse=1, exclusive=1: a rule excludes it: \\`x\\` \\| y" in section
    assert "<b>" not in section


def test_pairs_of_a_row_that_could_not_run_are_asked_again_alone():
    """A row no case could be made for loses every pair it holds, not only the excluded one: each
    pair no row that ran covers becomes a row of its own (Resize-19: 149 -> 160 of 161 pairs)."""
    from opkit.cases.covering import covering_array, pairs_of
    from opkit.conformance.attribute_pairs import _repair_rows

    _, version = _version("Resize", 19)
    array = covering_array(version)
    rows = list(array.rows)
    status = [(k != 0, "" if k else "a rule excludes it") for k in range(len(rows))]  # the first row failed
    repaired = _repair_rows(array, rows, status)
    reached = {p for (ran, _), row in zip(status, rows) if ran for p in pairs_of(row)}
    lost = [p for p in pairs_of(rows[0]) if p not in reached]
    assert lost and [tuple(r) for r in repaired] == [p for p in array.pairs() if p not in reached][:len(repaired)]
    assert all(len(r) == 2 for r in repaired) and set(map(tuple, repaired)) >= set(lost[:len(repaired)])
    # nothing to repair when every row ran
    assert _repair_rows(array, rows, [(True, "")] * len(rows)) == []
