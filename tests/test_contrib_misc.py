"""com.microsoft contrib ops without a family of their own (ExpandDims, Range, Inverse, CDist,
IsAllFinite, ComplexMul(Conj), TorchEmbedding, Unique, GatherND, Pad, MurmurHash3, BiasSplitGelu,
GridSample):
kernels against hand-computed values and onnxruntime's test vectors, their rules, and the
com.microsoft builders of the shape and indices family hooks (every drawn case satisfies the rules)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from opkit.cases import cases
from opkit.conformance import harness
from opkit.kernels import KernelValidationError
from opkit.kernels.lib import complex_mul, murmur3_32, murmur_hash3
from opkit.kernels.registry import get_kernel

MS = "com.microsoft"


def k(op):
    return get_kernel(MS, op, 1)


# ------------------------------------------------------------------------------------ kernels


@pytest.mark.parametrize("axis,shape", [(0, (1, 2, 3)), (1, (2, 1, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)), (-3, (1, 2, 3))])
def test_expand_dims_positions(axis, shape):
    (y,) = k("ExpandDims")(np.ones((2, 3), np.float32), np.array(axis, np.int32))
    assert y.shape == shape


def test_expand_dims_rejects_axis_past_the_output():
    with pytest.raises(KernelValidationError) as err:
        k("ExpandDims")(np.ones((2, 3), np.float32), np.array(3, np.int32))
    assert err.value.rule == "C2"


def test_range_counts_like_onnx_and_defaults_delta():
    (y,) = k("Range")(np.array([0], np.int32), np.array([5], np.int32))
    assert y.tolist() == [0, 1, 2, 3, 4] and y.dtype == np.int32
    (y,) = k("Range")(np.array(2.0, np.float32), np.array(-8.1, np.float32), np.array(-2.0, np.float32))
    assert y.tolist() == [2, 0, -2, -4, -6, -8]  # onnxruntime's ScalarFloatNegativeDelta
    (y,) = k("Range")(np.array(3, np.int64), np.array(1, np.int64), np.array(1, np.int64))
    assert y.shape == (0,)


def test_range_rejects_zero_delta():
    with pytest.raises(KernelValidationError) as err:
        k("Range")(np.array(0, np.int64), np.array(3, np.int64), np.array(0, np.int64))
    assert err.value.rule == "C2"


def test_inverse_matches_hand_inverse_and_refuses_singular():
    (y,) = k("Inverse")(np.array([[4, 7], [2, 6]], np.float32))
    np.testing.assert_allclose(y, [[0.6, -0.7], [-0.2, 0.4]], rtol=1e-6)
    with pytest.raises(KernelValidationError) as err:
        k("Inverse")(np.array([[1, 2], [2, 4]], np.float64))
    assert err.value.rule == "C4"


def test_cdist_metrics():
    a = np.array([[0, 0], [3, 4]], np.float32)
    b = np.array([[0, 0]], np.float32)
    (sq,) = k("CDist")(a, b)
    (eu,) = k("CDist")(a, b, metric="euclidean")
    assert sq.ravel().tolist() == [0, 25] and eu.ravel().tolist() == [0, 5]


def test_is_all_finite_modes():
    f = np.float32
    assert bool(k("IsAllFinite")(np.array([1, 2], f), np.array([3], f))[0])
    assert not bool(k("IsAllFinite")(np.array([1, np.inf], f))[0])
    assert bool(k("IsAllFinite")(np.array([np.nan], f), isinf_only=1)[0])
    assert not bool(k("IsAllFinite")(np.array([np.nan], f), isnan_only=1)[0])
    assert bool(k("IsAllFinite")(np.array([np.inf], f), isnan_only=1)[0])
    with pytest.raises(KernelValidationError):
        k("IsAllFinite")(np.array([1], f), isnan_only=1, isinf_only=1)


def test_complex_mul_and_conj():
    a = np.array([[-0.5, 0.6]], np.float32)
    b = np.array([[0.8, -0.5], [0.0, 1.0]], np.float32)
    # onnxruntime's test values: (-0.5 + 0.6i)(0.8 - 0.5i) = -0.1 + 0.73i; with conj(b): -0.7 + 0.23i
    np.testing.assert_allclose(complex_mul(a, b), [[-0.1, 0.73], [-0.6, -0.5]], rtol=1e-6)
    np.testing.assert_allclose(complex_mul(a, b, conj=True), [[-0.7, 0.23], [0.6, 0.5]], rtol=1e-6)
    with pytest.raises(KernelValidationError):
        k("ComplexMul")(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


def test_torch_embedding_ignores_gradient_only_inputs():
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    (y,) = k("TorchEmbedding")(w, np.array([[2, 0]], np.int64), np.array(0, np.int64))
    assert y.tolist() == [[[4, 5], [0, 1]]]
    with pytest.raises(KernelValidationError) as err:
        k("TorchEmbedding")(w, np.array([-1], np.int64))
    assert err.value.rule == "C2"


def test_unique_keeps_first_occurrence_order():
    y, idx, counts = k("Unique")(np.array([2, 1, 1, 3, 4, 3], np.int64))
    assert y.tolist() == [2, 1, 3, 4] and idx.tolist() == [0, 1, 1, 2, 3, 2] and counts.tolist() == [1, 2, 2, 1]


def test_gather_nd_rejects_negative_indices():
    (y,) = k("GatherND")(np.array([[0, 1], [2, 3]], np.int64), np.array([[1], [0]], np.int32))
    assert y.tolist() == [[2, 3], [0, 1]]
    with pytest.raises(KernelValidationError) as err:
        k("GatherND")(np.array([[0, 1], [2, 3]], np.int64), np.array([[-1]], np.int64))
    assert err.value.rule == "C3"


def test_pad_takes_2d_pads_and_value_input():
    (y,) = k("Pad")(np.array([[1.0, 2.0]], np.float32), np.array([[0, 1, 1, 0]], np.int64), np.array([9.0], np.float32))
    assert y.tolist() == [[9, 1, 2], [9, 9, 9]]
    (y,) = k("Pad")(np.array([[1.0, 2.0, 3.0]], np.float32), np.array([0, 2, 0, 0], np.int64), mode="reflect")
    assert y.tolist() == [[3, 2, 1, 2, 3]]


# SMHasher's verification vectors of MurmurHash3_x86_32 (key, seed, hash)
_VECTORS = [(b"", 0, 0), (b"", 1, 0x514E28B7), (b"", 0xFFFFFFFF, 0x81F16F39), (b"\xff\xff\xff\xff", 0, 0x76293B50),
            (b"\x21\x43\x65\x87", 0, 0xF55B516B), (b"\x21\x43\x65", 0, 0x7E4A8634), (b"\x21\x43", 0, 0xA0F7B07A),
            (b"\x21", 0, 0x72661CF4), (b"Hello, world!", 0x9747B28C, 0x24884CBA)]


@pytest.mark.parametrize("key,seed,expected", _VECTORS)
def test_murmur3_reference_vectors(key, seed, expected):
    assert murmur3_32(key, seed) == expected


def test_murmur_hash3_matches_onnxruntime_tests():
    # murmur_hash3_test.cc
    assert murmur_hash3(np.array([3, 4], np.int32)).tolist() == [847579505, 1889779975]
    signed = murmur_hash3(np.array([3], np.int32), positive=0, seed=42)
    assert signed.dtype == np.int32 and signed.tolist() == [-1823081949]
    strings = np.array(["foo", "bar"], dtype=object)
    assert murmur_hash3(strings).tolist() == [4138058784, 1158584717]
    assert murmur_hash3(strings[:1], seed=42, positive=0).tolist() == [-1322301282]


def test_murmur_hash3_hashes_the_representation():
    # 8-byte types hash 8 bytes; -0.0 and 0.0 differ bit for bit
    assert murmur_hash3(np.array([3], np.int64))[0] == murmur3_32((3).to_bytes(8, "little"), 0)
    z = murmur_hash3(np.array([0.0, -0.0], np.float32))
    assert z[0] != z[1]


def test_bias_split_gelu_gates_left_half():
    (y,) = k("BiasSplitGelu")(np.array([[[1.0, 2.0, 0.0, 3.0]]], np.float32), np.zeros(4, np.float32))
    gelu3 = 0.5 * 3 * (1 + math.erf(3 / math.sqrt(2)))
    np.testing.assert_allclose(y, [[[0.0, 2 * gelu3]]], rtol=1e-6)


def test_ngram_repeat_block_bans_the_follower_of_each_repeat():
    ids = np.array([[0, 1, 2, 3, 1, 2], [0, 0, 0, 1, 0, 0]], np.int64)
    scores = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    (out,) = k("NGramRepeatBlock")(ids, scores, ngram_size=3)
    assert out.tolist() == [[1, 2, 3, -np.inf], [-np.inf, -np.inf, 7, 8]]  # onnxruntime's NGramSize_3
    (out,) = k("NGramRepeatBlock")(ids[:, :2], scores, ngram_size=3)
    assert out.tolist() == scores.tolist()  # too short to repeat a trigram


def test_unfold_tensor_windows():
    (y,) = k("UnfoldTensor")(np.arange(1, 8, dtype=np.int64), size=2, step=2)
    assert y.tolist() == [[1, 2], [3, 4], [5, 6]]  # (7 - 2) // 2 + 1 windows, the 7 left out
    (y,) = k("UnfoldTensor")(np.array([[1, 2], [3, 4], [5, 6]], np.int32), size=2, dim=0)
    assert y.shape == (2, 2, 2) and y[1].tolist() == [[3, 5], [4, 6]]  # window axis last
    with pytest.raises(KernelValidationError) as err:
        k("UnfoldTensor")(np.arange(3, dtype=np.float32), size=4)
    assert err.value.rule == "C2"


def _grid_inputs():
    rng = np.random.default_rng(3)
    x = rng.integers(-4, 5, (2, 2, 3, 2)).astype(np.float32)
    grid = (rng.integers(-10, 11, (2, 2, 3, 2)) / 8).astype(np.float32)  # some outside [-1, 1]
    return x, grid


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_is_onnx_grid_sample_16(mode, padding_mode, align_corners):
    x, grid = _grid_inputs()
    if mode == "bicubic" and padding_mode == "border":
        grid = np.clip(grid, -1, 1)  # rule CUBIC_BORDER
    onnx_mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    (want,) = get_kernel("", "GridSample", 16)(x, grid, mode=mode, padding_mode=padding_mode,
                                               align_corners=align_corners)
    (got,) = k("GridSample")(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    (also,) = get_kernel("", "GridSample", 20)(x, grid, mode=onnx_mode, padding_mode=padding_mode,
                                               align_corners=align_corners)
    assert np.array_equal(got, also)


def test_grid_sample_reflects_about_pixel_centres_or_edges():
    x = np.array([[[[0.0, 1.0, 2.0, 3.0]]]], np.float32)  # H 1, W 4
    grid = np.array([[[[1.5, 0.0]]]], np.float32)
    # align_corners: x' = 2.5 / 2 * 3 = 3.75, reflected about 3 to 2.25; otherwise x' = 4.5, about 3.5 to 2.5
    (y,) = k("GridSample")(x, grid, padding_mode="reflection", align_corners=1)
    assert y.ravel().tolist() == [2.25]
    (y,) = k("GridSample")(x, grid, padding_mode="reflection")
    assert y.ravel().tolist() == [2.5]


def test_grid_sample_rules():
    x, grid = _grid_inputs()
    with pytest.raises(KernelValidationError) as err:  # Y is X's type, and T2 only holds floats
        k("GridSample")(x.astype(np.int32), grid.astype(np.int32))
    assert err.value.rule == "T"
    with pytest.raises(KernelValidationError) as err:  # 5-D: only spatial (4-D) inputs
        k("GridSample")(x[:, :, None], grid[:, None].repeat(2, axis=-1)[..., :3])
    assert err.value.rule == "V1"
    with pytest.raises(KernelValidationError) as err:
        k("GridSample")(x, grid[:1])
    assert err.value.rule == "V2"
    with pytest.raises(KernelValidationError) as err:  # border-padded bicubic outside [-1, 1]
        k("GridSample")(x, grid, mode="bicubic", padding_mode="border")
    assert err.value.rule == "CUBIC_BORDER"
    with pytest.raises(KernelValidationError):
        k("GridSample")(x, grid, mode="linear")  # ai.onnx GridSample-20's name: not the contrib op's


def test_grid_sample_binds_floats_only_and_declines_another_output_type():
    """Rule T is about the binding: X and Grid (T1) are never drawn of a non-float type. T2 types
    Y alone, which no rule reads, so the hook declines a binding whose Y is not X's type."""
    from opkit.cases.bindings import all_bindings
    from opkit.cases.case import NotGeneratable

    spec = harness.load_op(MS, "GridSample")
    version = spec.version(1)
    assert {b["T1"] for b in all_bindings(version)} == {"tensor(float16)", "tensor(float)", "tensor(double)"}
    declined = []

    @settings(max_examples=5, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        try:
            data.draw(cases(spec, version, types={"T1": "tensor(float)", "T2": "tensor(double)"}))
        except NotGeneratable:
            declined.append(True)
            return
        raise AssertionError("a float X with a double Y was drawn")

    check()
    assert declined


# ------------------------------------------------------------------------------------ generator


@pytest.mark.parametrize("op", ["ExpandDims", "Range", "TorchEmbedding", "Unique", "GatherND", "Pad", "MurmurHash3",
                                "NGramRepeatBlock", "UnfoldTensor", "GridSample"])
def test_contrib_builders_draw_valid_cases(op):
    spec = harness.load_op(MS, op)
    version = spec.versions[0]
    kernel = k(op)
    seen = []

    # GridSample's Y is X's type: the hook declines other T2 (test_grid_sample_binds_floats_only...)
    types = {"T1": "tensor(float)", "T2": "tensor(float)"} if op == "GridSample" else None

    @settings(max_examples=30, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(spec, version, types=types))
    def check(case):
        kernel(*case.positional(), **case.kernel_attributes())  # raises on a broken rule
        seen.append(case)
        if op == "MurmurHash3":  # the declared output type follows positive
            positive = case.kernel_attributes().get("positive", 1)
            assert (case.type_map["T2"] == "tensor(uint32)") == (positive == 1)

    check()
    assert seen


def test_onnx_builders_untouched_by_contrib_routing():
    # ai.onnx GatherND still draws negative indices where its text allows them ([-s, s-1], opset 13)
    spec = harness.load_op("ai.onnx", "GatherND")
    negative = []

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(spec, spec.version(13)))
    def check(case):
        idx = dict(case.inputs)["indices"]
        negative.append(bool(idx.size and idx.min() < 0))

    check()
    assert any(negative)


def test_an_attribute_that_selects_the_output_type_follows_the_binding_in_every_derived_case():
    """MurmurHash3's ``positive`` selects uint32 (1) or int32 (0): the fixed edge cases crossed it
    with every value of its set and the attribute-value edges flipped it, so 14 of 27 cases built
    models onnxruntime rightly refused (output type mismatch)."""
    from opkit.cases.fixed import edge_cases
    from opkit.cases.edges import _attribute_pairs
    from opkit.cases.derived import with_default_attributes

    spec = harness.load_op("com.microsoft", "MurmurHash3")
    version = spec.versions[-1]
    for t2, want in (("tensor(uint32)", 1), ("tensor(int32)", 0)):
        for case in edge_cases(spec, version, {"T1": "tensor(int32)", "T2": t2}):
            assert dict(case.attributes).get("positive") == want
            plain = with_default_attributes(case, version)
            assert plain is None or dict(plain.attributes).get("positive") == want
    assert all(name != "positive" for name, _ in _attribute_pairs(version))
