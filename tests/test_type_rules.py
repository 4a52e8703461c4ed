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


def test_an_is_none_guard_keeps_a_rule_about_the_binding():
    """``scale is None or X.dtype == scale.dtype`` constrains the binding where scale's type
    parameter (V) also types an output (Y): the check takes the input as given. A guard that reads
    anything else (a shape) does not."""
    _, version = _rms()
    guarded = dataclasses.replace(version, rules=(Rule("G", "scale is None or X.dtype == scale.dtype"),))
    assert [r.label for r in type_rules(guarded)] == ["G"]
    assert binding_violation(guarded, {"T": "tensor(float)", "V": "tensor(float16)"}).label == "G"
    assert all(b["T"] == b["V"] for b in all_bindings(guarded))
    for holds in ("scale is None or scale.ndim == 1", "X is not scale or X.dtype == scale.dtype"):
        assert type_rules(dataclasses.replace(version, rules=(Rule("S", holds),))) == ()


def test_an_is_none_guard_on_an_input_only_type_stays_a_value_rule():
    """Attention's V4 (``attn_mask is None or attn_mask.dtype == bool or ...``): U types attn_mask
    alone, so a binding of U the rule refuses still tests every case without a mask; it is drawn."""
    version = harness.load_op("ai.onnx", "Attention").version(23)
    assert "V4" not in [r.label for r in type_rules(version)]
    assert any(b["U"] not in ("tensor(bool)", b["T1"]) for b in all_bindings(version))
    gqa = harness.load_op("com.microsoft", "GroupQueryAttention").version(1)
    assert "C7" in [r.label for r in type_rules(gqa)]  # T_CACHE also types present_key / present_value


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
