"""The shape family hook draws valid cases (opkit.cases.families.shape): Reshape, Expand, Tile, Pad,
Slice, Resize, Upsample, Range, ConstantOfShape, Split, Squeeze, Unsqueeze, CenterCropPad, Flatten,
SpaceToDepth, DepthToSpace, Transpose, GridSample and the reductions whose axes is an input."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance.validity import rejection
from opkit.conformance import harness

from family_cases import kernel_versions, op_cases, assert_mostly_valid

OPS = ["Reshape", "Expand", "Tile", "Pad", "Slice", "Resize", "Upsample", "Range", "ConstantOfShape", "Split",
       "Squeeze", "Unsqueeze", "CenterCropPad", "Flatten", "SpaceToDepth", "DepthToSpace", "Transpose", "GridSample",
       "AffineGrid"]
REDUCE = ["ReduceSum", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
          "ReduceProd", "ReduceSumSquare"]


def _keep(spec, v) -> bool:
    if v.deprecated:
        return False
    # axes attribute versions draw valid cases generically (ReduceMean's are hooked)
    return spec.name not in REDUCE or v.family is not None or any(p.name == "axes" for p in v.inputs)


def _versions():
    return kernel_versions(OPS + REDUCE, _keep)


def test_family_set():
    params = list(_versions())
    assert len(params) >= 100
    assert all(p.values[1].family == "shape" for p in params), [p.id for p in params if p.values[1].family != "shape"]


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert_mostly_valid(spec, version, 3, 10)


def _drawn(op, since, n=60, types=None):
    return op_cases(op, since, n, seed_value=3, types=types)


def _attrs(case):
    return case.kernel_attributes()


def _in(case, name):
    return dict(case.inputs)[name]


def test_reshape_zero_minus_one_and_allowzero():
    drawn = _drawn("Reshape", 14, 150)
    copy_zero = minus_one = literal_zero = empty = False
    for c in drawn:
        data, shape, allowzero = _in(c, "data"), _in(c, "shape").tolist(), _attrs(c)["allowzero"]
        out = data.reshape([data.shape[i] if s == 0 and not allowzero else s for i, s in enumerate(shape)])
        assert out.size == data.size
        copy_zero |= not allowzero and 0 in shape
        literal_zero |= bool(allowzero) and 0 in shape
        minus_one |= -1 in shape
        empty |= data.size == 0
        assert not (allowzero and 0 in shape and -1 in shape)
    assert copy_zero and literal_zero and minus_one and empty


def test_expand_shape_both_directions():
    drawn = _drawn("Expand", 13, 100)
    ranks = [(_in(c, "input").ndim, _in(c, "shape").size) for c in drawn]
    assert any(s < r for r, s in ranks) and any(s > r for r, s in ranks)
    # a 1 in shape against a larger input dim keeps the input's dim
    assert any(any(s == 1 and d > 1 for d, s in zip(_in(c, "input").shape[::-1], _in(c, "shape")[::-1].tolist()))
               for c in drawn)


def test_pad_modes_negative_pads_axes():
    drawn = _drawn("Pad", 19, 200)
    assert {_attrs(c)["mode"] for c in drawn} == {"constant", "reflect", "edge", "wrap"}
    assert any((_in(c, "pads") < 0).any() for c in drawn)  # cropping
    assert any(_in(c, "axes") is not None and (_in(c, "axes") < 0).any() for c in drawn)
    assert any(_in(c, "constant_value") is not None for c in drawn)
    for c in drawn:
        data, pads, mode = _in(c, "data"), _in(c, "pads").tolist(), _attrs(c)["mode"]
        axes = range(data.ndim) if _in(c, "axes") is None else [int(a) % data.ndim for a in _in(c, "axes")]
        for i, a in enumerate(axes):
            b, e = pads[i], pads[i + len(axes)]
            assert -min(b, 0) - min(e, 0) <= data.shape[a]  # never removes more than the axis holds
            if mode == "reflect" and max(b, e) > 0:
                assert max(b, e) < data.shape[a]
    # wrap pads go past one period of the axis (onnxruntime before 1.31 filled such a pad with the
    # axis's first element): the torus repeats, and np.pad(mode="wrap") is the reference
    assert any(_attrs(c)["mode"] == "wrap" and any(
        max(_in(c, "pads").tolist()[i], _in(c, "pads").tolist()[i + len(ax)]) > _in(c, "data").shape[a]
        for ax in [range(_in(c, "data").ndim) if _in(c, "axes") is None else [int(x) % _in(c, "data").ndim for x in _in(c, "axes")]]
        for i, a in enumerate(ax)) for c in drawn)
    # the older versions: no wrap, pads as an attribute
    assert {_attrs(c)["mode"] for c in _drawn("Pad", 2, 100)} == {"constant", "reflect", "edge"}


def test_slice_negative_steps_and_clamped_bounds():
    drawn = _drawn("Slice", 13, 150)
    steps = [s for c in drawn if _in(c, "steps") is not None for s in _in(c, "steps").tolist()]
    assert min(steps) < 0 and 0 not in steps
    big = np.iinfo(np.int32).max
    assert any((np.abs(_in(c, "starts").astype(np.int64)) >= big).any() or
               (np.abs(_in(c, "ends").astype(np.int64)) >= big).any() for c in drawn)  # clamped out-of-range
    assert any(_in(c, "axes") is not None and (_in(c, "axes") < 0).any() for c in drawn)
    assert {_in(c, "starts").dtype for c in drawn} == {np.dtype(np.int32), np.dtype(np.int64)}
    assert all(len(set(np.asarray(_in(c, "axes")) % _in(c, "data").ndim)) == _in(c, "axes").size
               for c in drawn if _in(c, "axes") is not None)  # unique axes


def test_resize_modes_and_options():
    drawn = _drawn("Resize", 19, 400, types={"T1": "tensor(float)", "T2": "tensor(float)"})
    attrs = [_attrs(c) for c in drawn]
    assert {a["mode"] for a in attrs} == {"nearest", "linear", "cubic"}
    assert {a["coordinate_transformation_mode"] for a in attrs} == {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"}
    assert {a["nearest_mode"] for a in attrs} == {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
    assert {a["antialias"] for a in attrs} == {0, 1} and {a["exclude_outside"] for a in attrs} == {0, 1}
    assert any(a.get("axes") for a in attrs)
    assert any(_in(c, "sizes") is not None for c in drawn) and any(_in(c, "scales") is not None for c in drawn)
    assert {a["keep_aspect_ratio_policy"] for c, a in zip(drawn, attrs) if _in(c, "sizes") is not None} >= {"stretch"}
    for c, a in zip(drawn, attrs):
        n = len(a["axes"]) if a.get("axes") else _in(c, "X").ndim
        assert (_in(c, "scales") is None) != (_in(c, "sizes") is None)  # exactly one
        if _in(c, "scales") is not None:
            assert _in(c, "scales").shape == (n,) and (_in(c, "scales") > 0).all()
        if a["coordinate_transformation_mode"] == "tf_crop_and_resize":
            assert _in(c, "roi").shape == (2 * n,)
    # Resize-11: tf_half_pixel_for_nn exists there (only); scales is required (empty with sizes)
    drawn = _drawn("Resize", 11, 150, types={"T1": "tensor(float)", "T2": "tensor(float)"})
    assert "tf_half_pixel_for_nn" in {_attrs(c)["coordinate_transformation_mode"] for c in drawn}
    assert all(_in(c, "scales") is not None for c in drawn)


def test_resize_strings_copy_with_nearest():
    spec = harness.load_op("ai.onnx", "Resize")
    version = spec.version(13)
    drawn = _drawn("Resize", 13, 40, types={"T1": "tensor(string)", "T2": "tensor(float)"})
    assert all(_attrs(c)["mode"] == "nearest" for c in drawn)
    # (a `sizes` graph input trips onnx 1.23's inference, whose symbolic length it reads as 0)
    assert all(rejection(c, version) is None for c in drawn if _in(c, "sizes") is None)


def test_upsample_scales_at_least_one():
    for since in (7, 9):
        for c in _drawn("Upsample", since, 60):
            scales = _attrs(c).get("scales") if since == 7 else _in(c, "scales")
            assert np.all(np.asarray(scales) >= 1) and len(scales) == _in(c, "X").ndim
    assert {_attrs(c)["mode"] for c in _drawn("Upsample", 1, 60)} == {"nearest", "bilinear"}


@pytest.mark.parametrize("since", [11, 27])
def test_range_span_past_the_type_is_undefined(since):
    """The text counts max(ceil((limit - start) / delta), 0) exactly; ONNX's function body for Range
    subtracts in the type and divides in float32: int32 Range(-2^31, 2^31 - 1, 2^30) has 4 elements
    by one, none by the other (onnxruntime 1.16), so opkit asks neither."""
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "Range")
    version = spec.version(since)

    def outputs(start, limit, delta, dtype=np.int32):
        case = make_case(spec, version, {"T": f"tensor({np.dtype(dtype).name})"}, {},
                         [(n, np.asarray(v, dtype)) for n, v in (("start", start), ("limit", limit), ("delta", delta))])
        return harness.expected_outputs(case)[0]

    with pytest.raises(harness.Invalid, match="SPAN"):
        outputs(-2 ** 31, 2 ** 31 - 1, 2 ** 30)
    with pytest.raises(harness.Invalid, match="SPAN"):  # float32 counts 2^24 + 1 as 2^24
        outputs(0, 2 ** 24 + 1, 2 ** 23, np.int64)
    assert outputs(-3, 3, 2).tolist() == [-3, -1, 1]
    assert outputs(0, 2 ** 24, 2 ** 23, np.int64).tolist() == [0, 2 ** 23]


def test_range_counts_small_and_delta_nonzero():
    for types in ({"T": "tensor(int32)"}, {"T": "tensor(float)"}):
        for c in _drawn("Range", 11, 60, types=types):
            s, lim, d = (float(_in(c, k)) for k in ("start", "limit", "delta"))
            assert d != 0 and max(np.ceil((lim - s) / d), 0) <= 12


def test_constant_of_shape_value_matches_output_type():
    drawn = _drawn("ConstantOfShape", 20, 80)
    for c in drawn:
        value = dict(c.attributes).get("value")
        out = dict(c.types)["T2"]
        if value is None:
            assert out == "tensor(float)"
        else:
            assert value.shape == (1,)
    assert any(_in(c, "input").size == 0 for c in drawn)  # a scalar output


def test_squeeze_unsqueeze_axes():
    for c in _drawn("Squeeze", 13, 80):
        axes = _in(c, "axes")
        if axes is not None:
            assert axes.size and all(_in(c, "data").shape[int(a)] == 1 for a in axes)
    drawn = _drawn("Unsqueeze", 13, 80)
    assert any((_in(c, "axes") < 0).any() for c in drawn)
    for c in drawn:
        r = _in(c, "data").ndim + _in(c, "axes").size
        assert len({int(a) % r for a in _in(c, "axes")}) == _in(c, "axes").size  # unique in the output rank
    assert all(min(_attrs(c)["axes"]) >= 0 for c in _drawn("Unsqueeze", 1, 40))  # non-negative in version 1


def test_flatten_transpose_blocks_grid():
    assert any(_attrs(c)["axis"] == _in(c, "input").ndim for c in _drawn("Flatten", 13, 60))  # axis = rank
    assert all(_attrs(c)["axis"] >= 0 for c in _drawn("Flatten", 9, 40))
    for c in _drawn("Transpose", 13, 40):
        perm = _attrs(c).get("perm")
        assert perm is None or sorted(perm) == list(range(_in(c, "data").ndim))
    drawn = _drawn("DepthToSpace", 13, 60)
    assert {_attrs(c)["mode"] for c in drawn} == {"DCR", "CRD"} and {_attrs(c)["blocksize"] for c in drawn} >= {2, 3}
    drawn = _drawn("GridSample", 20, 80, types={"T1": "tensor(float)", "T2": "tensor(float)"})
    assert {_in(c, "X").ndim for c in drawn} == {4, 5}
    assert {_attrs(c)["mode"] for c in drawn} == {"linear", "nearest", "cubic"}
    assert {_attrs(c)["padding_mode"] for c in drawn} == {"zeros", "border", "reflection"}
    assert {_in(c, "X").ndim for c in _drawn("GridSample", 16, 40)} == {4}


def test_reduce_axes_input_forms():
    drawn = _drawn("ReduceSum", 13, 120)
    forms = {("none" if _in(c, "axes") is None else "empty" if _in(c, "axes").size == 0 else "given") for c in drawn}
    assert forms == {"none", "empty", "given"}
    assert {_attrs(c)["noop_with_empty_axes"] for c in drawn} == {0, 1}
    assert any(_in(c, "axes") is not None and (_in(c, "axes") < 0).any() for c in drawn)
    assert all(_in(c, "data").size for c in _drawn("ReduceMean", 18, 60))  # ReduceMean's rule V1


@pytest.mark.parametrize("since", [2, 11, 13, 18])
def test_split_declares_each_part_as_an_output(since):
    """The node declares as many outputs as there are parts (1 to 4): before, every case declared
    one output, so Split was only tested as a copy."""
    from opkit.cases import onnx_model as model

    drawn = op_cases("Split", since, 60, types={"T": "tensor(float)"})
    assert {c.n_outputs for c in drawn} == {1, 2, 3, 4}
    version = harness.load_op("ai.onnx", "Split").version(since)
    for case in drawn[:15]:
        expected = harness.expected_outputs(case)
        assert len(expected) == case.n_outputs
        built = model.build(case, version)
        assert len(built.model.graph.output) == case.n_outputs and built.inference_error is None


def test_affine_grid_draws_the_texts_shapes_and_leaves_undefined_ones_out():
    """theta (N, 2, 3) / (N, 3, 4) with size (N, C, H, W) / (N, C, D, H, W) of theta's N, every
    extent >= 1; with align_corners no spatial extent of 1 (the one pixel's centre is both -1 and 1:
    the function body gives NaN or -1, PyTorch 0, onnxruntime 1); no 2-D batch of one (the function
    body's Squeeze without axes fails on it, where the doc defines a grid)."""
    from opkit.cases.case import make_case

    drawn = _drawn("AffineGrid", 20, 80)
    seen = set()
    for c in drawn:
        theta, size, align = _in(c, "theta"), _in(c, "size").tolist(), _attrs(c).get("align_corners", 0)
        assert theta.shape[1:] in ((2, 3), (3, 4)) and len(size) == theta.shape[1] + 2 and size[0] == theta.shape[0]
        assert min(size) >= 1 and (not align or min(size[2:]) >= 2) and (theta.shape[1] == 3 or size[0] >= 2)
        seen.add((theta.shape[1], bool(align), min(size[2:]) == 1))
    assert {(2, False, True), (2, True, False)} <= seen and any(s[0] == 3 for s in seen), seen
    spec = harness.load_op("ai.onnx", "AffineGrid")
    version = spec.version(20)

    def outputs(size, align, theta=np.stack([np.eye(2, 3, dtype=np.float32)] * 2)):
        case = make_case(spec, version, {"T1": "tensor(float)", "T2": "tensor(int64)"}, {"align_corners": align},
                         [("theta", theta[:size[0]]), ("size", np.asarray(size, np.int64))])
        return harness.expected_outputs(case)[0]

    with pytest.raises(harness.Invalid, match="ONE"):
        outputs([2, 1, 3, 1], 1)
    with pytest.raises(harness.Invalid, match="EXTENT"):
        outputs([2, 1, 0, 2], 0)
    with pytest.raises(harness.Invalid, match="BODY_BATCH"):
        outputs([1, 1, 2, 2], 0)
    assert outputs([2, 1, 1, 2], 0)[1].tolist() == [[[-0.5, 0.0], [0.5, 0.0]]]
    assert outputs([2, 1, 2, 2], 1)[0].tolist() == [[[-1, -1], [1, -1]], [[-1, 1], [1, 1]]]
    assert outputs([1, 1, 1, 2, 2], 0, np.eye(3, 4, dtype=np.float32)[None]).shape == (1, 1, 2, 2, 3)  # 3-D: N = 1


def test_grid_sample_cubic_border_stays_inside_the_grid():
    """Cubic with border padding outside [-1, 1] is undefined (rule CUBIC_BORDER: the location may
    be clamped first, -2.0, or the kernel evaluated past the border, PyTorch's and onnxruntime's
    -2.1318): such grids are clipped to [-1, 1]; other modes still go past the border."""
    from opkit.cases.case import make_case

    outside = {"cubic_border": 0, "other": 0}
    for since in (16, 20):
        for c in _drawn("GridSample", since, 120):
            a, grid = _attrs(c), _in(c, "grid").astype(np.float64)
            cubic = a.get("mode") in ("cubic", "bicubic") and a.get("padding_mode") == "border"
            outside["cubic_border" if cubic else "other"] += bool(np.any(np.abs(grid) > 1))
    assert outside["cubic_border"] == 0 and outside["other"] > 0, outside
    spec = harness.load_op("ai.onnx", "GridSample")
    case = make_case(spec, spec.version(20), {"T1": "tensor(float)", "T2": "tensor(float)"},
                     {"mode": "cubic", "padding_mode": "border"},
                     [("X", np.array([[[[0.0, -2.0]]]], np.float32)), ("grid", np.array([[[[1.125, 0.0]]]], np.float32))])
    with pytest.raises(harness.Invalid, match="CUBIC_BORDER"):
        harness.expected_outputs(case)


def test_grid_sample_nearest_near_a_tie_is_undefined():
    """Nearest mode rounds the location ((g + 1) * s - 1) / 2: a grid of 1.65e-5 on an axis of 2 is
    0.50000825 (pixel 1) exactly, but a tie in float32 arithmetic for 5.96e-8 (onnxruntime took
    pixel 0 where opkit took 1, 19 of 54 elements): locations within float32 rounding of a tie are
    left out (rule NEAR_TIE); exact ties and clear locations stay."""
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "GridSample")

    def sample(g):
        case = make_case(spec, spec.version(20), {"T1": "tensor(float)", "T2": "tensor(float)"}, {"mode": "nearest"},
                         [("X", np.array([[[[1.0, 2.0]]]], np.float32)), ("grid", np.array([[[[g, 0.0]]]], np.float32))])
        return harness.expected_outputs(case)[0].ravel().tolist()

    with pytest.raises(harness.Invalid, match="NEAR_TIE"):
        sample(5.96e-8)
    assert sample(0.25) == [2.0] and sample(-0.25) == [1.0]
    assert len(sample(0.0)) == 1  # an exact tie: whatever the tie rule, computed exactly everywhere
    assert_mostly_valid(spec, spec.version(20), 3, 10)
