"""Audit of onnxruntime findings for recurrent ops, LayerNormalization / RMSNormalization and Pad
(issue #12): the fixes to opkit that the audit found necessary, each checked against real behaviour."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from opkit.kernels import KernelValidationError
from opkit.kernels.registry import get_kernel


# -- LSTM / GRU / RNN: the Softplus activation ---------------------------------------------------

def test_rnn_softplus_activation_does_not_overflow():
    """Softplus(x) = ln(exp(x) + 1) is x (to rounding) for a large x: 9525 for x = 9525. The RNN
    helper computed log1p(exp(x)), which overflows float64 past x = 709.8 (inf, then 0 * inf = NaN
    in an LSTM's o * h(C)), where opkit's own Softplus kernel uses logaddexp."""
    from opkit.kernels.lib import _activation

    softplus = _activation("Softplus", 0.0, 0.0)
    np.testing.assert_allclose(softplus(np.array([9525.0, 710.0, 0.0, -50.0])),
                               [9525.0, 710.0, math.log(2), math.exp(-50.0)], rtol=1e-15)


def test_lstm_relu_gate_times_large_softplus_cell_is_zero():
    """LSTM-7, activations Relu / Tanh / Softplus, one step: the output gate o = Relu(-4) = 0 and
    the cell C = i * g(1000) = Relu(1000) * tanh(1000) = 1000, so Ht = o * Softplus(C) = 0 * 1000 = 0.
    The kernel gave NaN (Softplus(1000) = inf in float64)."""
    kernel = get_kernel("", "LSTM", 7)
    x = np.ones((1, 1, 1), np.float32)
    # gates in order i, o, f, c
    w = np.array([[[1000.0], [-4.0], [0.0], [1000.0]]], np.float32)
    r = np.zeros((1, 4, 1), np.float32)
    y, y_h, y_c = kernel(x, w, r, activations=["Relu", "Tanh", "Softplus"], hidden_size=1)
    np.testing.assert_array_equal(y_c, [[[1000.0]]])
    np.testing.assert_array_equal(y, [[[[0.0]]]])
    np.testing.assert_array_equal(y_h, [[[0.0]]])


# -- LayerNormalization-17: squared deviations past float32 --------------------------------------

def test_layer_norm_squares_past_float32_are_undefined():
    """bfloat16 [3.39e38, -0.00176] with stash_type 1: (x - mean)^2 = 2.9e76 does not fit float32;
    the function body gives InvStdDev 0 and Y 0, the text's formula Y = [2, -2] (scale 2), as
    onnxruntime computes. Rule SQUARES keeps such slices out; slices holding inf/NaN, and large
    values whose squared deviations fit, stay in."""
    kernel = get_kernel("", "LayerNormalization", 17)
    with pytest.raises(KernelValidationError, match="SQUARES"):
        kernel(np.array([3.39e38, -0.00176], ml_dtypes.bfloat16), np.array(2, ml_dtypes.bfloat16), None,
               axis=0, epsilon=1e-5, stash_type=1)
    x = np.array([[np.nan, 1.0, 3e38], [3.4e38, -1.0, 8.6]], np.float32)
    with pytest.raises(KernelValidationError, match="SQUARES"):
        kernel(x, np.ones(3, np.float32), None, axis=1, epsilon=1e-5, stash_type=1)
    y = kernel(np.array([np.inf, 1.0, 0.0], np.float32), np.ones(3, np.float32), None, axis=0, epsilon=1e-5,
               stash_type=1)[0]
    assert np.isnan(y).all()
    y = kernel(np.array([[1e18, 0.0]], np.float32), np.ones(2, np.float32), None, axis=-1, epsilon=1e-5,
               stash_type=1)[0]
    np.testing.assert_allclose(y, [[1.0, -1.0]], rtol=1e-6)


# -- RMSNormalization-23: an empty normalized slice ------------------------------------------------

def test_rms_norm_empty_normalized_slice_is_undefined():
    """The function body takes ReduceMean of X^2 over X.shape[axis:]; "Reduction over an empty set
    of values yields undefined". Rule EMPTY rejects an empty slice and keeps an X with no slice."""
    kernel = get_kernel("", "RMSNormalization", 23)
    with pytest.raises(KernelValidationError, match="EMPTY"):
        kernel(np.zeros([0], np.float32), np.float32(2), axis=0, epsilon=1e-5, stash_type=1)
    with pytest.raises(KernelValidationError, match="EMPTY"):
        kernel(np.zeros([2, 0], np.float32), np.ones([0], np.float32), axis=-1, epsilon=1e-5, stash_type=1)
    assert kernel(np.zeros([0, 2], np.float32), np.ones(2, np.float32), axis=1, epsilon=1e-5,
                  stash_type=1)[0].shape == (0, 2)


def test_rms_norm_hook_draws_no_empty_slice():
    from family_cases import op_cases

    drawn = op_cases("RMSNormalization", 23, 40)
    assert drawn
    for case in drawn:
        x = dict(case.inputs)["X"]
        axis = dict(case.kernel_attributes()).get("axis")
        axis = -1 if axis is None else int(axis)
        axis = axis % x.ndim
        assert math.prod(x.shape[axis:]) >= 1 or math.prod(x.shape[:axis]) == 0, case


# -- Pad: a non-constant mode padding an axis with no element -------------------------------------

def _pad_call(since):
    kernel = get_kernel("", "Pad", since)
    if since == 1:
        return lambda d, p, mode: kernel(d, mode=mode, paddings=p)[0]
    if since == 2:
        return lambda d, p, mode: kernel(d, mode=mode, pads=p)[0]
    return lambda d, p, mode: kernel(d, np.array(p, np.int64), mode=mode)[0]


@pytest.mark.parametrize("since", [1, 2, 11, 13, 18, 19, 21, 23, 24, 25])
def test_pad_edge_of_an_empty_extent_is_undefined(since):
    """edge / reflect (/ wrap) copy elements of the axis: padding an axis that has none (from the
    start, or after negative pads crop it) has nothing to copy; rule EXTENT rejects it with its
    label (before, numpy's own error inside the kernel). An empty axis that gets no padding, and
    constant mode, stay defined."""
    call = _pad_call(since)
    data = np.ones((1, 3), np.float32)
    with pytest.raises(KernelValidationError, match="EXTENT"):
        call(data, [0, -3, 0, 1], "edge")
    with pytest.raises(KernelValidationError, match="EXTENT"):
        call(np.ones((2, 0), np.float32), [0, 1, 0, 0], "reflect")
    assert call(data, [0, -3, 0, 0], "edge").shape == (1, 0)
    assert call(data, [0, -3, 0, 1], "constant").shape == (1, 1)
    assert call(np.ones((2, 0), np.float32), [1, 0, 1, 0], "edge").shape == (4, 0)
