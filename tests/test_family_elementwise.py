"""The elementwise family hook draws valid cases (opkit.cases.families.elementwise)."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance import harness
from opkit.cases.case import make_case

from family_cases import kernel_versions, op_cases, assert_mostly_valid

OPS = ["Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less", "Mod", "Concat",
       "Max", "Min", "Mean", "Sum", "PRelu", "SwiGLU", "Clip"]


def _versions():
    return kernel_versions(OPS, lambda spec, v: v.family == "elementwise")


def test_family_set():
    ids = {p.id for p in _versions()}
    assert {"Add-1", "Add-6", "Pow-1", "Equal-1", "Div-14", "Mod-10", "Mod-28", "Concat-1", "Concat-13"} <= ids
    # shapes the generic steps would broadcast both ways, against the rules of these versions
    assert {"Max-1", "Min-6", "Mean-1", "Sum-6", "PRelu-7", "PRelu-16", "SwiGLU-28", "Clip-11", "Clip-13"} <= ids


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=40):
    return op_cases(op, since, n, seed_value=1)




def test_legacy_broadcast_modes():
    drawn = _drawn("Add", 6, 120)
    attrs = [dict(c.attributes) for c in drawn]
    assert any(a.get("broadcast") == 1 and a.get("axis") is not None for a in attrs)
    assert any(a.get("broadcast") == 1 and a.get("axis") is None
               and dict(c.inputs)["B"].shape != dict(c.inputs)["A"].shape for a, c in zip(attrs, drawn))
    for a, c in zip(attrs, drawn):
        if a.get("broadcast") != 1:
            assert dict(c.inputs)["A"].shape == dict(c.inputs)["B"].shape


def test_integer_divisors_nonzero():
    for op, since in (("Div", 14), ("Mod", 13)):
        for c in _drawn(op, since, 40):
            b = dict(c.inputs)["B"]
            if b.dtype.kind in "iu":
                assert (b != 0).all()


def test_mod_float_needs_fmod_rule():
    spec = harness.load_op("ai.onnx", "Mod")
    a = np.array([1.5, -2.0], dtype=np.float32)
    bad = make_case(spec, spec.version(13), {"T": "tensor(float)"}, {"fmod": 0}, [("A", a), ("B", a)])
    with pytest.raises(harness.Invalid, match="V2"):
        harness.expected_outputs(bad)
    ok = make_case(spec, spec.version(28), {"T": "tensor(float)"}, {"fmod": 0}, [("A", a), ("B", a)])
    harness.expected_outputs(ok)


def test_concat_axes():
    drawn = _drawn("Concat", 13, 60)
    axes = [dict(c.attributes)["axis"] for c in drawn]
    assert any(a < 0 for a in axes) and any(a > 0 for a in axes)
    assert any(dict(c.attributes).get("axis") is None for c in _drawn("Concat", 1, 40))


def test_variadic_inputs_share_one_shape_before_opset_8():
    drawn = [c for op in ("Max", "Sum") for since in (1, 6) for c in _drawn(op, since, 30)]
    counts = set()
    for c in drawn:
        arrays = [a for _, a in c.inputs]
        counts.add(len(arrays))
        assert len({a.shape for a in arrays}) == 1
    assert counts > {1}  # several inputs, not only the trivial single one


def test_prelu_slope_broadcasts_to_x_only():
    drawn = _drawn("PRelu", 16, 60)
    smaller = 0
    for c in drawn:
        x, slope = dict(c.inputs)["X"], dict(c.inputs)["slope"]
        assert np.broadcast_shapes(x.shape, slope.shape) == x.shape
        smaller += slope.shape != x.shape
    assert smaller > 0


def test_swiglu_inputs_have_identical_shapes():
    for c in _drawn("SwiGLU", 28, 40):
        assert dict(c.inputs)["A"].shape == dict(c.inputs)["B"].shape


def test_clip_bounds_are_scalars_or_absent():
    seen = set()
    for c in _drawn("Clip", 13, 60):
        inputs = dict(c.inputs)
        for bound in ("min", "max"):
            value = inputs.get(bound)
            seen.add((bound, value is None))
            assert value is None or value.shape == ()
    assert seen == {("min", True), ("min", False), ("max", True), ("max", False)}

