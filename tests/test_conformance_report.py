"""`opkit test` end to end on Trilu: the report, its schema, exit codes, usage errors."""

from __future__ import annotations

import json

import pytest

from opkit.cli import main
from opkit.results.report import REPORT_SCHEMA, validate_report
from opkit.results.record import records
from opkit.results.report_text import summary_table


def run(*argv):
    return main(["test", *argv])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("r") / "report.json"
    code = run("--backend", "onnxruntime", "--op", "Trilu", "--max-examples", "5", "--report", str(path),
               "--no-repro", "-q", "--no-expectations")
    return code, json.loads(path.read_text())


def test_report_has_target_and_cases(report):
    code, data = report
    assert code == 1  # onnxruntime refuses 10 of Trilu-14's types
    target = data["target"]
    assert target["backends"][0]["name"] == "onnxruntime" and target["backends"][0]["version"]
    assert target["seed"] == 0 and target["machine"]["cpu_count"] >= 1
    assert {"opkit", "onnx", "numpy"} <= set(target)
    case = next(c for c in data["cases"] if c["suite"] == "differential" and c["types"] == {"T": "tensor(float)"})
    assert case["op"] == "Trilu" and case["domain"] == "ai.onnx" and case["version"] == 14
    assert case["outcome"] == "pass" and case["message"] == "" and case["examples_run"] >= 5
    bf16 = next(c for c in data["cases"] if c["suite"] == "differential" and c["types"] == {"T": "tensor(bfloat16)"})
    assert bf16["outcome"] == "unsupported" and "NOT_IMPLEMENTED" in bf16["message"]


def test_report_validates_against_its_schema(report):
    _, data = report
    assert validate_report(data) == []
    broken = dict(data, cases=[dict(data["cases"][0], outcome="bogus")])
    assert validate_report(broken)


def test_shipped_schema_matches(report):
    import os

    from opkit.results import report as mod

    path = os.path.join(os.path.dirname(mod.__file__), "report.schema.json")
    assert json.load(open(path)) == json.loads(json.dumps(REPORT_SCHEMA))


def test_expectations_make_it_pass(tmp_path):
    path = tmp_path / "r.json"
    code = run("--backend", "onnxruntime", "--op", "ai.onnx::Trilu", "--suite", "differential", "--max-examples",
               "5", "--report", str(path), "--no-repro", "-q")
    data = json.loads(path.read_text())
    assert code == 0, [c for c in data["cases"] if c["outcome"] not in ("pass", "xfail")]
    outcomes = {c["types"]["T"]: c["outcome"] for c in data["cases"]}
    assert sum(o == "xfail" for o in outcomes.values()) == 10
    assert sum(o == "pass" for o in outcomes.values()) == 6


def test_summary_table_lists_types(report):
    _, data = report
    table = summary_table(records(data["cases"]))
    assert "bfloat16" in table and "U" in table and "legend" in table


def test_unknown_backend_is_a_usage_error_with_hint(capsys):
    assert run("--backend", "onnxruntim", "--op", "Trilu") == 2
    assert "did you mean 'onnxruntime'" in capsys.readouterr().err


def test_unknown_op_is_a_usage_error(capsys):
    assert run("--backend", "onnxruntime", "--op", "Trilux") == 2
    assert "did you mean 'Trilu'" in capsys.readouterr().err


def test_missing_backend_package_names_it(capsys):
    assert run("--backend", "no_such_module_xyz:Backend", "--op", "Trilu") == 2
    assert "no_such_module_xyz" in capsys.readouterr().err


def test_crash_keeps_the_report_complete(tmp_path):
    path = tmp_path / "r.json"
    code = run("--backend", "test_conformance_fakes:Aborts", "--op", "ai.onnx::Trilu", "--suite", "differential",
               "--suite", "examples", "--max-examples", "3", "--report", str(path), "--no-repro", "-q")
    data = json.loads(path.read_text())
    assert code == 1
    diff = [c for c in data["cases"] if c["suite"] == "differential"]
    assert len(diff) == 16 and {c["outcome"] for c in diff} == {"crash"}
    assert len([c for c in data["cases"] if c["suite"] == "examples"]) == len(
        __import__("opkit.conformance.harness", fromlist=["x"]).load_op("ai.onnx", "Trilu").version(14).examples)
    assert validate_report(data) == []


def test_parallel_run_reports_the_same_cases(tmp_path):
    def cases(*extra):
        path = tmp_path / f"r{len(extra)}.json"
        code = run("--backend", "onnxruntime", "--op", "Trilu", "--suite", "examples", "--report", str(path),
                   "--no-repro", "-q", *extra)
        data = json.loads(path.read_text())
        return code, [(c["domain"], c["op"], c["example"], c["types"].get("T"), c["outcome"]) for c in data["cases"]]

    serial = cases()
    parallel = cases("-j", "2")
    assert serial == parallel and serial[0] == 0
