"""Provenance of conformance reports: a report records when its run started and a fingerprint of
the code that decided its verdicts (opkit.core.code_fingerprint), and every page showing a report's
results says who made it, warning when that was not the code rendering the page."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from opkit.core import code_fingerprint as fp
from opkit.core.project import PACKAGE_DIR, builtin_root
from opkit.emit import findings, scoreboard
from opkit.emit.op_conformance import OpConformance
from opkit.results.record import CaseRecord
from opkit.results.report import build_report, environment, validate_report

OTHER_CODE = "0123456789ab"


# -- the fingerprint


@pytest.fixture
def tree(tmp_path):
    """A small copy of the package and the specs: opkit/ with a verdict-deciding file and the parts
    that only render, specs/ with a spec."""
    pkg, specs = tmp_path / "opkit", tmp_path / "specs"
    for rel in ("__init__.py", "cli.py", "core/values.py", "results/verdicts.py", "emit/scoreboard.py",
                "commands/gen.py", "templates/docs/page.md.j2", "core/__pycache__/values.cpython-311.pyc",
                "core/notes.txt", "_builtin/generated/kernels/abs.py", "results/audit.py"):
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(f"# {rel}\n")
    (specs / "ai.onnx").mkdir(parents=True)
    (specs / "ai.onnx" / "Abs.yaml").write_text("name: Abs\n")
    return str(pkg), str(specs)


def test_the_fingerprint_is_stable_and_short(tree):
    pkg, specs = tree
    first = fp.fingerprint(pkg, specs)
    assert re.fullmatch(r"[0-9a-f]{12}", first)
    assert fp.fingerprint(pkg, specs) == first
    # the running opkit's: cached per process, and what a fresh computation gives
    assert fp.code_fingerprint() == fp.code_fingerprint()
    assert fp.code_fingerprint() == fp.fingerprint(PACKAGE_DIR, os.path.join(builtin_root(), "specs"))


@pytest.mark.parametrize("changed", ["core/values.py", "results/verdicts.py", "__init__.py"])
def test_a_verdict_deciding_file_changes_the_fingerprint(tree, changed):
    pkg, specs = tree
    before = fp.fingerprint(pkg, specs)
    with open(os.path.join(pkg, changed), "a") as f:
        f.write("x = 1\n")
    assert fp.fingerprint(pkg, specs) != before


def test_a_spec_changes_the_fingerprint_and_so_do_new_or_renamed_files(tree):
    pkg, specs = tree
    before = fp.fingerprint(pkg, specs)
    spec = os.path.join(specs, "ai.onnx", "Abs.yaml")
    with open(spec, "a") as f:
        f.write("doc: x\n")
    edited = fp.fingerprint(pkg, specs)
    assert edited != before
    os.rename(spec, os.path.join(specs, "ai.onnx", "Neg.yaml"))  # same bytes, another op
    assert fp.fingerprint(pkg, specs) != edited
    renamed = fp.fingerprint(pkg, specs)
    with open(os.path.join(pkg, "core", "new.py"), "w") as f:
        f.write("")
    assert fp.fingerprint(pkg, specs) != renamed


def test_rendering_parts_caches_and_other_files_do_not_count(tree):
    pkg, specs = tree
    before = fp.fingerprint(pkg, specs)
    for rel in ("cli.py", "emit/scoreboard.py", "commands/gen.py", "templates/docs/page.md.j2",
                "core/__pycache__/values.cpython-311.pyc", "core/notes.txt", "_builtin/generated/kernels/abs.py",
                "results/audit.py"):  # the audit judges causes when a page shows them, after the run
        with open(os.path.join(pkg, rel), "a") as f:
            f.write("changed = True\n")
    with open(os.path.join(specs, "ai.onnx", ".Abs.yaml.swp"), "w") as f:
        f.write("x")
    assert fp.fingerprint(pkg, specs) == before


def test_the_place_does_not_count(tree, tmp_path):
    """A checkout, a clone elsewhere and a wheel (specs under opkit/_builtin/) hash the same."""
    pkg, specs = tree
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(os.path.dirname(pkg), elsewhere)
    assert fp.fingerprint(str(elsewhere / "opkit"), str(elsewhere / "specs")) == fp.fingerprint(pkg, specs)
    wheel_specs = os.path.join(pkg, "_builtin", "specs")
    shutil.copytree(specs, wheel_specs)
    assert fp.fingerprint(pkg, wheel_specs) == fp.fingerprint(pkg, specs)


# -- the report


def _record(backend="rt", outcome="pass"):
    return CaseRecord(backend=backend, suite="differential", op="Trilu", domain="ai.onnx", version=14,
                      types={"T": "tensor(float)"}, example="differential", outcome=outcome, message="")


def test_a_built_report_carries_its_start_and_code():
    target = environment([{"name": "rt", "version": "1.0"}], 0)
    report = build_report([_record()], target, {"suites": ["differential"]}, 3.0)
    created = report["target"]["created"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created)
    assert report["target"]["code"] == fp.code_fingerprint()
    assert validate_report(report) == []
    # optional: a report made before them is still valid; present, they must have their form
    old = {**report, "target": {k: v for k, v in report["target"].items() if k not in ("created", "code")}}
    assert validate_report(old) == []
    bad = {**report, "target": {**report["target"], "code": "<b>x</b>", "created": "yesterday"}}
    problems = validate_report(bad)
    assert any("code" in p for p in problems) and any("created" in p for p in problems)


def test_the_report_keeps_what_its_caller_recorded():
    target = {"backends": [], "created": "2026-01-02T03:04:05Z", "code": OTHER_CODE}
    report = build_report([], target, {}, 1.0)
    assert report["target"]["created"] == "2026-01-02T03:04:05Z" and report["target"]["code"] == OTHER_CODE


# -- the pages


def _report(code=None, created="2026-11-29T03:10:00Z", path="conformance/reports/rt-sweep.json"):
    target = {"backends": [{"name": "rt", "version": "1.0"}], "opkit": "0.1.0", "seed": 0}
    if code is not None:
        target["code"] = code
    if created is not None:
        target["created"] = created
    cases = [_record().to_json(), _record(outcome="mismatch").to_json()]
    return {"format": "opkit-conformance-report/1", "_path": path, "target": target,
            "settings": {"max_examples": 10}, "cases": cases}


def _pages(report) -> dict[str, str]:
    """Every page that shows the report's results: the op page's row, the scoreboard, the findings."""
    section = OpConformance("/nowhere", [report]).version(("ai.onnx",), "Trilu", 14)
    pages = {"op page row": section.rows[0].runtime + "\n" + "\n".join(section.reports)}
    pages.update(scoreboard.render("/nowhere", [report]))
    pages.update(findings.render("/nowhere", [report], ()))
    return pages


def test_a_report_of_this_code_shows_who_made_it_without_a_warning():
    pages = _pages(_report(code=fp.code_fingerprint()))
    assert set(pages) >= {"op page row", "generated/docs/scoreboard/index.md",
                          "generated/docs/scoreboard/op-ai.onnx-Trilu.md", "generated/docs/scoreboard/runtime-rt.md",
                          "generated/docs/findings/rt.md"}
    line = f"report made by opkit 0.1.0 (code {fp.code_fingerprint()}) on 2026-11-29"
    for name, text in pages.items():
        assert line in text, name
        assert "rt 1.0" in text, name
        assert scoreboard.STALE not in text and scoreboard.UNRECORDED not in text, name
    assert pages["op page row"].splitlines()[0] == "rt 1.0 (2026-11-29)"  # dated, no "older report"


def test_the_op_page_row_flags_an_older_report_and_the_list_says_why():
    stale = _pages(_report(code=OTHER_CODE))["op page row"].splitlines()
    assert stale[0] == "rt 1.0 (2026-11-29) **older report**"
    assert scoreboard.STALE in stale[1]


def test_a_report_of_other_code_says_so():
    for name, text in _pages(_report(code=OTHER_CODE)).items():
        assert f"report made by opkit 0.1.0 (code {OTHER_CODE}) on 2026-11-29" in text, name
        assert ("**made by an older opkit than the one that rendered this page**; re-run "
                "`opkit test --backend rt --max-examples 10 --report conformance/reports/rt-sweep.json` to refresh") in text, name


def test_the_refresh_command_repeats_the_reports_own_settings():
    """A re-run with other settings is another sweep: the command names the suites, examples, time
    limit and seed the report was made with, where they are not opkit test's defaults."""
    from opkit.emit.scoreboard import rerun_command

    report = _report(code=OTHER_CODE)
    report["settings"] = {"suites": ["differential", "robustness"], "max_examples": 20, "timeout_s": 2.5, "ops": None}
    report["target"]["seed"] = 7
    assert rerun_command(report, "rt") == ("`opkit test --backend rt --suite differential --suite robustness "
                                           "--max-examples 20 --timeout 2.5 --seed 7 "
                                           "--report conformance/reports/rt-sweep.json`")
    report["settings"] = {"suites": ["examples", "properties", "differential", "robustness", "lowerings"],
                          "max_examples": 100, "timeout_s": 10.0}
    report["target"]["seed"] = 0
    assert rerun_command(report, "rt") == "`opkit test --backend rt --report conformance/reports/rt-sweep.json`"


