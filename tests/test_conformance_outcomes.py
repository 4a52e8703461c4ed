"""Outcome classification against fake backends, each in its own worker process."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.output_compare import Mismatch, compare, equal
from opkit.results.outcomes import ExpectationsError, Expectations, load_expectations
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker import Worker

FAKES = "test_conformance_fakes"
TYPES = [{"T": "tensor(float)"}, {"T": "tensor(int64)"}]


def run_fake(cls: str, *, bindings=TYPES, timeout=10.0, max_examples=10, expectations=None, repro=None):
    spec = harness.load_op("ai.onnx", "Trilu")
    with Worker(resolve(f"{FAKES}:{cls}"), timeout=timeout) as worker:
        backend = BackendRunner(worker)
        runner = Runner(backend, max_examples=max_examples, seed=1, timeout=timeout, expectations=expectations,
                        repro=repro)
        runner.run_differential(spec, spec.version(14), bindings)
        return runner.results, worker


def test_correct_backend_passes():
    results, _ = run_fake("Correct")
    assert [r.outcome for r in results] == ["pass", "pass"]
    assert all(r.examples_run >= 10 for r in results)


def test_wrong_values_is_a_mismatch_with_errors():
    results, _ = run_fake("WrongValues")
    assert [r.outcome for r in results] == ["mismatch", "mismatch"]
    assert "max abs error 1" in results[0].message
    assert results[0].details["what"] == "values"
    # hypothesis shrinks to a minimal failing example: one element
    assert "[1, 1]" in results[0].minimal_example


def test_wrong_shape_is_a_mismatch():
    results, _ = run_fake("WrongShape", bindings=TYPES[:1])
    assert results[0].outcome == "mismatch"
    assert results[0].details["what"] == "shape"
    assert "shape" in results[0].message


def test_wrong_dtype_is_a_mismatch():
    results, _ = run_fake("WrongDtype", bindings=TYPES[:1])
    assert results[0].outcome == "mismatch"
    assert results[0].details["what"] == "dtype"
    assert "dtype double, expected float" in results[0].message


def test_refusal_at_load_is_unsupported():
    results, _ = run_fake("RefusesToLoad")
    assert [r.outcome for r in results] == ["unsupported", "unsupported"]
    assert "NOT_IMPLEMENTED" in results[0].message


def test_exception_at_run_is_an_error():
    results, _ = run_fake("RaisesAtRun", bindings=TYPES[:1])
    assert results[0].outcome == "error"
    assert "kernel exploded" in results[0].message


def test_abort_is_a_crash_and_the_run_goes_on():
    results, worker = run_fake("Aborts", max_examples=5)
    assert [r.outcome for r in results] == ["crash", "crash"]  # both bindings reported
    assert "SIGABRT" in results[0].message
    assert worker.restarts >= 2


def test_sleep_is_a_timeout():
    results, worker = run_fake("Sleeps", bindings=TYPES[:1], timeout=1.0, max_examples=3)
    assert results[0].outcome == "timeout"
    assert "no answer within 1 s" in results[0].message
    assert worker.restarts >= 1


def test_expectations_give_xfail_and_xpass(tmp_path):
    path = tmp_path / "fake.yaml"
    path.write_text("backend: fake\nexpectations:\n"
                    "  - {op: Trilu, version: 14, types: {T: tensor(float)}, reason: known bad float kernel}\n"
                    "  - {op: Trilu, types: {T: [tensor(int64)]}, outcome: crash, reason: wrong class}\n")
    exp = load_expectations(str(path))
    results, _ = run_fake("WrongValues", expectations=exp)
    assert results[0].outcome == "xfail" and results[0].expected["reason"] == "known bad float kernel"
    assert results[1].outcome == "mismatch"  # expected a crash, got a mismatch: still a failure
    results, _ = run_fake("Correct", expectations=exp, bindings=TYPES[:1])
    assert results[0].outcome == "xpass"


def test_expectations_need_a_reason(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("expectations:\n  - {op: Trilu}\n")
    with pytest.raises(ExpectationsError, match="reason"):
        load_expectations(str(path))


def test_unmatched_expectations_change_nothing():
    case = {"op": "Trilu", "domain": "ai.onnx", "version": 14, "types": {}, "outcome": "pass", "message": ""}
    assert Expectations().apply(dict(case))["outcome"] == "pass"


# -- comparison


def test_compare_nan_positions_must_match():
    compare(np.array([np.nan, 1.0], np.float32), np.array([np.nan, 1.0], np.float32))
    with pytest.raises(Mismatch, match="NaN"):
        compare(np.array([np.nan, 1.0], np.float32), np.array([0.0, 1.0], np.float32))


def test_compare_tolerances_and_infinities():
    compare(np.array([1.0], np.float32), np.array([1.0 + 1e-7], np.float32))
    with pytest.raises(Mismatch, match="max rel error"):
        compare(np.array([1.0], np.float32), np.array([1.1], np.float32))
    with pytest.raises(Mismatch):
        compare(np.array([np.inf]), np.array([-np.inf]))
    compare(np.array([1.0], np.float32), np.array([1.1], np.float32), rtol=0.2)


def test_compare_exact_for_ints_strings_bools():
    with pytest.raises(Mismatch, match="exact"):
        compare(np.array([2**62], np.int64), np.array([2**62 + 1], np.int64))
    with pytest.raises(Mismatch):
        compare(np.array(["a"], object), np.array(["b"], object))
    compare(np.array([True]), np.array([True]))


def test_equal_is_nan_aware_and_dtype_strict():
    assert equal(np.array([np.nan]), np.array([np.nan]))
    assert not equal(np.array([1], np.int32), np.array([1], np.int64))
    assert not equal(np.zeros((1, 2)), np.zeros((2, 1)))
