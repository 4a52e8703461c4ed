"""The indices family hook draws valid cases (opkit.cases.families.indices): gathers, scatters,
OneHot, TopK, Compress, CumSum, ArgMax/ArgMin, Unique, ReverseSequence, TensorScatter."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance.validity import rejection
from opkit.conformance import harness

from family_cases import kernel_versions, op_cases, assert_mostly_valid

OPS = ["Gather", "GatherElements", "GatherND", "ScatterElements", "Scatter", "ScatterND", "TensorScatter", "OneHot",
       "TopK", "Compress", "CumSum", "ArgMax", "ArgMin", "Unique", "ReverseSequence"]


def _versions():
    return kernel_versions(OPS, lambda spec, v: not v.deprecated)


def test_family_set():
    params = list(_versions())
    assert len(params) >= 40
    assert all(p.values[1].family == "indices" for p in params), [p.id for p in params if p.values[1].family != "indices"]


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=60, types=None):
    return op_cases(op, since, n, seed_value=2, types=types)


def _attrs(case):
    return case.kernel_attributes()


def test_gather_indices_negative_repeated_empty_both_types():
    drawn = _drawn("Gather", 13, 120)
    idx = [dict(c.inputs)["indices"] for c in drawn]
    assert any((i < 0).any() for i in idx)  # negative indices (Gather-11+ allows them)
    assert any(i.size > len(np.unique(i)) for i in idx)  # repeated indices
    assert any(i.size == 0 for i in idx)  # empty index tensors
    assert any(i.ndim == 0 for i in idx)  # a scalar index drops the axis
    assert {i.dtype for i in idx} == {np.dtype(np.int32), np.dtype(np.int64)}
    for c in drawn:
        data, i = dict(c.inputs)["data"], dict(c.inputs)["indices"]
        s = data.shape[_attrs(c)["axis"]]
        assert i.size == 0 or (i.min() >= -s and i.max() < s)


def test_gather_1_has_no_negative_indices():
    # Gather-1 says only "within bounds": no negative indices drawn for it
    assert all((dict(c.inputs)["indices"] >= 0).all() for c in _drawn("Gather", 1, 80))


def test_gather_nd_batch_dims_and_negative_indices():
    drawn = _drawn("GatherND", 13, 120)
    assert {_attrs(c)["batch_dims"] for c in drawn} >= {0, 1, 2}
    assert any((dict(c.inputs)["indices"] < 0).any() for c in drawn)
    assert any(dict(c.inputs)["indices"].size == 0 for c in drawn)


def test_gather_elements_partial_indices_shapes():
    drawn = _drawn("GatherElements", 13, 120)
    shapes = [(dict(c.inputs)["data"].shape, dict(c.inputs)["indices"].shape, _attrs(c)["axis"]) for c in drawn]
    assert any(any(i < d for k, (i, d) in enumerate(zip(ishape, dshape)) if k != axis % len(dshape))
               for dshape, ishape, axis in shapes)  # indices cover part of a non-axis dim
    assert any(ishape[axis] > dshape[axis] for dshape, ishape, axis in shapes)  # more gathers than the axis holds


def _targets_elements(c):
    """Normalized ScatterElements target positions of every entry of indices."""
    data, idx = dict(c.inputs)["data"], dict(c.inputs)["indices"].astype(np.int64)
    axis = _attrs(c)["axis"] % data.ndim
    grids = list(np.indices(idx.shape))
    grids[axis] = idx % data.shape[axis] if idx.size else idx
    return list(zip(*(g.ravel().tolist() for g in grids)))


def test_scatter_elements_reductions_and_duplicates():
    drawn = _drawn("ScatterElements", 18, 200)
    reductions = {_attrs(c)["reduction"] for c in drawn}
    assert reductions == {"none", "add", "mul", "max", "min"}
    dup_with_reduction = False
    for c in drawn:
        targets = _targets_elements(c)
        if _attrs(c)["reduction"] == "none":
            assert len(targets) == len(set(targets)), c  # ONNX: duplicates undefined without a reduction
        elif len(targets) > len(set(targets)):
            dup_with_reduction = True
    assert dup_with_reduction
    assert any((dict(c.inputs)["indices"] < 0).any() for c in drawn)
    # ScatterElements-16 has no max/min
    assert {_attrs(c)["reduction"] for c in _drawn("ScatterElements", 16, 80)} <= {"none", "add", "mul"}


def test_scatter_nd_unique_tuples_without_reduction():
    drawn = _drawn("ScatterND", 18, 200)
    dup_with_reduction = False
    for c in drawn:
        data, idx = dict(c.inputs)["data"], dict(c.inputs)["indices"]
        k = idx.shape[-1]
        tuples = [tuple(t) for t in (idx.reshape(-1, k) % np.array(data.shape[:k]) if idx.size else [])]
        if _attrs(c)["reduction"] == "none":
            assert len(tuples) == len(set(tuples)), c
        elif len(tuples) > len(set(tuples)):
            dup_with_reduction = True
    assert dup_with_reduction
    assert any(dict(c.inputs)["indices"].shape[-1] < dict(c.inputs)["data"].ndim for c in drawn)  # slice updates


def test_one_hot_axis_depth_forms_and_out_of_range_indices():
    drawn = _drawn("OneHot", 11, 120)
    axes = {_attrs(c)["axis"] for c in drawn}
    assert min(axes) < -1 and max(axes) >= 0
    assert {dict(c.inputs)["depth"].shape for c in drawn} == {(), (1,)}
    # indices outside [-depth, depth-1] are defined (an all-off_value row): some occur
    assert any((dict(c.inputs)["indices"].astype(np.int64) >= int(dict(c.inputs)["depth"].reshape(-1)[0])).any()
               for c in drawn)


def test_top_k_modes_and_k_range():
    drawn = _drawn("TopK", 11, 120)
    assert {_attrs(c)["largest"] for c in drawn} == {0, 1}
    # sorted=0 leaves the order unspecified, which an ordered comparison would wrongly charge
    assert {_attrs(c)["sorted"] for c in drawn} == {1}
    full = False
    for c in drawn:
        x, k = dict(c.inputs)["X"], int(dict(c.inputs)["K"][0])
        assert 1 <= k <= x.shape[_attrs(c)["axis"]]
        full |= k == x.shape[_attrs(c)["axis"]]
    assert full


def test_compress_axis_and_short_conditions():
    drawn = _drawn("Compress", 11, 120)
    assert any("axis" not in dict(c.attributes) for c in drawn)
    short = False
    for c in drawn:
        x, cond = dict(c.inputs)["input"], dict(c.inputs)["condition"]
        axis = dict(c.attributes).get("axis")
        n = x.size if axis is None else x.shape[axis]
        assert cond.ndim == 1 and len(cond) <= n
        short |= len(cond) < n
    assert short


def test_unique_axis_and_repeats():
    drawn = _drawn("Unique", 11, 120)
    with_axis = [c for c in drawn if "axis" in dict(c.attributes)]
    assert with_axis and len(with_axis) < len(drawn)
    assert any(len(np.unique(dict(c.inputs)["X"].reshape(-1))) < dict(c.inputs)["X"].size for c in drawn
               if dict(c.inputs)["X"].dtype != object)


def test_unique_strings_with_axis_are_valid():
    drawn = _drawn("Unique", 11, 60, types={"T": "tensor(string)"})
    version = harness.load_op("ai.onnx", "Unique").version(11)
    assert any("axis" in dict(c.attributes) and dict(c.inputs)["X"].ndim > 1 for c in drawn)
    assert all(rejection(c, version) is None for c in drawn)


def test_reverse_sequence_layouts_and_lengths():
    drawn = _drawn("ReverseSequence", 10, 80)
    layouts = {(_attrs(c)["batch_axis"], _attrs(c)["time_axis"]) for c in drawn}
    assert layouts == {(1, 0), (0, 1)}
    for c in drawn:
        x, lens = dict(c.inputs)["input"], dict(c.inputs)["sequence_lens"]
        a = _attrs(c)
        assert lens.shape == (x.shape[a["batch_axis"]],)
        assert ((lens >= 0) & (lens <= x.shape[a["time_axis"]])).all()


def test_tensor_scatter_modes():
    drawn = _drawn("TensorScatter", 24, 80)
    assert {_attrs(c)["mode"] for c in drawn} == {"linear", "circular"}
    assert any(dict(c.inputs)["write_indices"] is not None for c in drawn)
    assert all(_attrs(c)["axis"] % dict(c.inputs)["past_cache"].ndim != 0 for c in drawn)


def test_cum_sum_and_arg_flags():
    drawn = _drawn("CumSum", 14, 60)
    assert {_attrs(c)["exclusive"] for c in drawn} == {0, 1} and {_attrs(c)["reverse"] for c in drawn} == {0, 1}
    assert all(dict(c.inputs)["axis"].ndim == 0 for c in drawn)
    drawn = _drawn("ArgMax", 13, 60)
    assert {_attrs(c)["select_last_index"] for c in drawn} == {0, 1}
    assert all(dict(c.inputs)["data"].shape[_attrs(c)["axis"]] > 0 for c in drawn)