def test_a_report_without_code_or_date_says_it_did_not_record_them():
    for name, text in _pages(_report(created=None)).items():
        assert "report made by opkit 0.1.0 (code not recorded) on an unrecorded date" in text, name
        assert "**made by an opkit that did not record its code or date**" in text, name
        assert scoreboard.STALE not in text, name


def test_the_text_is_the_reports_alone():
    """Foreign text in the fields is escaped, and nothing but "same code or not" comes from the
    rendering opkit: the same report renders the same under any other code."""
    report = _report(code="<script>|x", path="conformance/reports/rt-sweep.json")
    report["target"]["opkit"] = "1.0 | {download}`x </etc/passwd>`"
    text = scoreboard.made_by(report, "rt")
    assert "<script>" not in text and "{download}`" not in text and "\\|" in text
    assert scoreboard.made_by(report, "rt", "aaaaaaaaaaaa") == scoreboard.made_by(report, "rt", "bbbbbbbbbbbb")
    odd = scoreboard.made_by({**report, "_path": "reports/a b`.json"}, "rt")
    assert "`opkit test" not in odd  # a path that cannot sit in inline code is shown as escaped text


# -- the adapters a report's code covers


def _adapters(tree):
    pkg, specs = tree
    for name in ("tract_backend.py", "openvino_backend.py", "onnxruntime.py"):
        path = os.path.join(pkg, "backends", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"# {name}\n")
    return pkg, specs


