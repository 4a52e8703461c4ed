"""Rules that read inputs only through ``.dtype`` constrain the type binding: the generator never
draws a binding they exclude (opkit.spec.type_rules)."""

from __future__ import annotations

import dataclasses

from opkit.conformance import harness
from opkit.spec.model import Rule
from opkit.spec.type_rules import binding_violation, type_rules
from opkit.cases.bindings import all_bindings, covering_bindings

from family_cases import draw_cases


def _rms():
    spec = harness.load_op("ai.onnx", "RMSNormalization")
    return spec, spec.version(23)


def test_dtype_only_rules_are_type_rules_and_others_are_not():
    _, version = _rms()
    assert [r.label for r in type_rules(version)] == ["C1"]
    shaped = dataclasses.replace(version, rules=(Rule("S", "X.ndim >= 1 and X.dtype == scale.dtype"),
                                                 Rule("A", "axis < 0 or X.dtype == scale.dtype"),
                                                 Rule("N", "np.float32 == np.float32")))
    assert type_rules(shaped) == ()  # a shape, an attribute, or no input at all: not about the binding


def test_excluded_bindings_are_never_enumerated_or_drawn():
    spec, version = _rms()
    assert binding_violation(version, {"T": "tensor(float)", "V": "tensor(float16)"}).label == "C1"
    assert binding_violation(version, {"T": "tensor(float16)", "V": "tensor(float16)"}) is None
    for bindings in (all_bindings(version), covering_bindings(version, 3)):
        assert bindings and all(b["T"] == b["V"] for b in bindings)
    drawn = draw_cases(spec, version, 40)
    assert {dict(c.types)["T"] for c in drawn} > {"tensor(float)"}  # still several types
    assert all(dict(c.types)["T"] == dict(c.types)["V"] for c in drawn)


def test_without_type_rules_every_binding_stays():
    spec, version = _rms()
    free = dataclasses.replace(version, rules=())
    assert len(all_bindings(free)) == 16 and len(all_bindings(version)) == 4


def test_pinned_types_that_a_rule_excludes_are_not_generatable():
    import pytest
    from hypothesis import find

    from opkit.cases.case import NotGeneratable
    from opkit.cases.bindings import type_binding

    _, version = _rms()
    pinned = type_binding(version, {"T": "tensor(float)"})
    assert find(pinned, lambda b: True) == {"T": "tensor(float)", "V": "tensor(float)"}
    with pytest.raises(NotGeneratable, match="C1"):
        type_binding(version, {"T": "tensor(float)", "V": "tensor(double)"})
