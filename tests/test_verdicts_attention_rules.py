"""Audit of onnxruntime findings for Attention (issue #12): the rule D1 of Attention-23/24/25
(``attention_defined``) rejects the calls whose result ONNX leaves undefined and keeps the ones
onnxruntime gets wrong; the hook draws only defined calls; the kernel composes a float mask with the
causal rule additively, as the function body does."""

from __future__ import annotations

import numpy as np
import pytest

from family_cases import op_cases

F32_MAX = float(np.finfo(np.float32).max)


def _kernel(since):
    from opkit.kernels.registry import get_kernel

    return get_kernel("", "Attention", since)


def _call(since, q, k, v, mask=None, nonpad=None, **attrs):
    args = [q, k, v, mask, None, None] + ([nonpad] if since >= 24 else [])
    return _kernel(since)(*args, **attrs)


def _t(values, dtype):
    return np.asarray(values, dtype).reshape(1, 1, -1, np.shape(values)[-1])


# (since, q, k, v, mask, nonpad, attrs): the undefined sub-cases of the two mixed causes
UNDEFINED = {
    # float16 Mul(Q, sqrt(2)) overflows (65504 * 1.414 = inf; 92636 in float32)
    "float16 Q * sqrt(scale) overflows": (23, [[65504.0, 0.0]], [[0.0188, -0.156]], [[1.0]], None, None, {"scale": 2.0}),
    # float16 6e-8 * sqrt(0.125) underflows to 0, then 0 * inf = NaN (float32: inf)
    "float16 Q * sqrt(scale) underflows": (23, [[5.96e-8, 9.9]], [[np.inf, -0.067]], [[1.0]], None, None,
                                           {"scale": 0.125}),
    # float16 K * sqrt(2) = inf against Q = 0: 0 * inf = NaN (float32: 34.5)
    "float16 K * sqrt(scale) overflows": (24, [[0.0, 0.0, 2.0]], [[65504.0, -0.00085, 8.63]], [[1.0, 2.0, 3.0]], None,
                                          None, {"scale": 2.0}),
    # float32: FLT_MAX * sqrt(2) = inf next to -inf: NaN in the body, +inf exactly (order / FMA decides)
    "float32 inf next to an overflowing product": (24, [[F32_MAX, -1.75, -np.inf, -0.158]], [[-1.0, -3.0, -3.0, -3.0]],
                                                   [[1.0]], None, None, {"scale": 2.0}),
    # NaN in K at a key nonpad_kv_seqlen pads out: the body adds -inf to NaN
    "NaN in K at a padded key": (24, [[2.0, 1.0, 0.0]], [[0.55, -1.0, 1.17], [np.nan, -42.1, 0.0004]],
                                 [[2.0, 1.0, 0.0], [-2.0, -1.0, -3.0]], None, np.array([1], np.int64), {}),
    # inf in V at a key a boolean mask excludes: the body multiplies it by a 0 weight
    "inf in V at a masked key": (23, [[1.0]], [[1.0], [2.0]], [[3.0], [np.inf]], np.array([[True, False]]), None, {}),
}


@pytest.mark.parametrize("name", list(UNDEFINED))
def test_undefined_attention_calls_are_rejected(name):
    """Each of these gave a NaN-versus-number finding against onnxruntime that ONNX does not settle
    (the function body and the text's exact reading disagree); the kernel now rejects them (rule D1)
    instead of charging onnxruntime."""
    from opkit.kernels import KernelValidationError

    since, q, k, v, mask, nonpad, attrs = UNDEFINED[name]
    dt = np.float16 if name.startswith("float16") else np.float32
    with pytest.raises(KernelValidationError, match="D1"):
        _call(since, _t(q, dt), _t(k, dt), _t(v, dt), mask, nonpad, **attrs)


def test_real_attention_findings_stay_defined():
    """What stays charged to onnxruntime is drawn and checked: scaling before the matmul keeps
    Q = 2, K = FLT_MAX, scale 0.5 finite (onnxruntime scales after and gets NaN); a fully masked row
    is a zero row (onnxruntime NaN); a query whose only attended key scores -inf is NaN under the
    causal rule (onnxruntime returns the V row of the key the rule excludes)."""
    f = np.float32
    for since in (23, 24, 25):
        y = _call(since, _t([[2.0]], f), _t([[-3.2233], [F32_MAX]], f), _t([[2.0], [1.0]], f), scale=0.5)[0]
        assert y.ravel().tolist() == [1.0]
        y = _call(since, _t([[2.0]], np.float64), _t([[2.0]], np.float64), _t([[2.0]], np.float64),
                  np.array([[False]]))[0]
        assert y.ravel().tolist() == [0.0]
        with np.errstate(invalid="ignore"):
            y = _call(since, _t([[1.0]], f), _t([[-np.inf], [1.0]], f), _t([[0.0], [-2.0]], f), is_causal=1)[0]
        assert np.isnan(y).all()
    y = _call(24, _t([[2.0]], np.float64), _t([[2.0]], np.float64), _t([[2.0]], np.float64),
              nonpad=np.array([0], np.int64))[0]
    assert y.ravel().tolist() == [0.0]


def test_float_mask_is_added_to_the_causal_bias():
    """The body sums the biases ("AttnBiasCausalOrNot = Add (AttnBias, MaskTri)"): a NaN in a float
    mask at a key the causal rule excludes stays NaN (NaN + -inf), so the row is NaN; the kernel
    replaced it by -inf and expected a number. Such a call is then undefined (the causal text says
    the key is not attended) and rule D1 rejects it."""
    from opkit.kernels import KernelValidationError
    from opkit.kernels.lib import attention

    f = np.float32
    q, k, v = _t([[1.0]], f), _t([[1.0], [1.0]], f), _t([[3.0], [5.0]], f)
    mask = np.array([[0.0, np.nan]], f)
    with np.errstate(invalid="ignore"):
        y = attention(q, k, v, mask, is_causal=1)[0]
    assert np.isnan(y).all()
    with np.errstate(invalid="ignore"):
        y = attention(q, k, v, np.array([[0.0, 7.0]], f), is_causal=1)[0]
    assert y.ravel().tolist() == [3.0]
    with pytest.raises(KernelValidationError, match="D1"):
        _call(23, q, k, v, mask, is_causal=1)


@pytest.mark.parametrize("since", [23, 24, 25])
def test_attention_hook_draws_defined_calls(since):
    """The hook redraws small values where rule D1 would not hold, so every drawn case is defined
    and the differential suite never charges an undefined result."""
    from opkit.kernels.lib import attention_defined

    seen = 0
    for case in op_cases("Attention", since, 60):
        args = case.positional()
        attrs = case.kernel_attributes()
        for name in ("scale", "softcap"):
            if attrs.get(name) is not None:
                attrs[name] = float(np.float32(attrs[name]))
        seen += 1
        assert attention_defined(*args, **attrs), case
    assert seen
