"""com.microsoft block-quantized ops (MatMulNBits, GatherBlockQuantized): the kernels against
hand-computed values, and the family hook's cases against the specs' rules."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from opkit.kernels.registry import get_kernel
from opkit.kernels.runtime import KernelValidationError
from opkit.kernels.lib._contrib_quant import (BNB4_CODES, block_scale_shape, gather_block_quantized, matmul_bnb4,
                                              matmul_nbits, matmul_nbits_weight, unpack_bits)

from family_cases import op_cases


def test_unpack_bits_low_order_first():
    assert unpack_bits(np.array([0x98], np.uint8), 4).tolist() == [8, 9]
    assert unpack_bits(np.array([0b11100100], np.uint8), 2).tolist() == [0, 1, 2, 3]
    assert unpack_bits(np.array([7, 200], np.uint8), 8).tolist() == [7, 200]
    # 3 bits straddle bytes: 0b...001_010_011 -> 3, 2, 1
    assert unpack_bits(np.array([0b01010011, 0b00000000, 0], np.uint8), 3)[:3].tolist() == [3, 2, 1]


def test_matmul_nbits_default_zero_point_and_padding():
    # K = 20: the second block of 16 holds 4 values, its 12 padding values (0xF) must not count
    B = np.zeros((1, 2, 8), np.uint8)
    B[0, 0, :] = 0x99  # 9 - 8 = 1 everywhere
    B[0, 1, :2] = 0xAA  # 10 - 8 = 2 for k = 16..19
    B[0, 1, 2:] = 0xFF
    scales = np.array([[1.0, 0.5]], np.float32)
    A = np.ones((20,), np.float32)
    y = matmul_nbits(A, B, scales, K=20, N=1, block_size=16)
    assert y.tolist() == [16 * 1.0 + 4 * 2 * 0.5]


def test_matmul_nbits_packed_and_float_zero_points_agree():
    rng = np.random.default_rng(0)
    K, N, bs = 40, 3, 16
    B = rng.integers(0, 256, (N, 3, 8)).astype(np.uint8)
    scales = rng.uniform(0.1, 1, (N, 3)).astype(np.float32)
    zp_values = rng.integers(0, 16, (N, 3))
    packed = np.zeros((N, 2), np.uint8)
    packed[:, 0] = zp_values[:, 0] | (zp_values[:, 1] << 4)
    packed[:, 1] = zp_values[:, 2] | 0xF0  # the high nibble pads (only 3 blocks)
    w1 = matmul_nbits_weight(B, scales, packed, K=K, N=N, block_size=bs)
    w2 = matmul_nbits_weight(B, scales, zp_values.astype(np.float32), K=K, N=N, block_size=bs)
    np.testing.assert_array_equal(w1, w2)
    # g_idx of k // block_size is the default blocking
    g = (np.arange(48) // bs).astype(np.int32)
    np.testing.assert_array_equal(matmul_nbits_weight(B, scales, packed, g, K=K, N=N, block_size=bs), w1)


def test_matmul_nbits_g_idx_picks_the_block():
    B = np.full((1, 2, 8), 0x99, np.uint8)  # q = 9 everywhere
    scales = np.array([[1.0, 3.0]], np.float32)
    g = np.ones(32, np.int32)  # every row reads block 1's scale
    w = matmul_nbits_weight(B, scales, None, g, K=32, N=1, block_size=16)
    assert (w == 3.0).all()


def test_matmul_nbits_bias_and_shapes():
    B = np.full((2, 1, 16), 129, np.uint8)  # 8 bits, q - 128 = 1
    scales = np.array([[0.5], [2.0]], np.float32)
    A = np.ones((3, 2, 16), np.float16)
    y = matmul_nbits(A, B, scales, None, None, np.array([1, -1], np.float16), K=16, N=2, block_size=16, bits=8)
    assert y.shape == (3, 2, 2) and y.dtype == np.float16
    assert y[0, 0].tolist() == [9.0, 31.0]


def test_gather_block_quantized_int4_and_out_of_range():
    data = np.array([[-8, 7], [1, 2]], ml_dtypes.int4).repeat(8, axis=1)  # (2, 16)
    scales = np.array([[0.5], [2.0]], np.float32)
    zp = np.array([[-8], [1]], ml_dtypes.int4)
    out = gather_block_quantized(data, np.array([1, 5, -2]), scales, zp, block_size=16, quantize_axis=1,
                                 gather_axis=0)
    assert out.shape == (3, 16)
    assert out[0, :8].tolist() == [0.0] * 8 and out[0, 8:].tolist() == [2.0] * 8
    assert (out[1] == 0).all()  # index 5 is out of range: zeros
    assert out[2, :8].tolist() == [0.0] * 8 and out[2, 8:].tolist() == [7.5] * 8


def test_gather_block_quantized_uint8_packed_zero_points():
    data = np.array([[0x21] * 8], np.uint8)  # 16 values 1, 2, 1, 2 ...
    scales = np.array([[1.0]], np.float32)
    out = gather_block_quantized(data, np.array([0]), scales, np.array([[0xF1]], np.uint8), bits=4,
                                 block_size=16, quantize_axis=1, gather_axis=0)
    assert out[0, :4].tolist() == [0.0, 1.0, 0.0, 1.0]  # zero point: the low nibble, 1
    default = gather_block_quantized(data, np.array([0]), scales, None, bits=4, block_size=16)
    assert default[0, :2].tolist() == [-7.0, -6.0]  # zero point 2^(4 - 1) = 8


def test_gather_block_quantized_float8_broadcast_scale_block_zero():
    data = np.array([[1.0, 2.0], [4.0, -8.0]], ml_dtypes.float8_e4m3fn)
    out = gather_block_quantized(data, np.array(1), np.array([[0.25]], np.float16), None, block_size=0,
                                 quantize_axis=1, gather_axis=0)
    assert out.dtype == np.float16 and out.tolist() == [1.0, -2.0]


def test_matmul_bnb4_high_nibble_first_and_flat_blocks():
    # codes 15 (NF4 1.0) then 0 (NF4 -1.0): the high nibble is the first weight
    y = matmul_bnb4(np.array([1.0, 0.0], np.float32), np.array([0xF0], np.uint8), np.array([2.0], np.float32),
                    K=2, N=1, block_size=16, quant_type=1)
    assert y.tolist() == [2.0]
    # K = 9, N = 2: codes 16 and 17 (row 1's last two) fall in the second block of the flattened weight
    B = np.array([0xFF] * 9, np.uint8)
    w_row1 = matmul_bnb4(np.eye(9, dtype=np.float32), B, np.array([1.0, 10.0], np.float32), K=9, N=2,
                         block_size=16, quant_type=1)[:, 1]
    assert w_row1.tolist() == [1.0] * 7 + [10.0, 10.0]
    # transB 0: A (..., N) @ W (N, K)
    y0 = matmul_bnb4(np.array([1.0, 1.0], np.float32), B, np.array([1.0, 10.0], np.float32), K=9, N=2,
                     block_size=16, quant_type=1, transB=0)
    assert y0.shape == (9,) and y0[-1] == 11.0


def test_bnb4_tables():
    assert BNB4_CODES[1][0] == -1.0 and BNB4_CODES[1][7] == 0.0 and BNB4_CODES[1][15] == 1.0
    assert np.all(np.diff(BNB4_CODES[1]) > 0)  # NF4 codes ascend
    fp4 = BNB4_CODES[0]
    np.testing.assert_array_equal(fp4[8:], -fp4[:8])  # the high bit is the sign
    assert fp4[3] == 1.0 and fp4[1] * 192 == np.float32(1.0)  # 12 -> 1, the subnormal 0.0625 -> 1/192


def test_block_scale_shape():
    assert block_scale_shape(np.zeros((3, 20), np.uint8), 4, 16, 1) == (3, 3)
    assert block_scale_shape(np.zeros((3, 20), np.uint8), 2, 16, -1) == (3, 5)
    assert block_scale_shape(np.zeros((40, 3), ml_dtypes.int4), 4, 32, 0) == (2, 3)
    assert block_scale_shape(np.zeros((2, 5), ml_dtypes.float8_e5m2), 4, 0, 1) == (2, 1)


# ---------------------------------------------------------------------------------------------
# generator validity: every drawn case satisfies the spec's rules (the kernel validates them), over
# type bindings that exercise each data layout


MS = "com.microsoft"

_BINDINGS = {
    "MatMulNBits": [{"T1": "tensor(float)", "T2": "tensor(uint8)", "T3": "tensor(uint8)", "T4": "tensor(int32)"},
                    {"T1": "tensor(float16)", "T2": "tensor(uint8)", "T3": "tensor(float16)", "T4": "tensor(int32)"}],
    "MatMulBnb4": [{"T1": "tensor(float)", "T2": "tensor(uint8)"}, {"T1": "tensor(float16)", "T2": "tensor(uint8)"}],
    "GatherBlockQuantized": [{"T1": f"tensor({t})", "T2": "tensor(float)", "Tind": "tensor(int64)"}
                             for t in ("int4", "uint4", "uint8", "float8e4m3fn", "float4e2m1")],
}


def _run(op, case):
    kernel = get_kernel(MS, op, 1)
    return kernel(*case.positional(), **case.kernel_attributes())


@pytest.mark.parametrize("op,types", [(op, t) for op, ts in _BINDINGS.items() for t in ts])
def test_every_drawn_case_is_valid(op, types):
    drawn = op_cases(op, 1, 40, domain=MS, types=types)
    assert len(drawn) >= 20
    for case in drawn:
        _run(op, case)  # raises KernelValidationError on a broken rule


def test_matmul_nbits_cases_pack_whole_blocks():
    drawn = op_cases("MatMulNBits", 1, 60, domain=MS, types=_BINDINGS["MatMulNBits"][0])
    seen_bits, padded = set(), False
    for case in drawn:
        i, a = dict(case.inputs), dict(case.attributes)
        bits = a.get("bits") or 4
        seen_bits.add(bits)
        K, N, bs = a["K"], a["N"], a["block_size"]
        kb = -(-K // bs)
        assert bs >= 16 and bs & (bs - 1) == 0
        assert i["B"].shape == (N, kb, bs * bits // 8) and i["scales"].shape == (N, kb)
        padded |= K % bs != 0
    assert seen_bits == {2, 4, 8} and padded


def test_gather_uint8_layouts_follow_the_text():
    drawn = op_cases("GatherBlockQuantized", 1, 60, domain=MS, types=_BINDINGS["GatherBlockQuantized"][2])
    for case in drawn:
        i, a = dict(case.inputs), dict(case.attributes)
        r = i["data"].ndim
        assert (a.get("gather_axis") or 0) % r == 0
        if (a.get("bits") or 4) < 8:
            assert (a.get("quantize_axis", 1) if a.get("quantize_axis") is not None else 1) % r != 0


def test_rules_reject_invalid_calls():
    mm = get_kernel(MS, "MatMulNBits", 1)
    B, s = np.zeros((1, 1, 8), np.uint8), np.ones((1, 1), np.float32)
    with pytest.raises(KernelValidationError):  # block_size not a power of two
        mm(np.ones(24, np.float32), np.zeros((1, 1, 12), np.uint8), s, None, None, None, K=24, N=1, block_size=24)
    with pytest.raises(KernelValidationError):  # B's blob size does not fit bits 2
        mm(np.ones(16, np.float32), B, s, None, None, None, K=16, N=1, block_size=16, bits=2)
    with pytest.raises(KernelValidationError):  # a float zero point of another type than A
        mm(np.ones(16, np.float32), B, s, np.ones((1, 1), np.float16), None, None, K=16, N=1, block_size=16)
    g = get_kernel(MS, "GatherBlockQuantized", 1)
    with pytest.raises(KernelValidationError):  # uint8 data gathered on axis 1
        g(np.zeros((2, 8), np.uint8), np.array([0]), np.ones((2, 1), np.float32), None, gather_axis=1,
          quantize_axis=0, block_size=16, bits=8)
    with pytest.raises(KernelValidationError):  # a zero point for FP8 data
        g(np.zeros((2, 16), ml_dtypes.float8_e4m3fn), np.array([0]), np.ones((2, 1), np.float32),
          np.zeros((2, 1), ml_dtypes.float8_e4m3fn), block_size=16)
    with pytest.raises(KernelValidationError):  # block_size 0 for int4 data
        g(np.zeros((2, 16), ml_dtypes.int4), np.array([0]), np.ones((2, 1), np.float32), None, block_size=0)
