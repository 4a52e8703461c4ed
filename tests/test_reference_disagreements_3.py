"""Disagreements of opkit's reference kernels with onnx.reference (group 3: Pow .. Upsample) that
the audit settled on the opkit side: spec rules that keep undefined inputs out of the
differential suite, and the draws that respect them."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.cases.families.elementwise import _pow_defined
from opkit.kernels.lib import int_pow_defined
from opkit.kernels.registry import get_kernel
from opkit.kernels.runtime import KernelValidationError


def _pow(since, x, y):
    return get_kernel("ai.onnx", "Pow", since)(x, y)[0]


@pytest.mark.parametrize("since", [12, 13, 15])
@pytest.mark.parametrize("x, y", [
    (np.array(0, np.int64), np.array(-1, np.int8)),            # 1 / 0: no integer
    (np.array(2, np.int32), np.array(-1, np.int32)),           # 1/2: how it becomes an integer is unsaid
    (np.array(4, np.int32), np.array(0.5, np.float32)),        # a fractional exponent
    (np.array(-2**31, np.int32), np.array(5, np.uint64)),      # -2**155 overflows int32
    (np.array(3037000500, np.int64), np.array(2, np.int64)),   # 2**63 + ...: past int64
    (np.array(2, np.int64), np.array(2**63 + 1, np.uint64)),   # a huge exponent
])
def test_pow_rejects_integer_powers_the_text_does_not_define(since, x, y):
    # before rule RESULT the kernel answered these (0 ** -1 gave int64's minimum)
    with pytest.raises(KernelValidationError, match="RESULT"):
        _pow(since, x, y)


@pytest.mark.parametrize("x, y, want", [
    (np.array([1, -1, -1], np.int32), np.array([-7, -3, -4], np.int16), [1, -1, 1]),
    (np.array([-3037000499], np.int64), np.array([2], np.uint64), [9223372030926249001]),
    (np.array([-1], np.int64), np.array([11749869230777074271], np.uint64), [-1]),
    (np.array([2, 0, 7], np.int32), np.array([30.0, 0.0, 1.0], np.float32), [2**30, 1, 7]),
])
def test_pow_keeps_defined_integer_powers(x, y, want):
    assert _pow(15, x, y).tolist() == want


def test_pow_float_base_is_not_restricted():
    assert int_pow_defined(np.array([0.0], np.float32), np.array([-1], np.int32))
    assert np.isinf(_pow(15, np.array([0.0], np.float32), np.array([-1], np.int32))).all()


def test_pow_hook_repairs_undefined_integer_draws():
    rng = np.random.default_rng(0)
    for dtype, ydtype in [(np.int32, np.int16), (np.int64, np.uint64), (np.int32, np.float32),
                          (np.int64, np.int8)]:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(3, 4), dtype=dtype, endpoint=True)
        if np.dtype(ydtype).kind == "f":
            y = rng.normal(0, 50, size=(4,)).astype(ydtype)
        else:
            yinfo = np.iinfo(ydtype)
            y = rng.integers(yinfo.min, yinfo.max, size=(4,), dtype=ydtype, endpoint=True)
        assert not int_pow_defined(x, y)
        x2, y2 = _pow_defined(x, y)
        assert x2.dtype == x.dtype and y2.dtype == y.dtype and x2.shape == x.shape and y2.shape == y.shape
        assert int_pow_defined(x2, y2)
        _pow(15, x2, y2)  # the kernel takes the repaired draw
    x, y = np.array([3], np.int32), np.array([2], np.int8)
    assert _pow_defined(x, y) == (x, y)  # a defined draw is kept as drawn
