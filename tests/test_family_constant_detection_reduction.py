"""Family hooks constant (Constant), detection (NonMaxSuppression), reduction (Hardmax)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from opkit.cases import cases
from opkit.conformance.validity import measure
from opkit.conformance import harness
from opkit.cases.bindings import covering_bindings


@pytest.mark.parametrize("op", ["Constant", "NonMaxSuppression", "Hardmax"])
def test_every_version_draws_valid_cases(op):
    spec = harness.load_op("ai.onnx", op)
    for version in spec.versions:
        if version.kernel is None:
            continue
        assert version.family in ("constant", "detection", "reduction")
        bindings = covering_bindings(version)[:3]
        result = measure(spec, version, bindings, 10)
        assert result.drawn and result.rate >= 0.9, result


def test_constant_sets_exactly_one_value_attribute_matching_the_output_type():
    spec = harness.load_op("ai.onnx", "Constant")
    version = spec.version(13)
    seen = set()

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(spec, version, types={"T": "tensor(float)"}))
    def check(case):
        given_attrs = [k for k, _ in case.attributes]
        assert len(given_attrs) == 1
        seen.add(given_attrs[0])
        assert given_attrs[0] in ("value", "value_float", "value_floats")

    check()
    assert {"value", "value_float", "value_floats"} <= seen


def test_diagonal_matrix_with_and_without_input():
    """With InputTensor, OutputSizes is absent or its shape; without, OutputSizes is given; Value is
    a 0-D tensor of T (drawn freely, 20 % of cases were valid)."""
    spec = harness.load_op("directml", "DiagonalMatrix1")
    version = spec.version(1)
    result = measure(spec, version, covering_bindings(version)[:4], 15)
    assert result.rate >= 0.9, result
    from family_cases import draw_cases

    drawn = draw_cases(spec, version, 60)
    with_input = [c for c in drawn if dict(c.inputs)["InputTensor"] is not None]
    without = [c for c in drawn if dict(c.inputs)["InputTensor"] is None]
    assert with_input and without
    for case in drawn:
        attrs = dict(case.attributes)
        x = dict(case.inputs)["InputTensor"]
        assert attrs["Value"].ndim == 0
        if x is None:
            assert 2 <= len(attrs["OutputSizes"]) <= 4
        else:
            assert attrs["Value"].dtype == x.dtype
            assert attrs.get("OutputSizes", list(x.shape)) == list(x.shape)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_opset_1_softmax_draws_an_axis_that_names_a_dimension(op):
    # opset 1 has no negative axes and no inference check of axis: the generic steps drew scalars
    # with the default axis 1, which the rule 0 <= axis < rank refuses
    spec = harness.load_op("ai.onnx", op)
    version = spec.version(1)
    assert version.family == "reduction"
    result = measure(spec, version, covering_bindings(version)[:3], 10)
    assert result.drawn and result.rate >= 0.9, result
