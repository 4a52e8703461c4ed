"""Opsets a backend supports: versions newer than it knows and older than it supports are skipped
(not charged); a version still in force at its oldest opset runs in a model of that opset."""

from __future__ import annotations

import numpy as np

from opkit.backends.onnxruntime_versions import OLDEST_AI_ONNX_OPSET
from opkit.conformance import harness
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.cases.case import Case

ADD = harness.load_op("ai.onnx", "Add")  # 1, 6, 7, 13, 14
ABS = harness.load_op("ai.onnx", "Abs")  # 1, 6, 13


class _NoWorker:
    """BackendRunner never asks the worker anything when given the backend's info."""


def _runner(min_opsets=None, max_opsets=None) -> BackendRunner:
    return BackendRunner(_NoWorker(), {"name": "fake", "max_ir_version": 13, "min_opsets": min_opsets or {},
                                       "max_opsets": max_opsets or {}})


def test_versions_replaced_before_the_oldest_supported_opset_are_dropped():
    backend = _runner({"ai.onnx": 7})
    assert "where Add-7 is in force" in backend.cannot_run("ai.onnx", 1, "Add")
    assert backend.cannot_run("ai.onnx", 6, "Add") is not None
    assert backend.cannot_run("ai.onnx", 7, "Add") is None
    assert backend.cannot_run("ai.onnx", 6, "Abs") is None  # in force at 7
    assert _runner().cannot_run("ai.onnx", 1, "Add") is None  # a backend that says nothing runs all


def test_a_version_in_force_at_the_oldest_opset_runs_in_a_model_of_that_opset():
    case = Case("ai.onnx", "Abs", 6, (("T", "tensor(float)"),), (), (("X", np.ones((2,), np.float32)),))
    old = _runner({"ai.onnx": 7}).built(case, ABS.version(6)).model
    plain = _runner().built(case, ABS.version(6)).model
    assert [o.version for o in old.opset_import if o.domain == ""] == [7]
    assert [o.version for o in plain.opset_import if o.domain == ""] == [6]


def test_the_runner_skips_dropped_versions_with_the_reason():
    runner = Runner(_runner({"ai.onnx": 7}), max_examples=1)
    runner.run_spec(ADD, ["differential"], versions=[1, 6])
    # newest first, as run_spec takes an op's versions (conformance.superseded)
    assert [(s["version"], s["reason"][:22]) for s in runner.skipped] == [(6, "dropped by this runtim"),
                                                                       (1, "dropped by this runtim")]
    assert runner.results == []


def test_onnxruntime_declares_opset_7_as_its_oldest():
    from opkit.backends.onnxruntime import OnnxRuntimeBackend

    assert OLDEST_AI_ONNX_OPSET == 7
    assert OnnxRuntimeBackend.min_opsets(object.__new__(OnnxRuntimeBackend)) == {"ai.onnx": 7}


def test_an_old_binding_without_raw_ortvalue_calls_skips_bfloat16_instead_of_erroring():
    from types import SimpleNamespace

    from opkit.backends.onnxruntime import OnnxRuntimeBackend

    backend = object.__new__(OnnxRuntimeBackend)
    backend._ort = SimpleNamespace(OrtValue=type("OrtValue", (), {}), __version__="1.16.3")
    why = backend.unfeedable_elements()
    assert "bfloat16" in why and "float8e4m3fn" in why and "float" not in why
    assert "onnxruntime 1.16.3" in why["bfloat16"]
    runner = BackendRunner(_NoWorker(), {"name": "onnxruntime", "unfeedable_elements": why})
    assert runner.cannot_feed({"T": "tensor(bfloat16)", "Tind": "tensor(int64)"}) == why["bfloat16"]
    assert runner.cannot_feed({"T": "tensor(float)"}) is None
    import onnxruntime

    current = object.__new__(OnnxRuntimeBackend)
    current._ort = onnxruntime
    assert current.unfeedable_elements() == {}  # the pinned release has both calls


def test_the_pytest_plugin_and_second_opinions_skip_dropped_versions_too():
    from types import SimpleNamespace

    import pytest

    from opkit.conformance.pytest_support import _skip_if_unaskable

    backend = SimpleNamespace(runner=SimpleNamespace(backend=_runner({"ai.onnx": 7})))
    with pytest.raises(pytest.skip.Exception, match="dropped by this runtime"):
        _skip_if_unaskable(backend, "ai.onnx", 1, "Add")
    _skip_if_unaskable(backend, "ai.onnx", 7, "Add")  # in force: runs
