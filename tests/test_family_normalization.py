"""The normalization family hook draws valid cases (opkit.cases.families.normalization)."""

from __future__ import annotations

import pytest

from opkit.cases.validity import measure, spread
from opkit.strategies import covering_bindings

from family_cases import kernel_versions, op_cases

OPS = ["BatchNormalization", "InstanceNormalization", "GroupNormalization", "LRN", "MeanVarianceNormalization",
       "LayerNormalization", "RMSNormalization", "GlobalLpPool"]


def _bindings(op, version):
    bindings = covering_bindings(version)
    if op == "MeanVarianceNormalization":  # ONNX's function body only infers for float (its epsilon is float)
        bindings = [b for b in bindings if b["T"] == "tensor(float)"]
    if op == "RMSNormalization":  # ONNX's function body only infers when scale's V is X's T
        bindings = [b for b in bindings if b["T"] == b["V"]]
    return spread(bindings, 2)


def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == "normalization"
    result = measure(spec, version, _bindings(spec.name, version), 10)
    assert result.drawn and result.rate >= 0.9, result


def _drawn(op, since, n=40):
    return op_cases(op, since, n, seed_value=1)


def test_group_norm_groups_divide_channels():
    for case in _drawn("GroupNormalization", 18):
        attrs = dict(case.attributes)
        x, scale = dict(case.inputs)["X"], dict(case.inputs)["scale"]
        assert x.shape[1] % attrs["num_groups"] == 0 and scale.shape == (attrs["num_groups"],)


def test_batch_norm_shapes_and_variance():
    seen_ranks = set()
    for case in _drawn("BatchNormalization", 15):
        ins = dict(case.inputs)
        c = ins["X"].shape[1]
        seen_ranks.add(ins["X"].ndim)
        assert ins["scale"].shape == (c,) and (ins["input_var"].astype("float64") >= 0).all()
    assert 2 in seen_ranks and max(seen_ranks) >= 4


def test_layer_norm_negative_axis_and_absent_bias():
    cases_ = _drawn("LayerNormalization", 17)
    axes = [dict(c.attributes).get("axis") for c in cases_]
    assert any(a is not None and a < -1 for a in axes)
    assert any(dict(c.inputs)["B"] is None for c in cases_)
