"""Version selection: ``--op Add-14``, ``--op Add@13``, ``--op Add@7..13`` and ``--opset N``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from opkit.conformance import harness
from opkit.run.cluster_units import units
from opkit.run.selection import SelectionError, narrow_to_opsets, parse_opsets, parse_selector, selected_versions

ADD = harness.load_op("ai.onnx", "Add")  # versions 1, 6, 7, 13, 14


def _versions(text: str) -> tuple[int, ...]:
    return selected_versions(parse_selector(text), ADD)


def test_selectors_name_versions_by_since_and_by_opset():
    assert [v.since for v in ADD.versions] == [1, 6, 7, 13, 14]
    assert _versions("Add") == (1, 6, 7, 13, 14)
    assert _versions("Add-14") == (14,)
    assert _versions("Add@12") == (7,)  # the version a model of opset 12 uses
    assert _versions("Add@3..7") == (1, 6, 7)
    assert _versions("Add@13..") == (13, 14)
    assert _versions("Add@..6") == (1, 6)
    assert parse_selector("com.microsoft::Trilu-1").domain == "com.microsoft"


@pytest.mark.parametrize("text, says", [
    ("Add-15", "no version introduced in opset 15 (its versions: 1, 6, 7, 13, 14)"),
    ("Add@0", "does not exist at opset 0"),
])
def test_a_selector_naming_no_version_says_which_exist(text, says):
    with pytest.raises(SelectionError, match=r".*" + says.replace("(", r"\(").replace(")", r"\)")):
        _versions(text)


@pytest.mark.parametrize("text", ["Add@", "Add@x", "Add-", "Add@9..3", "Add 14", "-14"])
def test_malformed_selectors_are_usage_errors(text):
    with pytest.raises(SelectionError, match="--op"):
        parse_selector(text)


def test_opset_keeps_the_version_in_force():
    assert parse_opsets(["12", "ai.onnx.ml:3"]) == {"ai.onnx": 12, "ai.onnx.ml": 3}
    assert narrow_to_opsets(ADD, (1, 6, 7, 13, 14), {"ai.onnx": 12}) == (7,)
    assert narrow_to_opsets(ADD, (13, 14), {"ai.onnx": 12}) == ()  # Add-7 was not selected
    assert narrow_to_opsets(ADD, (1, 6), {"com.microsoft": 1}) == (1, 6)  # another domain's opset
    for bad in (["0"], ["x"], ["12", "13"]):
        with pytest.raises(SelectionError, match="--opset"):
            parse_opsets(bad)


def test_cluster_tasks_follow_the_selection():
    tasks = units([ADD], selected={ADD.path: (7, 14)})
    # newest first, each with the versions it supersedes (Add-7 is Add-14 with fewer types)
    assert [t.versions for t in tasks] == [(14, 7)]
    assert [t.lowerings for t in tasks] == [True]  # the lowerings go with the last one
    tasks = units([ADD], selected={ADD.path: (1, 14)})  # Add-1 has its broadcast attribute: a task of its own
    assert [t.versions for t in tasks] == [(14,), (1,)] and [t.lowerings for t in tasks] == [False, True]
    assert sorted(s for t in units([ADD]) for s in t.versions) == [1, 6, 7, 13, 14]


def _run(tmp_path, *args):
    report = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "opkit", "test", "--backend", "reference", "--suite", "differential",
                           "--max-examples", "2", "--no-repro", "-q", "--report", str(report), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    return proc, (json.loads(report.read_text()) if report.exists() else None)


def test_opkit_test_runs_only_the_selected_versions(tmp_path):
    proc, report = _run(tmp_path, "--op", "Add@12..13", "--op", "Trilu-14")
    assert proc.returncode == 0, proc.stderr
    ran = {(c["op"], c["version"]) for c in report["cases"]}
    assert ran == {("Add", 7), ("Add", 13), ("Trilu", 14)}
    # Trilu-14 exists in ai.onnx only: com.microsoft's Trilu is not selected, nor said to be left
    # out at an --opset nobody gave ("in force at --opset None")
    assert "left out" not in proc.stderr, proc.stderr


def test_opset_leaves_out_named_ops_that_do_not_exist_there(tmp_path):
    proc, report = _run(tmp_path, "--op", "Add", "--op", "Trilu", "--opset", "13")
    assert proc.returncode == 0, proc.stderr
    assert {(c["domain"], c["op"], c["version"]) for c in report["cases"]} == {
        ("ai.onnx", "Add", 13), ("com.microsoft", "Trilu", 1)}
    assert "Trilu: left out, no selected version is in force at --opset 13" in proc.stderr


def test_a_version_that_does_not_exist_is_a_usage_error(tmp_path):
    proc, _ = _run(tmp_path, "--op", "Add-15")
    assert proc.returncode == 2
    assert "Add has no version introduced in opset 15" in proc.stderr
    assert "Traceback" not in proc.stderr
