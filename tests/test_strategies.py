"""Strategies derived from the Trilu spec cover every allowed type, k extremes, shapes and feeds."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opkit.cases import bindings, derived, draws, fixed
from opkit.cases import cases as case_strategy
from opkit.conformance import harness
from opkit.core.dtypes import np_dtype

SPEC = harness.load_op("ai.onnx", "Trilu")
V14 = SPEC.version(14)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FAST = settings(max_examples=400, database=None, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


def collect(strategy, n=400):
    seen = []

    @settings(FAST, max_examples=n)
    @given(strategy)
    def run(value):
        seen.append(value)

    run()
    return seen


def test_all_16_trilu_types_are_drawn_with_matching_dtypes():
    assert len(V14.type_constraint("T").types) == 16
    unpinned = {c.type_map["T"] for c in collect(case_strategy(SPEC, V14))}
    assert len(unpinned) >= 12  # one strategy reaches (nearly) all types ...
    for binding in bindings.all_bindings(V14):  # ... and the runner pins each of the 16 in turn
        cases = collect(case_strategy(SPEC, V14, types=binding), 20)
        assert {c.type_map["T"] for c in cases} == {binding["T"]}
        for c in cases:
            assert dict(c.inputs)["input"].dtype == np_dtype(binding["T"])


def test_every_binding_is_listed_and_pinnable():
    assert len(bindings.all_bindings(V14)) == 16
    assert {b["T"] for b in bindings.all_bindings(V14)} == set(V14.type_constraint("T").types)


def test_k_extremes_and_absence_occur():
    ks = [dict(c.inputs).get("k") for c in collect(case_strategy(SPEC, V14, types={"T": "tensor(float)"}), n=800)]
    values = {int(k) for k in ks if k is not None}
    assert any(k is None for k in ks)
    assert INT64_MIN in values and INT64_MAX in values
    assert all(k is None or (k.dtype == np.int64 and k.ndim == 0) for k in ks)


def test_edge_cases_try_every_k_extreme_with_every_upper():
    cases = fixed.edge_cases(SPEC, V14, {"T": "tensor(int32)"})
    combos = {(None if dict(c.inputs).get("k") is None else int(dict(c.inputs)["k"]), dict(c.attributes).get("upper"))
              for c in cases}
    for k in (INT64_MIN, INT64_MAX, 0, None):
        for upper in (None, 0, 1):
            assert (k, upper) in combos


def test_shapes_respect_rank_and_include_edge_shapes():
    cases = collect(case_strategy(SPEC, V14, types={"T": "tensor(int8)"}))
    shapes = [dict(c.inputs)["input"].shape for c in cases]
    assert all(len(s) >= 2 for s in shapes)
    assert any(0 in s for s in shapes)  # zero-size
    assert any(s[-2] == 1 and s[-1] > 1 for s in shapes)  # 1xN
    assert any(s[-1] == 1 and s[-2] > 1 for s in shapes)  # Nx1
    assert any(len(s) > 2 for s in shapes)  # batch dims


def test_attributes_absent_or_from_the_value_domain():
    cases = collect(case_strategy(SPEC, V14, types={"T": "tensor(bool)"}))
    uppers = {dict(c.attributes).get("upper", "absent") for c in cases}
    assert uppers == {"absent", 0, 1}
    assert all(c.kernel_attributes()["upper"] in (0, 1) for c in cases)


def test_inputs_fed_as_initializers_sometimes():
    cases = collect(case_strategy(SPEC, V14, types={"T": "tensor(float)"}))
    assert any(c.initializers for c in cases)
    assert any(not c.initializers for c in cases)


def test_float_edge_values_reach_the_arrays():
    cases = collect(case_strategy(SPEC, V14, types={"T": "tensor(float)"}))
    flat = np.concatenate([dict(c.inputs)["input"].ravel() for c in cases])
    assert np.isnan(flat).any() and np.isposinf(flat).any() and np.isneginf(flat).any()
    assert any(np.signbit(v) and v == 0 for v in flat)


def test_special_dtypes_fill():
    for elem in ("bfloat16", "float8e4m3fn", "float8e5m2", "int4", "uint4", "float16", "complex64", "string",
                 "bool", "uint64"):
        for kind in draws.VALUE_KINDS:
            arr = draws.fill(elem, (3, 4), kind, 7)
            assert arr.shape == (3, 4) and arr.dtype == np_dtype(elem)
    edges = draws.cast(draws.edge_values("int64"), "int64")
    assert edges.min() == INT64_MIN and edges.max() == INT64_MAX


def test_siblings_share_the_signature():
    case = next(c for c in collect(case_strategy(SPEC, V14, types={"T": "tensor(int64)"}, siblings=5)) if c.siblings == 5)
    batch = derived.expand(case, V14)
    assert len(batch) == 6
    for sib in batch[1:]:
        assert sib.types == case.types and sib.attributes == case.attributes
        assert [a is None for _, a in sib.inputs] == [a is None for _, a in case.inputs]
        assert dict(sib.inputs)["input"].ndim == dict(case.inputs)["input"].ndim


@given(st.data())
@settings(max_examples=30, database=None, deadline=None)
def test_building_blocks_compose(data):
    dims = data.draw(draws.base_dims())
    arr = data.draw(draws.tensor("float16", dims, rank=draws.Rank(2, 3)))
    assert 2 <= arr.ndim <= 3 and arr.dtype == np.float16
