"""What opkit could not test is its own outcome, 'untested': never charged to the backend."""

from __future__ import annotations

import json

import pytest

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.results.record import CaseRecord, RecordError, records
from opkit.results.report import build_report, validate_report
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker_engine import InProcess


def _rejects_everything(*args, **kwargs):
    from opkit.kernels import KernelValidationError

    raise KernelValidationError("Relu-14 [test]: this oracle accepts no input")


@pytest.fixture
def oracle_rejecting_relu():
    harness.set_oracle("ai.onnx", "Relu", 14, _rejects_everything)
    yield
    harness.set_oracle("ai.onnx", "Relu", 14, None)


def test_no_valid_draw_is_untested_not_an_error_of_the_backend(oracle_rejecting_relu):
    spec = harness.load_op("ai.onnx", "Relu")
    runner = Runner(BackendRunner(InProcess(resolve("reference"))), max_examples=5, seed=1, siblings=0)
    runner.run_differential(spec, spec.version(14), [{"T": "tensor(float)"}])
    (rec,) = runner.results
    assert rec.outcome == "untested"
    assert rec.details["stage"] == "generate"
    assert "could not draw valid inputs" in rec.message
    assert rec.rejected > 0  # the final check's rejections are counted in the record
    assert rec.repro is None  # no repro bundle for something the backend never ran


def test_untested_does_not_fail_a_run_but_a_run_with_nothing_tested_does():
    def case(outcome):
        return CaseRecord("rt", "differential", "Relu", "ai.onnx", 14, {"T": "tensor(float)"}, "differential",
                          outcome)

    target = {"backends": [], "opkit": "0", "onnx": "0", "numpy": "0", "seed": 0,
              "machine": {"platform": "x", "cpu_count": 1}}
    mixed = build_report([case("pass"), case("untested")], target, {}, 0.0, require_cases=True)
    assert mixed["summary"]["ok"] is True
    assert mixed["summary"]["outcomes"] == {"pass": 1, "untested": 1}
    assert validate_report(mixed) == []
    only_untested = build_report([case("untested")], target, {}, 0.0, require_cases=True)
    assert only_untested["summary"]["ok"] is False
    failing = build_report([case("mismatch"), case("untested")], target, {}, 0.0, require_cases=True)
    assert failing["summary"]["ok"] is False


def test_cli_exit_code_ignores_untested_cases(tmp_path, oracle_rejecting_relu, capsys):
    from opkit.cli import main

    path = tmp_path / "r.json"
    # Relu-14's oracle rejects everything (untested); Relu-13 and the examples still test the backend
    code = main(["test", "--backend", "reference", "--op", "Relu", "--suite", "differential", "--max-examples", "3",
                 "--report", str(path), "--no-repro", "-q", "-j", "1"])
    report = json.loads(path.read_text())
    outcomes = {(c["version"], c["outcome"]) for c in report["cases"]}
    assert (14, "untested") in outcomes
    assert any(o == "pass" for _, o in outcomes)
    assert code == 0, capsys.readouterr()
    assert "opkit could not test these (not charged to the backend)" in capsys.readouterr().out


def test_compare_keeps_untested_bindings_out_of_agreement(tmp_path):
    from opkit.results.matrix import build_matrix
    from opkit.commands.compare import render_text

    cases = [CaseRecord("rt", "differential", "Relu", "ai.onnx", 14, {"T": "tensor(float)"}, "differential",
                        "untested", "could not draw valid inputs").to_json(),
             CaseRecord("rt", "differential", "Relu", "ai.onnx", 14, {"T": "tensor(double)"}, "differential",
                        "pass").to_json()]
    matrix = build_matrix([{"cases": cases, "target": {"backends": [{"name": "rt", "version": "1"}]}}])
    text = render_text(matrix)
    assert "rt: agrees on 1/1 op x type bindings" in text  # the untested binding is no claim either way


def test_case_record_round_trips_and_refuses_what_is_not_one():
    rec = CaseRecord("rt", "differential", "Relu", "ai.onnx", 14, {"T": "tensor(float)"}, "differential",
                     "mismatch", "values differ", 3, 0.5, details={"what": "values"}, rejected=2)
    assert CaseRecord.from_json(rec.to_json()) == rec
    assert "details" in rec.to_json() and "repro_error" not in rec.to_json()  # optional keys only when set
    with pytest.raises(RecordError, match="lacks 'outcome'"):
        CaseRecord.from_json({k: v for k, v in rec.to_json().items() if k != "outcome"}, "x")
    with pytest.raises(RecordError, match="'version' must be an integer"):
        CaseRecord.from_json(dict(rec.to_json(), version="14"), "x")
    with pytest.raises(RecordError, match="not one of"):
        CaseRecord.from_json(dict(rec.to_json(), outcome="broken"), "x")
    with pytest.raises(RecordError, match=r"cases\[1\]"):
        records([rec.to_json(), {"op": "Relu"}], "r.json")


def test_older_reports_generation_errors_are_read_as_untested():
    from opkit.results.matrix import build_matrix

    old = [CaseRecord("rt", "differential", "Conv", "ai.onnx", 22, {"T": "tensor(float)"}, "differential",
                      "error", "could not draw valid inputs (60 rejected ...)", details={"stage": "generate"}).to_json(),
           CaseRecord("opkit", "differential", "Einsum", "ai.onnx", 12, {}, "differential", "error",
                      "opkit cannot generate inputs").to_json()]
    matrix = build_matrix([{"cases": old, "target": {"backends": [{"name": "rt", "version": "1"}]}}])
    assert matrix.runtimes == ["rt"]  # the pseudo-backend 'opkit' is no runtime
    cell = matrix.cells[("ai.onnx", "Conv", 22)]["float"]["rt"]
    assert cell.outcome == "untested" and cell.tested == 0
