"""Audit of onnxruntime findings for normalization, reduction and recurrent ops (issue #12): the
fixes to opkit that the audit found necessary, each checked against real behaviour."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from opkit.conformance import harness
from opkit.cases import onnx_model as model

from family_cases import op_cases


# -- BatchNormalization-7/9: the outputs declared choose the mode ---------------------------------

@pytest.mark.parametrize("since", [1, 6, 7, 9])
def test_batch_norm_before_14_declares_only_y(since):
    """Before opset 14 there is no training_mode: "Output case #1: Y, mean, var, saved_mean,
    saved_var (training mode); Output case #2: Y (test mode)". The kernel computes test mode, so a
    case must declare Y alone; declaring all five asked onnxruntime for training mode (batch
    statistics: Y = B for a batch of one) and opkit charged it for not computing test mode."""
    version = harness.load_op("ai.onnx", "BatchNormalization").version(since)
    drawn = op_cases("BatchNormalization", since, 20)
    assert drawn
    for case in drawn:
        assert case.n_outputs == 1, case
    built = model.build(drawn[0], version)
    assert [o.name for o in built.model.graph.output] == ["Y"]


def test_batch_norm_9_test_mode_matches_onnxruntime():
    """The case the sweep charged (X = [[2]], scale = B = 2, mean = 0, var = 2): declared as opkit
    now declares it, onnxruntime computes the test-mode Y the kernel computes."""
    ort = pytest.importorskip("onnxruntime")
    version = harness.load_op("ai.onnx", "BatchNormalization").version(9)
    case = next(c for c in op_cases("BatchNormalization", 9, 20) if dict(c.inputs)["X"].ndim == 2)
    f32 = np.float32
    inputs = {"X": np.array([[2.0]], f32), "scale": np.array([2.0], f32), "B": np.array([2.0], f32),
              "mean": np.array([0.0], f32), "var": np.array([2.0], f32)}
    case = dataclasses.replace(case, inputs=tuple(inputs.items()), types=(("T", "tensor(float)"),),
                               attributes=(), initializers=frozenset())
    built = model.build(case, version, ir_version=8)
    sess = ort.InferenceSession(built.model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, built.feeds)
    kernel_y = harness.expected_outputs(case)[0]
    np.testing.assert_allclose(y, kernel_y, rtol=1e-6)
    np.testing.assert_allclose(y, 2 / np.sqrt(2 + 1e-5) * 2 + 2, rtol=1e-6)


def test_batch_norm_zero_scale_gives_bias_for_a_huge_finite_x():
    """Test mode, scale = 0: Y = (X - mean) / sqrt(var + epsilon) * scale + B is exactly B for any
    finite X. The kernel evaluated the quotient first, which overflows for X = DBL_MAX (inf * 0 =
    NaN); onnxruntime (and exact arithmetic) give B."""
    from opkit.kernels.registry import get_kernel

    from opkit.kernels import KernelValidationError

    x = np.array([[np.finfo(np.float64).max, 3.0]])
    args = (x, np.array([0.0, 0.0]), np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([1.7e-4, 1.7e-4]))
    y = get_kernel("", "BatchNormalization", 7)(*args, epsilon=1e-5, momentum=0.9)[0]
    np.testing.assert_array_equal(y, [[1.0, 2.0]])
    # from opset 9 rule RANGE keeps such inputs out: whether an intermediate overflows depends on
    # the evaluation order, which the text does not fix
    with pytest.raises(KernelValidationError, match=r"\[RANGE\]"):
        get_kernel("", "BatchNormalization", 9)(*args, epsilon=1e-5, momentum=0.9)


# -- LayerNormalization-17: statistics of an empty normalized slice ------------------------------

def test_layer_norm_empty_normalized_slice_is_undefined():
    """Mean and InvStdDev are ReduceMean over X.shape[axis:]; "Reduction over an empty set of
    values yields undefined". The kernel rejects such inputs (rule EMPTY), keeps an X with no
    slice at all (a 0 before the axis: Mean is empty too), and the hook draws neither kind of
    rejected input."""
    from opkit.kernels import KernelValidationError
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "LayerNormalization", 17)
    with pytest.raises(KernelValidationError, match="EMPTY"):
        kernel(np.zeros([0], np.float32), np.float32(2), None, axis=0, epsilon=1e-5, stash_type=1)
    with pytest.raises(KernelValidationError, match="EMPTY"):
        kernel(np.zeros([2, 0], np.float32), np.ones([0], np.float32), None, axis=-1, epsilon=1e-5, stash_type=1)
    y, mean, inv = kernel(np.zeros([0, 0], np.float32), np.float32(2), None, axis=1, epsilon=1e-5, stash_type=1)
    assert y.shape == (0, 0) and mean.shape == (0, 1) and inv.shape == (0, 1)
    for case in op_cases("LayerNormalization", 17, 60):
        x, axis = dict(case.inputs)["X"], dict(case.attributes).get("axis", -1)
        assert x.shape[axis:] and (np.prod(x.shape[axis:]) >= 1 or np.prod(x.shape[:axis]) == 0), case


# -- LpNormalization: p is 1 or 2 ----------------------------------------------------------------

@pytest.mark.parametrize("since", [1, 22])
def test_lp_normalization_p_is_one_or_two(since):
    """"p: The order of the normalization, only 1 or 2 are supported." opkit drew p = 0 (which its
    kernel computed as an L2 norm) and charged onnxruntime for refusing it; the kernel now rejects
    any other p and the generator draws only 1 and 2."""
    from opkit.kernels import KernelValidationError
    from opkit.kernels.registry import get_kernel

    kernel = get_kernel("", "LpNormalization", since)
    with pytest.raises(KernelValidationError):
        kernel(np.zeros([0], np.float32), p=0, axis=-1)
    with pytest.raises(KernelValidationError):
        kernel(np.ones([2], np.float32), p=3, axis=-1)
    np.testing.assert_allclose(kernel(np.array([3.0, 4.0], np.float32), p=1, axis=-1)[0], [3 / 7, 4 / 7])
    drawn = op_cases("LpNormalization", since, 60)
    assert {dict(c.attributes).get("p", 2) for c in drawn} <= {1, 2}


# -- reductions: results ONNX does not define are not drawn --------------------------------------

def _rejects(op, since, *args, **attrs):
    from opkit.kernels import KernelValidationError
    from opkit.kernels.registry import get_kernel

    with pytest.raises(KernelValidationError):
        get_kernel("", op, since)(*args, **attrs)


@pytest.mark.parametrize("since", [1, 11, 13, 18])
def test_reduce_l2_and_sum_square_integer_overflow_is_undefined(since):
    """The L2 norm of int32 -2147483648 is 2**31 and its square 2**62: neither fits int32, and
    ONNX does not say what an integer overflow gives (opkit wrapped, onnxruntime saturates). The
    kernels reject such data (rules RANGE / OVERFLOW) and the hook draws none of it."""
    from opkit.kernels.registry import get_kernel

    int_min = np.array(np.iinfo(np.int32).min, np.int32)
    _rejects("ReduceL2", since, int_min)
    _rejects("ReduceSumSquare", since, int_min)
    assert get_kernel("", "ReduceSumSquare", since)(np.array([3, 4], np.int32))[0] == 25
    for op in ("ReduceL2", "ReduceSumSquare"):
        for case in op_cases(op, since, 40):
            data = dict(case.inputs)["data"]
            if data.dtype.kind in "iu":
                assert sum(int(v) ** 2 for v in data.ravel().tolist()) <= np.iinfo(data.dtype).max, case


@pytest.mark.parametrize("since", [1, 11, 13, 18])
def test_reduce_l2_float_square_overflow_is_undefined(since):
    """float32 3.4028235e38: its L2 norm is itself, but ONNX's function body squares it in float32
    (inf), as onnx.reference and onnxruntime do: not drawn (rule SQUARES)."""
    _rejects("ReduceL2", since, np.array(np.finfo(np.float32).max, np.float32))


@pytest.mark.parametrize("since", [1, 11, 13, 18])
def test_reduce_log_sum_float_sum_overflow_is_undefined(since):
    """The sum of these float32 values overflows float32 (the function body's ReduceSum gives inf,
    the log of the exact sum is 89.4): not drawn (rule SUM)."""
    big = np.full([4], np.finfo(np.float32).max, np.float32)
    _rejects("ReduceLogSum", since, big)


def test_reduce_log_sum_18_is_float_only():
    """ReduceLogSum-18's function body applies Log (float types only) to ReduceSum(data) in T, so
    no integer binding can be computed (onnxruntime refuses uint32 / uint64 models): rule C1."""
    from opkit.spec.type_rules import binding_violation

    _rejects("ReduceLogSum", 18, np.array(3, np.uint32))
    version = harness.load_op("ai.onnx", "ReduceLogSum").version(18)
    for t in ("uint32", "uint64", "int32", "int64"):
        assert binding_violation(version, {"T": f"tensor({t})"}).label == "C1"
    assert binding_violation(version, {"T": "tensor(float)"}) is None


def test_reduce_log_sum_exp_18_integer_exp_overflow_is_undefined():
    """ReduceLogSumExp-18 casts integer data to double, takes exp (inf past 709.78) and casts the
    log back with CastLike: inf to an integer is undefined. Such data is rejected (rule EXP) and the
    hook clips integer data to [-700, 700]."""
    from opkit.kernels.registry import get_kernel

    _rejects("ReduceLogSumExp", 18, np.array(3653403231, np.uint32))
    assert get_kernel("", "ReduceLogSumExp", 18)(np.array([700, -700], np.int32))[0] == 700
    for case in op_cases("ReduceLogSumExp", 18, 40):
        data = dict(case.inputs)["data"]
        if data.dtype.kind in "iu" and data.size:
            assert -700 <= int(data.min()) and int(data.max()) <= 700, case


# -- function bodies that cannot compute an empty batch or a binding ------------------------------

def test_group_norm_and_softmax_ce_empty_batch_is_undefined():
    """GroupNormalization reshapes X to [N, num_groups, -1] and SoftmaxCrossEntropyLoss scores to
    [N, C, -1]: Reshape cannot infer -1 from a tensor of no element, so ONNX's own definition gives
    nothing for N = 0 (rule BATCH), and the hooks no longer draw it."""
    _rejects("GroupNormalization", 21, np.zeros([0, 2], np.float32), np.ones([2], np.float32),
             np.zeros([2], np.float32), num_groups=1, epsilon=1e-5, stash_type=1)
    for since in (12, 13):
        _rejects("SoftmaxCrossEntropyLoss", since, np.zeros([0, 1], np.float32), np.zeros([0], np.int64))
        assert all(dict(c.inputs)["scores"].shape[0] >= 1 for c in op_cases("SoftmaxCrossEntropyLoss", since, 40))
    assert all(dict(c.inputs)["X"].shape[0] >= 1 for c in op_cases("GroupNormalization", 21, 40))


def test_softmax_ce_13_bfloat16_binding_is_excluded():
    """SoftmaxCrossEntropyLoss-13's function body calls NegativeLogLikelihoodLoss, which takes
    bfloat16 only from opset 22: at opset 13 the model is not well typed (onnxruntime's "Type
    'tensor(bfloat16)' of input parameter (..._X_Log) of operator (NegativeLogLikelihoodLoss)")."""
    from opkit.spec.type_rules import binding_violation

    version = harness.load_op("ai.onnx", "SoftmaxCrossEntropyLoss").version(13)
    assert binding_violation(version, {"T": "tensor(bfloat16)", "Tind": "tensor(int64)"}).label == "C1"
    assert binding_violation(version, {"T": "tensor(float)", "Tind": "tensor(int64)"}) is None
