"""The elementwise family hook draws valid cases (opkit.cases.families.elementwise)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from opkit.cases.generator import cases
from opkit.cases.validity import measure
from opkit.conformance import harness
from opkit.strategies import covering_bindings, make_case

OPS = ["Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less", "Mod", "Concat"]


def _versions():
    for op in OPS:
        spec = harness.load_op("ai.onnx", op)
        for v in spec.versions:
            if v.kernel is not None and v.family == "elementwise":
                yield pytest.param(spec, v, id=f"{op}-{v.since}")


def test_family_set():
    ids = {p.id for p in _versions()}
    assert {"Add-1", "Add-6", "Pow-1", "Equal-1", "Div-14", "Mod-10", "Mod-28", "Concat-1", "Concat-13"} <= ids


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    bindings = covering_bindings(version)
    result = measure(spec, version, bindings[::max(1, len(bindings) // 3)][:3], 8)
    assert result.drawn and result.rate >= 0.9, result


def _drawn(op, since, n=40):
    spec = harness.load_op("ai.onnx", op)
    version = spec.version(since)
    out = []

    @seed(1)
    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(cases(spec, version, initializers=False))
    def collect(case):
        out.append(case)

    collect()
    return out




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