def test_an_adapter_counts_only_for_the_reports_that_used_it(tree):
    pkg, specs = _adapters(tree)
    tract, openvino = ("opkit/backends/tract_backend.py",), ("opkit/backends/openvino_backend.py",)
    before = {scope: fp.fingerprint(pkg, specs, scope) for scope in (None, tract, openvino, ())}
    with open(os.path.join(pkg, "backends", "tract_backend.py"), "a") as f:
        f.write("x = 1\n")
    after = {scope: fp.fingerprint(pkg, specs, scope) for scope in before}
    assert after[tract] != before[tract] and after[None] != before[None]  # the full code: as before scopes
    assert after[openvino] == before[openvino] and after[()] == before[()]
    # a default second opinion's adapter (onnxruntime) counts for every report
    with open(os.path.join(pkg, "backends", "onnxruntime.py"), "a") as f:
        f.write("x = 1\n")
    assert fp.fingerprint(pkg, specs, openvino) != after[openvino]


def test_a_runs_scope_is_the_adapters_of_its_runtimes():
    assert fp.adapter_scope(["opkit.backends.tract_backend:TractBackend", "opkit.backends.onnxruntime:OnnxRuntimeBackend",
                             "opkit.backends.onnx_reference:OnnxReferenceBackend", "mypkg.rt:Backend"]) == \
        ("opkit/backends/tract_backend.py",)


def test_a_report_is_current_for_the_code_of_its_scope():
    scope = ["opkit/backends/tract_backend.py"]
    report = _report(code=fp.code_fingerprint(tuple(scope)))
    report["target"]["code_scope"] = scope
    assert scoreboard.made_by_this_code(report)
    assert scoreboard.STALE not in scoreboard.made_by(report, "rt")
    del report["target"]["code_scope"]  # read as a report of the whole code, which differs
    assert fp.code_fingerprint(tuple(scope)) != fp.code_fingerprint()
    assert not scoreboard.made_by_this_code(report)
    # build_report computes a scoped code when the run recorded its scope
    built = build_report([], {"backends": [], "code_scope": scope}, {}, 1.0)
    assert built["target"]["code"] == fp.code_fingerprint(tuple(scope))
