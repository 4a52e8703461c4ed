"""A second opinion on every finding: the failing case is run on other engines, and the report
says whether they side with opkit or with the runtime (opkit.conformance.second_opinion)."""

from __future__ import annotations

import json

import numpy as np

from opkit.results.record import CaseRecord
from opkit.results.report_text import failures_text
from opkit.results.report import validate_report
from opkit.results.verdicts import AGREES_WITH_OPKIT, AGREES_WITH_RUNTIME, ALSO_FAILS, CANNOT_RUN, DIFFERS_FROM_BOTH
from opkit.conformance.second_opinion import judge
from opkit.results.verdicts import needs_review
from opkit.conformance.worker_engine import Result


def _same(reference, actual):
    ok = len(reference) == len(actual) and all(np.array_equal(r, a) for r, a in zip(reference, actual))
    return None if ok else "values differ"


def _judge(outcome, result, runtime=None):
    return judge(outcome, (np.array([1, 2]),), runtime, result, _same, "engine").verdict


def test_verdicts():
    ok = lambda *outs: Result("ok", [np.array(o) for o in outs])  # noqa: E731
    assert _judge("mismatch", ok([1, 2]), [np.array([1, 3])]) == AGREES_WITH_OPKIT
    assert _judge("mismatch", ok([1, 3]), [np.array([1, 3])]) == AGREES_WITH_RUNTIME
    assert _judge("mismatch", ok([9, 9]), [np.array([1, 3])]) == DIFFERS_FROM_BOTH
    assert _judge("error", ok([1, 2])) == AGREES_WITH_OPKIT  # the input runs elsewhere: the error is the runtime's
    assert _judge("error", Result("error", None, "boom")) == ALSO_FAILS
    assert _judge("crash", Result("crash", None, "died")) == ALSO_FAILS
    assert _judge("mismatch", Result("error", None, "boom")) == CANNOT_RUN
    assert _judge("mismatch", Result("unsupported", None, "no kernel")) == CANNOT_RUN
    assert needs_review([{"backend": "a", "verdict": AGREES_WITH_OPKIT}, {"backend": "b", "verdict": ALSO_FAILS}])
    assert not needs_review([{"backend": "a", "verdict": AGREES_WITH_OPKIT}])


def _test(tmp_path, capsys, backend, *extra):
    from opkit.cli import main

    path = tmp_path / "r.json"
    code = main(["test", "--backend", backend, "--op", "ai.onnx::Trilu", "--suite", "differential",
                 "--max-examples", "3", "--max-bindings", "2", "--probe-limit", "0", "--report", str(path), "--no-repro", "-q", *extra])
    return code, json.loads(path.read_text()), capsys.readouterr()


def test_a_wrong_runtime_is_confirmed_by_the_evaluator(tmp_path, capsys):
    code, report, out = _test(tmp_path, capsys, "test_conformance_fakes:WrongValues", "--second-opinion", "onnx-reference")
    failures = [c for c in report["cases"] if c["outcome"] == "mismatch"]
    assert code == 1 and failures
    for case in failures:
        assert case["second_opinion"] == [{"backend": "onnx-reference", "verdict": AGREES_WITH_OPKIT}]
    assert report["summary"]["second_opinion"] == {AGREES_WITH_OPKIT: len(failures)}
    assert validate_report(report) == []
    assert "second opinion: onnx-reference agrees with opkit" in out.out


def test_a_second_opinion_that_computes_the_same_is_flagged_for_review(tmp_path, capsys):
    code, report, out = _test(tmp_path, capsys, "test_conformance_fakes:WrongValues",
                              "--second-opinion", "test_conformance_fakes:WrongValues2")
    failures = [c for c in report["cases"] if c["outcome"] == "mismatch"]
    assert failures and all(c["second_opinion"][0]["verdict"] == AGREES_WITH_RUNTIME for c in failures)
    assert report["summary"]["second_opinion"]["review"] == len(failures)
    assert "REVIEW: second opinion: test_conformance_fakes:WrongValues2 agrees with the runtime" in out.out
    assert "marked REVIEW" in out.err


def test_no_second_opinion_and_unknown_engines(tmp_path, capsys):
    code, report, _ = _test(tmp_path, capsys, "test_conformance_fakes:WrongValues", "--no-second-opinion")
    assert all("second_opinion" not in c for c in report["cases"]) and "second_opinion" not in report["summary"]
    from opkit.cli import main

    assert main(["test", "--backend", "onnxruntime", "--op", "Trilu", "--second-opinion", "no_such_mod:X"]) == 2
    assert "--second-opinion no_such_mod:X" in capsys.readouterr().err


def test_the_terminal_lines_name_each_engine():
    case = {"backend": "rt", "domain": "ai.onnx", "op": "Abs", "version": 13, "types": {"T": "tensor(float)"},
            "outcome": "mismatch", "suite": "differential", "example": "differential", "message": "m",
            "second_opinion": [{"backend": "onnx-reference", "verdict": AGREES_WITH_RUNTIME, "message": "x differs"}]}
    assert "REVIEW: second opinion: onnx-reference agrees with the runtime (x differs)" in failures_text(
        [CaseRecord(**case)])


def test_by_default_both_independent_engines_are_asked():
    """onnx.reference alone could not place 30% of another runtime's charged crashes (its own bugs
    and gaps): onnxruntime is asked too when installed (never about its own failures)."""
    import argparse

    from opkit.run.config import RunConfig
    from opkit.run.options import add_test_arguments
    from opkit.run.resolve import _second_opinion_specs

    parser = argparse.ArgumentParser()
    add_test_arguments(parser)

    def engines(*argv):
        return [s.name for s in _second_opinion_specs(RunConfig.from_args(parser.parse_args(list(argv))), [])]

    assert engines("--backend", "reference") == ["onnx-reference", "onnxruntime"]
    assert engines("--backend", "reference", "--second-opinion", "onnx-reference") == ["onnx-reference"]
    assert engines("--backend", "reference", "--no-second-opinion") == []
