"""The normalization family hook draws valid cases (opkit.cases.families.normalization)."""

from __future__ import annotations

import pytest

import onnx

from opkit.conformance.validity import measure, spread
from opkit.conformance import harness
from opkit.cases import onnx_model as model
from opkit.cases.bindings import covering_bindings

from family_cases import kernel_versions, op_cases

OPS = ["BatchNormalization", "InstanceNormalization", "GroupNormalization", "LRN", "MeanVarianceNormalization",
       "LayerNormalization", "RMSNormalization", "GlobalLpPool"]


def _bindings(op, version):
    # MeanVarianceNormalization (float only) and RMSNormalization (V == T) exclude bindings by
    # type-only rules in their specs, which covering_bindings honours
    return spread(covering_bindings(version), 2)


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


def test_layer_norm_stash_type_names_the_statistics_type():
    """stash_type is the element type of Mean and InvStdDev (U): a bfloat16 U needs 16, or ONNX's
    inference refuses the model (these bindings were all 'could not draw' before)."""
    drawn = _drawn("LayerNormalization", 17, 30)
    for case in drawn:
        u = dict(case.types)["U"]
        stash = dict(case.attributes).get("stash_type", 1)
        assert stash == {"tensor(float)": 1, "tensor(bfloat16)": 16}[u], case
    spec = harness.load_op("ai.onnx", "LayerNormalization")
    version = spec.version(17)
    result = measure(spec, version, [{"T": "tensor(float)", "U": "tensor(bfloat16)"}], 10)
    assert result.rate == 1.0, result


def test_batch_norm_inference_mode_declares_only_y():
    """Outside training ONNX allows only Y: such cases declare one output, and ONNX accepts them."""
    drawn = _drawn("BatchNormalization", 15, 40)
    inference = [c for c in drawn if dict(c.attributes).get("training_mode", 0) == 0]
    training = [c for c in drawn if dict(c.attributes).get("training_mode", 0) == 1]
    assert inference and training
    assert all(c.n_outputs == 1 for c in inference) and all(c.n_outputs == 0 for c in training)
    built = model.build(inference[0], harness.load_op("ai.onnx", "BatchNormalization").version(15))
    assert len(built.model.graph.output) == 1
    onnx.checker.check_model(built.model, full_check=True)
