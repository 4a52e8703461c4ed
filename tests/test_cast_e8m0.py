"""Casts to float8e8m0 (a power of two, no sign, no zero): what the Cast text's table defines and
what it leaves undefined (rule E8M0)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from opkit.conformance import harness
from opkit.kernels.runtime import cast_to, e8m0_cast_defined


def _bits(x, saturate=1, round_mode="up"):
    return cast_to(np.asarray(x), "float8e8m0", saturate, round_mode).view(np.uint8).tolist()


def test_rounding_modes():
    # 3 lies between 2 (bits 128) and 4 (129): up 4, down 2, nearest 4 ("ties round up": 3 is the midpoint)
    assert _bits(np.float32([3.0, 2.0, 2.9, 3.1]), 1, "nearest") == [129, 128, 128, 129]
    assert _bits(np.float32([3.0, 2.0]), 1, "up") == [129, 128]
    assert _bits(np.float32([3.0, 2.0]), 1, "down") == [128, 128]
    # a double's low bits decide "up": 1 + 2**-40 is above 1 (through float32 it would be 1)
    assert _bits(np.float64([1 + 2.0 ** -40]), 1, "up") == [128]
    assert _bits(np.float32([2.0 ** -127]), 1, "up") == [0]  # a float32 subnormal, exactly E8M0_MIN


def test_the_tables_out_of_range_values():
    big, tiny = np.float64([2.0 ** 200]), np.float64([2.0 ** -140])
    # saturate + up: E8M0_MIN / E8M0_MAX; non-saturate + nearest: NaN (0 too)
    assert _bits(big, 1, "up") == [254] and _bits(tiny, 1, "up") == [0] and _bits(np.float32([0.0]), 1, "up") == [0]
    assert _bits(big, 0, "nearest") == [255] and _bits(tiny, 0, "nearest") == [255]
    assert _bits(np.float32([0.0]), 0, "nearest") == [255] and _bits(np.float32([np.inf]), 0, "nearest") == [255]
    assert _bits(np.float32([np.nan]), 1, "up") == [255]


def test_what_the_text_leaves_undefined():
    assert not e8m0_cast_defined(np.float32([-1.5]), "float8e8m0")  # "negative values ... undefined"
    assert not e8m0_cast_defined(np.float32([-0.0]), "float8e8m0")  # "-0 | Unspecified"
    assert not e8m0_cast_defined(np.int32([0]), "float8e8m0", 0, "up")  # not tabled: non-saturate + up
    assert e8m0_cast_defined(np.int32([0]), "float8e8m0", 0, "nearest")
    assert not e8m0_cast_defined(np.int32([0]), "float8e8m0", 1, "down")  # saturate + down: not tabled either
    assert not e8m0_cast_defined(np.float32([np.inf]), "float8e8m0", 1, "nearest")
    assert e8m0_cast_defined(np.float32([3.0, 2.0 ** 100]), "float8e8m0", 1, "down")  # in range: every mode
    assert e8m0_cast_defined(np.float32([-1.5]), "float8e4m3fn")  # other targets: not this rule
    spec = harness.load_op("ai.onnx", "CastLike")
    from opkit.cases.case import make_case

    case = make_case(spec, spec.version(24), {"T1": "tensor(float)", "T2": "tensor(float8e8m0)"},
                     {"saturate": 0, "round_mode": "up"},
                     [("input", np.float32([0.0, 2.0])),
                      ("target_type", np.array([1.0], ml_dtypes.float8_e8m0fnu))])
    with pytest.raises(harness.Invalid, match="E8M0"):
        harness.expected_outputs(case)
