"""Relational edges: a comparison the rules state put at its boundary (TopK's k equal to the axis
length), an integer operand at an extent, an output extent of 0 or 1, a zero-size extent against
broadcasting, and the values where a stated conversion changes (ties, clamp bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.cases.case import make_case
from opkit.cases.edges import applicable, apply_edge, sweep
from opkit.cases.relational import boundaries, measure, relations
from opkit.conformance import harness


def _version(op, since):
    spec = harness.load_op("ai.onnx", op)
    return spec, spec.version(since)


def _valid(case) -> bool:
    try:
        harness.expected_outputs(case)
    except harness.Invalid:
        return False
    return True


def _topk(k=2, axis=1):
    spec, v = _version("TopK", 11)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    return make_case(spec, v, {"T": "tensor(float)", "I": "tensor(int64)"}, {"axis": axis},
                     [("X", x), ("K", np.array([k], np.int64))]), v


def _k_equals_axis(case) -> bool:
    x, k = dict(case.inputs)["X"], dict(case.inputs)["K"]
    return int(k[0]) == x.shape[dict(case.kernel_attributes())["axis"]]


def test_the_rules_comparisons_are_read_and_measured():
    _, v = _version("TopK", 11)
    texts = {r.text for r in relations(v)}
    assert "int(K[0]) <= X.shape[axis]" in texts and "1 <= int(K[0])" in texts
    case, _ = _topk()
    m = measure(case, v)
    assert m.valid and m.seen[(2, 0, 1, 0)] == 2 - 4  # k - x.shape[axis]
    bad = measure(make_case(*_version("TopK", 11), {"T": "tensor(float)", "I": "tensor(int64)"}, {"axis": 1},
                            [("X", np.zeros((3, 4), np.float32)), ("K", np.array([5], np.int64))]), v)
    assert not bad.valid


def test_topk_gets_k_equal_to_the_axis_length_from_its_rule():
    case, v = _topk()
    found = boundaries(case, v)
    assert any(_k_equals_axis(b.case) and b.knob.name == "K" for b in found)
    assert any(_k_equals_axis(b.case) and b.knob.kind == "extent" for b in found)  # or the axis shrunk to k
    edged = [c for c in sweep([case], v) if c.edge.startswith("rule boundaries")]
    assert any(_k_equals_axis(c) for c in edged), edged
    assert all(_valid(c) for c in edged)
    # deterministic: the same variants, the same values
    again = [c for c in sweep([case], v) if c.edge.startswith("rule boundaries")]
    assert [c.describe() for c in edged] == [c.describe() for c in again]
    assert all(np.array_equal(a, b) for c, d in zip(edged, again) for (_, a), (_, b) in zip(c.inputs, d.inputs))


def test_a_frozen_input_or_attribute_is_left_alone():
    case, v = _topk()
    frozen = frozenset({"K", "axis", "X"})
    for name in ("rule boundaries", "operand at an extent", "output extent 0 and 1"):
        for variant in (None, 0, 1, 2, "equal", "past", "0", "1"):
            out = apply_edge(name, case, v, 3, frozen, variant)
            assert out is case, (name, variant, out)
    # with K alone frozen, the axis may still shrink to k, and K stays as built
    for c in (apply_edge("rule boundaries", case, v, 0, frozenset({"K"}), j) for j in range(3)):
        assert int(dict(c.inputs)["K"][0]) == 2


def test_pad_gets_pads_equal_to_a_dimension():
    spec, v = _version("Pad", 19)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    case = make_case(spec, v, {"T": "tensor(float)", "Tind": "tensor(int64)"}, {},
                     [("data", data), ("pads", np.array([0, 1, 0, 2], np.int64))])
    edged = [c for c in sweep([case], v) if c.edge.startswith(("rule boundaries", "operand at an extent"))]

    def at_dimension(c):
        pads, shape = dict(c.inputs)["pads"], dict(c.inputs)["data"].shape
        return any(abs(int(p)) == shape[i % 2] for i, p in enumerate(pads))

    assert any(at_dimension(c) for c in edged), edged
    crop = [c for c in edged if c.edge.startswith("rule boundaries")]
    assert crop and all(_valid(c) for c in crop)
    # a crop as large as its dimension: the rule -min(p_begin, 0) - min(p_end, 0) <= dim at equality
    assert any(-int(dict(c.inputs)["pads"][0]) == 2 for c in crop)


def test_add_gets_zero_against_one_and_against_a_missing_dimension():
    spec, v = _version("Add", 14)
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    case = make_case(spec, v, {"T": "tensor(float)"}, {}, [("A", x), ("B", x[..., :1].copy())])
    one = apply_edge("zero-size against broadcast", case, v, 0, variant="against 1")
    a, b = dict(one.inputs)["A"], dict(one.inputs)["B"]
    assert {a.shape[-1], b.shape[-1]} == {0, 1} or {a.shape[-2], b.shape[-2]} == {0, 1}, one
    out = harness.expected_outputs(one)[0]
    assert out.size == 0 and out.ndim == 2
    missing = apply_edge("zero-size against broadcast", case, v, 0, variant="against missing")
    shapes = sorted(arr.ndim for _, arr in missing.inputs)
    assert shapes == [2, 3] and harness.expected_outputs(missing)[0].shape[0] == 0
    # an op whose text does not speak of broadcasting gets none (TopK's X and K do not broadcast)
    assert "zero-size against broadcast" not in {s.name for s in applicable(_topk()[1], swept=True)}
    assert apply_edge("zero-size against broadcast", case, v, 0, frozenset({"A"}), "against 1") is case


def test_window_and_slice_outputs_reach_extents_zero_and_one():
    spec, v = _version("MaxPool", 22)
    x = np.arange(50, dtype=np.float32).reshape(1, 2, 5, 5)
    case = make_case(spec, v, {"T": "tensor(float)"}, {"kernel_shape": [2, 2]}, [("X", x)])
    one = apply_edge("output extent 0 and 1", case, v, 0, variant="1")
    assert one is not case and 1 in harness.expected_outputs(one)[0].shape[2:], one
    spec, v = _version("Slice", 13)
    case = make_case(spec, v, {"T": "tensor(float)", "Tind": "tensor(int64)"}, {},
                     [("data", x[0, 0]), ("starts", np.array([1], np.int64)), ("ends", np.array([3], np.int64)),
                      ("axes", np.array([1], np.int64))])
    empty = apply_edge("output extent 0 and 1", case, v, 0, variant="0")
    assert harness.expected_outputs(empty)[0].shape == (5, 0), empty
    past = apply_edge("operand at an extent", case, v, 0, variant="past")
    assert any(abs(int(dict(past.inputs)[n][0])) == 6 for n in ("starts", "ends")), past
    assert _valid(past)


def test_stated_conversions_put_values_at_ties_and_at_clamp_bounds():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    spec, v = _version("Round", 22)
    ties = apply_edge("stated conversions", make_case(spec, v, {"T": "tensor(float)"}, {}, [("X", x)]), v, 0,
                      variant="ties")
    values = dict(ties.inputs)["X"].reshape(-1)
    assert any(float(t) % 1 == 0.5 for t in values) and _valid(ties)
    # Cast float -> float16: a float32 value halfway between two float16 values (round half to even)
    spec, v = _version("Cast", 21)
    to16 = make_case(spec, v, {"T1": "tensor(float)", "T2": "tensor(float16)"}, {"to": 10}, [("input", x)])
    tie = apply_edge("stated conversions", to16, v, 0, variant="ties")
    vals = dict(tie.inputs)["input"].reshape(-1).astype(np.float64)
    assert any(v_ == 1 + 2.0 ** -11 or v_ == 1 + 3 * 2.0 ** -11 for v_ in vals), vals
    # Cast float -> int32: the rules leave a fractional value undefined (D1), so no tie is drawn
    to32 = make_case(spec, v, {"T1": "tensor(float)", "T2": "tensor(int32)"}, {"to": 6}, [("input", x)])
    assert apply_edge("stated conversions", to32, v, 0, variant="ties") is to32
    # Clip: values at min and max and one ulp either side
    spec, v = _version("Clip", 13)
    clip = make_case(spec, v, {"T": "tensor(float)"}, {},
                     [("input", x), ("min", np.array(2, np.float32)), ("max", np.array(4.5, np.float32))])
    bounded = apply_edge("stated conversions", clip, v, 0, variant="bounds")
    got = set(dict(bounded.inputs)["input"].reshape(-1).tolist())
    assert {2.0, 4.5} <= got and dict(bounded.inputs)["max"] == np.float32(4.5)
    assert any(4.4 < g < 4.5 or 4.5 < g < 4.6 for g in got)
    assert apply_edge("stated conversions", clip, v, 0, frozenset({"input"}), "bounds") is clip


@pytest.mark.parametrize("op,since", [("TopK", 11), ("Pad", 19), ("Slice", 13), ("MaxPool", 22), ("Tile", 13)])
def test_family_versions_get_the_checked_relational_edges_in_the_sweep_only(op, since):
    from opkit.cases.families import edge_check

    _, v = _version(op, since)
    names = {s.name for s in applicable(v, swept=True)}
    assert not applicable(v)  # no random share for a hook's versions
    # sizes moved past the rules only where the family states what it keeps valid beyond them
    assert ("operand at an extent" in names) == (edge_check(v.family) is not None)
    if op in ("TopK", "Pad", "Slice"):
        assert "rule boundaries" in names


def test_an_extent_operand_is_not_a_code_nor_a_negative_count():
    """A scalar int attribute no rule compares with an extent (Attention's softmax_precision, a
    dtype code; LpPool's p) is left alone, and a negative value goes only where the input already
    holds one (pads that crop), never to a count (repeats)."""
    spec, v = _version("Tile", 13)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    case = make_case(spec, v, {"T": "tensor(float)"}, {}, [("input", x), ("repeats", np.array([2, 1], np.int64))])
    for seed in range(6):
        for variant in ("equal", "past"):
            out = apply_edge("operand at an extent", case, v, seed, variant=variant)
            assert all(int(r) >= 0 for r in dict(out.inputs)["repeats"]), out
    spec, v = _version("LpPool", 18)
    pool = make_case(spec, v, {"T": "tensor(float)"}, {"kernel_shape": [2], "p": 2},
                     [("X", np.ones((1, 2, 4), np.float32))])
    for seed in range(6):
        for variant in ("equal", "past"):
            assert dict(apply_edge("operand at an extent", pool, v, seed, variant=variant).kernel_attributes())["p"] == 2


def test_a_family_hooks_own_constraints_hold_on_the_variants():
    """Pad's hook keeps reflect pads below the axis size and never crops and grows one axis outside
    constant mode; the pooling hook keeps pads below the kernel and every output axis at least 1
    wide. The texts leave those corners undefined, and the rules do not state them: the family's
    ``edge_holds`` does, and no relational variant leaves them."""
    from opkit.cases.families import edge_check

    spec, v = _version("Pad", 19)
    check = edge_check(v.family)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)

    def pad(pads, mode="reflect"):
        return make_case(spec, v, {"T": "tensor(float)", "Tind": "tensor(int64)"}, {"mode": mode},
                         [("data", data), ("pads", np.array(pads, np.int64))])

    assert check(pad([0, 1, 0, 2]), v) and not check(pad([0, 3, 0, 0]), v) and not check(pad([-1, 0, 1, 0]), v)
    assert check(pad([0, 3, 0, 0], "constant"), v)
    for c in sweep([pad([0, 1, 0, 2])], v):
        if c.edge.startswith(("rule", "operand", "output")):
            pads = [int(p) for p in dict(c.inputs)["pads"]]
            shape = dict(c.inputs)["data"].shape
            assert all(pads[i] <= shape[i % 2] - 1 for i in range(4)), c
    spec, v = _version("AveragePool", 22)
    x = np.arange(50, dtype=np.float32).reshape(1, 2, 5, 5)
    base = make_case(spec, v, {"T": "tensor(float)"}, {"kernel_shape": [2, 2], "pads": [1, 0, 1, 0]}, [("X", x)])
    for c in sweep([base], v):
        attrs = c.kernel_attributes()
        assert all(p < attrs["kernel_shape"][i % 2] for i, p in enumerate(attrs["pads"])), c
        assert 0 not in harness.expected_outputs(c)[0].shape, c
