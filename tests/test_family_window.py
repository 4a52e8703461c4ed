"""The window family hook draws valid cases (opkit.cases.families.window): convolutions, pooling,
unpooling, Col2Im and RoI pooling."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance.validity import measure, rejection
from opkit.conformance import harness

from family_cases import kernel_versions, draw_cases, assert_mostly_valid

FAMILY = "window"
OPS = ["Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv", "AveragePool", "MaxPool", "LpPool",
       "MaxUnpool", "Col2Im", "RoiAlign", "MaxRoiPool"]


def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since=None, n=80, types=None):
    spec = harness.load_op("ai.onnx", op)
    version = spec.version(since) if since else spec.versions[-1]
    out = draw_cases(spec, version, n, seed_value=1, types=types)
    return version, out


def _attrs(case):
    return dict(case.attributes)


def _inputs(case):
    return dict(case.inputs)


def test_conv_covers_padding_modes_groups_and_ranks():
    version, drawn = _drawn("Conv", 22, n=120)
    modes = {_attrs(c).get("auto_pad") for c in drawn}
    assert {"SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET", None} <= modes
    assert any(_attrs(c).get("auto_pad") == "SAME_LOWER" and (_attrs(c).get("group") or 1) > 1 for c in drawn)
    assert any("pads" in _attrs(c) for c in drawn)
    assert any("kernel_shape" not in _attrs(c) for c in drawn)  # inferred from W
    assert {_inputs(c)["X"].ndim for c in drawn} == {3, 4, 5}  # 1-D, 2-D and 3-D windows
    assert any(_inputs(c)["X"].shape[0] == 0 for c in drawn)  # an empty batch
    for c in drawn:
        x, w, b = _inputs(c)["X"], _inputs(c)["W"], _inputs(c)["B"]
        group = _attrs(c).get("group") or 1
        assert x.shape[1] == w.shape[1] * group and w.shape[0] % group == 0
        assert b is None or b.shape == (w.shape[0],)
    assert all(rejection(c, version) is None for c in drawn[:40])


def test_pool_ceil_mode_and_explicit_pads():
    version, drawn = _drawn("AveragePool", 22, n=120)
    assert any(_attrs(c).get("ceil_mode") == 1 and "pads" in _attrs(c) for c in drawn)
    assert any(_attrs(c).get("count_include_pad") == 1 for c in drawn)
    for c in drawn:
        a = _attrs(c)
        # ceil_mode 1 only with explicit padding (the texts and ONNX's inference disagree otherwise)
        if a.get("ceil_mode") == 1:
            assert a.get("auto_pad") in (None, "NOTSET")
        # pads below the kernel, never with auto_pad
        if "pads" in a:
            n = len(a["kernel_shape"])
            assert all(p < a["kernel_shape"][i % n] for i, p in enumerate(a["pads"]))
            assert a.get("auto_pad") in (None, "NOTSET")


@pytest.mark.parametrize("since", [19, 22])
def test_pool_corners_reach_into_padding_and_past_the_end(since):
    """onnxruntime 1.16 averaged AveragePool-19's partial last window (ceil_mode, no pad there)
    over the whole kernel with count_include_pad, 1.21 counted an end pad as nothing: both need a
    window reaching past the input with count_include_pad = 1, which free draws made about one
    draw in a hundred."""
    version, drawn = _drawn("AveragePool", since, n=100)
    partial = padded = 0
    for c in drawn:
        a, x = _attrs(c), dict(c.inputs)["X"]
        if a.get("count_include_pad") != 1:
            continue
        k = a["kernel_shape"]
        n = len(k)
        s, d, pads = a.get("strides") or [1] * n, a.get("dilations") or [1] * n, a.get("pads") or [0] * (2 * n)
        spans = [(k[i] - 1) * d[i] + 1 for i in range(n)]
        partial += a.get("ceil_mode") == 1 and any((x.shape[2 + i] + pads[i] + pads[i + n] - spans[i]) % s[i]
                                                     for i in range(n))
        padded += any(p > 0 for p in pads)
    assert partial >= 3 and padded >= 5, (partial, padded)


def test_maxpool_storage_order_and_int8():
    _, drawn = _drawn("MaxPool", 12, n=60, types={"T": "tensor(int8)"})
    assert {_attrs(c).get("storage_order") for c in drawn} >= {0, 1}
    assert all(_inputs(c)["X"].dtype == np.int8 for c in drawn)


def test_conv_transpose_output_shape_and_padding():
    version, drawn = _drawn("ConvTranspose", 22, n=120)
    assert any("output_shape" in _attrs(c) for c in drawn)
    assert any("output_padding" in _attrs(c) and any(_attrs(c)["output_padding"]) for c in drawn)
    for c in drawn:
        a = _attrs(c)
        n = _inputs(c)["X"].ndim - 2
        strides = a.get("strides") or [1] * n
        if "output_padding" in a:
            assert all(p < s for p, s in zip(a["output_padding"], strides))
    assert all(rejection(c, version) is None for c in drawn[:40])


def test_quantized_convs_per_channel():
    _, drawn = _drawn("QLinearConv", 10, n=80)
    assert any(np.ndim(_inputs(c)["w_scale"]) == 1 for c in drawn)
    for c in drawn:
        ins = _inputs(c)
        assert np.all(np.asarray(ins["x_scale"]) > 0) and np.all(np.asarray(ins["w_scale"]) > 0)
        assert np.size(ins["w_scale"]) in (1, ins["w"].shape[0])
    _, drawn = _drawn("ConvInteger", 10, n=80)
    assert any(_inputs(c)["w_zero_point"] is not None and np.ndim(_inputs(c)["w_zero_point"]) == 1 for c in drawn)


def test_deform_conv_offsets_match_the_output():
    _, drawn = _drawn("DeformConv", 22, n=40)
    assert any((_attrs(c).get("offset_group") or 1) > 1 for c in drawn)
    for c in drawn:
        x, w, off = _inputs(c)["X"], _inputs(c)["W"], _inputs(c)["offset"]
        og = _attrs(c).get("offset_group") or 1
        assert off.shape[:2] == (x.shape[0], og * w.shape[2] * w.shape[3] * 2)


def test_max_unpool_indices_in_range():
    version, drawn = _drawn("MaxUnpool", 22, n=80)
    assert any(_inputs(c)["output_shape"] is not None for c in drawn)
    for c in drawn:
        ins = _inputs(c)
        assert ins["I"].shape == ins["X"].shape
        if ins["output_shape"] is not None and ins["I"].size:
            assert 0 <= ins["I"].min() and ins["I"].max() < np.prod(ins["output_shape"])
    assert all(rejection(c, version) is None for c in drawn[:40])


def test_col2im_blocks_and_strings():
    _, drawn = _drawn("Col2Im", 18, n=40)
    assert any(len(_inputs(c)["image_shape"]) == 3 for c in drawn)
    spec = harness.load_op("ai.onnx", "Col2Im")
    result = measure(spec, spec.version(18), [{"T": "tensor(string)"}, {"T": "tensor(bool)"}], 10)
    assert result.rate == 1.0, result


def test_roi_ops_batch_indices_in_range():
    _, drawn = _drawn("RoiAlign", 22, n=60)
    assert {_attrs(c).get("mode") for c in drawn} >= {"avg", "max"}
    for c in drawn:
        ins = _inputs(c)
        assert ins["rois"].shape == (ins["batch_indices"].shape[0], 4)
        assert np.all((ins["batch_indices"] >= 0) & (ins["batch_indices"] < ins["X"].shape[0]))
    _, drawn = _drawn("MaxRoiPool", 22, n=60)
    for c in drawn:
        ins = _inputs(c)
        assert ins["rois"].shape[1] == 5
        assert np.all((ins["rois"][:, 0] >= 0) & (ins["rois"][:, 0] < ins["X"].shape[0]))
        # coordinates are never halves: rounding them is not ambiguous
        scaled = np.asarray(ins["rois"][:, 1:], np.float64) * (_attrs(c).get("spatial_scale") or 1.0)
        assert not np.any(np.abs(scaled % 1 - 0.5) < 1e-6)
