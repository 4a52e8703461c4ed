"""The one case generator (opkit.cases): one path for opkit test, generated tests and the plugin."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings

from opkit.cases import cases, generatable
from opkit.cases.generator import clear_caches
from opkit.conformance.validity import measure
from opkit.conformance import harness
from opkit.cases.case import NotGeneratable


def collect(strategy, n=40):
    out = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(case):
        out.append(case)

    run()
    return out


def test_axis_attributes_are_drawn_within_the_data_rank():
    spec = harness.load_op("ai.onnx", "Softmax")
    drawn = collect(cases(spec, spec.version(13), types={"T": "tensor(float)"}))
    axes = [(dict(c.attributes).get("axis"), c.inputs[0][1].ndim) for c in drawn]
    assert any(a is not None for a, _ in axes)
    for axis, rank in axes:
        if axis is not None:
            assert -max(rank, 1) <= axis < max(rank, 1), (axis, rank)


def test_generic_ops_draw_valid_cases():
    spec = harness.load_op("ai.onnx", "Softmax")
    v = measure(spec, spec.version(13), [{"T": "tensor(float)"}, {"T": "tensor(double)"}], 15)
    assert v.drawn == 30 and v.rate >= 0.9, v


def test_a_required_attribute_only_a_hook_can_draw_names_the_family(monkeypatch):
    spec = harness.load_op("ai.onnx", "Relu")
    version = spec.version(14)
    from opkit.spec.model import Attribute

    needs = dataclasses.replace(version, family="window",
                                attributes=(Attribute(name="mystery", type="graph", required=True),))
    monkeypatch.setattr("opkit.cases.generator.hook_for", lambda family: (lambda draw, ctx: __import__(
        "opkit.cases.context", fromlist=["Draft"]).Draft()))
    clear_caches()
    with pytest.raises(NotGeneratable, match="hook did not set attribute 'mystery'"):
        collect(cases(spec, needs, types={"T": "tensor(float)"}), 1)
    clear_caches()


def test_generatable_says_why_not():
    spec = harness.load_op("com.microsoft", "SparseToDenseMatMul")  # its sparse tensor type
    why = generatable(spec, spec.versions[-1])
    assert why and "no type opkit can generate" in why
    relu = harness.load_op("ai.onnx", "Relu")
    assert generatable(relu, relu.version(14)) is None


def test_shape_tensors_fed_as_graph_inputs_pass_onnx_inference():
    """Resize's ``sizes`` as a graph input: a symbolic length made ONNX inference reject every case."""
    import numpy as np

    from opkit.cases.onnx_model import build
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "Resize")
    version = spec.version(19)
    case = make_case(spec, version, {"T1": "tensor(float)", "T2": "tensor(float)"}, {"mode": "nearest"},
                     [("X", np.ones((1, 1, 2, 2), np.float32)), ("roi", None), ("scales", None),
                      ("sizes", np.array([1, 1, 4, 4], np.int64))])
    assert build(case, version).inference_error is None


def test_every_family_name_has_a_hook():
    from opkit.cases.families import FAMILIES, hook_for
    from opkit.core.onnx_types import FAMILIES as SPEC_FAMILIES

    assert set(FAMILIES) == set(SPEC_FAMILIES)  # the spec vocabulary and the registry agree
    for family in SPEC_FAMILIES:
        assert callable(hook_for(family)), family


def test_a_hook_that_cannot_build_the_version_is_untested_at_the_generate_stage():
    from opkit.backends.registry import resolve
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess

    spec = harness.load_op("ai.onnx", "Relu")
    misfiled = dataclasses.replace(spec.version(14), family="window")  # the window hook has no builder for Relu
    runner = Runner(BackendRunner(InProcess(resolve("reference"))), max_examples=3, seed=1, siblings=0)
    runner.run_differential(spec, misfiled, [{"T": "tensor(float)"}])
    (rec,) = runner.results
    assert rec.outcome == "untested"
    assert rec.details["stage"] == "generate"
    assert rec.message.startswith("opkit cannot generate inputs:") and "Relu" in rec.message
