"""Error models of the ``accumulating`` class: what any order of evaluation may lose, per op.

ONNX fixes no summation order. Recursive summation of n terms errs by at most ``(n - 1) u sum|t_i|``
and a dot product of length n by ``n u sum|a_i b_i|`` whatever the order (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., sections 3.1 and 4.2; u = eps / 2, the unit roundoff),
so the allowance grows with the number of terms and their magnitudes, not with the result's. Each
bound is for one implementation and doubled, since the reference and the backend may err in
opposite directions; as ``u |x| < ulp(x)``, "n u S" is written "n ulp(S)". ``MODELS[op](case,
version, index, expected, elem)`` gives the ULPs of the result and the absolute floor for output
``index`` (on top of the class's 2 ULPs):

- sums of products (ReduceSum/Mean/L1/L2/SumSquare/Prod, MatMul, Gemm, Conv, ConvTranspose, Einsum,
  CumSum/CumProd, Sum, Mean, average and Lp pools): ``2 n ulp(S)``, n the terms per output element
  (the reduced count, the contracted length K (+1 for Gemm's C), C/group times the kernel size (+1
  for a bias), the inputs of Sum) and S = ``sum |t_i|`` at that element: the op evaluated on the
  magnitudes of its float inputs and attributes, where every term becomes ``|t_i|``.
- Softmax: positive terms, no cancellation: ``2 (n + 17 + |ln y|)`` ULPs of the result (each exp
  within the elementary class's 4 ULPs, the sum's n - 1 roundings, the division, and the rounding of
  ``x - max``, which exp amplifies by ``|x - max| <= |ln y|``).
- LogSoftmax, ReduceLogSumExp, ReduceLogSum: the log of a sum turns the sum's relative error into an
  absolute one: a floor of ``(n + 7) eps`` (ReduceLogSum: ``2 n ulp(sum|x|) / |sum x|``, the sum may
  cancel).
- normalisations (LayerNorm, BatchNorm, InstanceNorm, GroupNorm, MeanVarianceNormalization, RMSNorm,
  LpNormalization): the mean errs by ``n u max|x|`` (none for one value), which ``x - mean`` keeps and
  the division by ``sqrt(var + epsilon)`` amplifies by ``kappa = max|x| / sqrt(var + epsilon)``: a
  floor of ``eps |scale| (m kappa (1 + |z|) + (n/2 + 3.5) |z|)`` per element (z the normalised value,
  m = n for n > 1 else 0; no such term where nothing is subtracted or the mean is an input, as in
  BatchNorm's inference mode), ``eps`` of the stash type where ONNX lets stage one run in float32;
  plus ``3.5 eps |scale| kappa_i`` for folding the mean into one multiply-add (kappa_i = (|x| +
  |mean|) / sqrt(var + epsilon); in the stash type where the function body normalises there) and
  ``eps (|z scale| + |bias|)`` for applying scale and bias in the output type. A one-pass variance
  is not allowed for: the ONNX function bodies subtract the mean before squaring.
- RNN, GRU, LSTM: the coarse floor below, plus 4 times how far the outputs move when the reference
  runs again with every activation's output moved by 8 eps relative (up, then down): the
  recurrence's own amplification of each step's rounding (an update gate of 8000 multiplies it).
- any other accumulating op (attention, DFT, ... and unclassified ops): a coarse floor of
  ``2 n ulp(n max(1, M)^2)``, n the largest float input's size and M its largest magnitude, as if
  every output summed n products of two inputs. Wide on purpose until the op has a model of its own.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..core.onnx_types import ELEMENT_TYPES
from .ulp import float_elem, float_format, ulp, wide


def float_inputs(case) -> list[np.ndarray]:
    """The present float inputs as float64 magnitudes (complex: moduli); a sequence's tensors one by
    one (they may differ in shape: np.asarray of a ragged sequence fails)."""
    out = []
    for _, value in case.inputs:
        for x in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(x, np.ndarray) and float_elem(x) is not None:
                out.append(np.abs(wide(x)).astype(np.float64))
    return out


def finite_max(x: np.ndarray) -> float:
    finite = x[np.isfinite(x)]
    return float(finite.max()) if finite.size else 0.0


def _positional(case, i: int):
    return case.inputs[i][1] if i < len(case.inputs) else None


def _attr(case, name: str, default=None):
    value = case.kernel_attributes().get(name, default)
    return default if value is None else value


def _eps(elem: str) -> float:
    return float_format(elem).eps


# ------------------------------------------------------------------------------------------------
# accumulating models


@dataclass(frozen=True)
class _Parts:
    ulps: Any
    floor: Any
    basis: str


def _abs_value(v):
    if isinstance(v, float):
        return abs(v)
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
        return type(v)(abs(x) for x in v)
    return v


def _magnitude_companion(case, index: int, shape: tuple) -> np.ndarray | None:
    """sum |t_i| at each element of output ``index``: the op on the magnitudes of its float inputs
    and attributes, in float64 where the kernel takes it (no overflow, no rounding to speak of).
    None when the kernel refuses such a case or the result does not have the output's shape."""
    from . import harness

    attrs = tuple((k, _abs_value(v)) for k, v in case.attributes)
    defaults = tuple((k, _abs_value(v)) for k, v in case.defaults)
    for widen in (True, False):
        inputs = []
        for name, x in case.inputs:
            if x is not None and float_elem(x) is not None:
                x = np.abs(x)
                if widen and x.dtype.kind != "c":
                    x = x.astype(np.float64)
            inputs.append((name, x))
        try:
            outs = harness.expected_outputs(dataclasses.replace(case, inputs=tuple(inputs), attributes=attrs,
                                                                defaults=defaults))
        except Exception:  # noqa: BLE001 - e.g. a kernel without a float64 path: try the real types
            continue
        if index < len(outs) and outs[index] is not None and np.shape(outs[index]) == tuple(shape):
            return np.abs(wide(outs[index])).astype(np.float64)
    return None


def _terms(n_terms: Callable) -> Callable:
    """The sum-of-products model with ``n_terms(case, out) -> n``."""

    def model(case, version, index, expected, elem):
        out = np.asarray(expected[index])
        n = max(1, int(n_terms(case, out)))
        summands = _magnitude_companion(case, index, out.shape)
        if summands is None:
            return coarse(case, version, index, expected, elem)
        return _Parts(2.0, 2 * n * ulp(summands, elem), f"n={n} terms, |terms| summing to up to "
                                                       f"{finite_max(summands):.3g}")

    return model


def _n_reduced(case, out) -> int:
    data = _positional(case, 0)
    return int(np.size(data)) // max(int(out.size), 1)


def _n_matmul(case, out) -> int:
    a = np.asarray(_positional(case, 0))
    return a.shape[-1] if a.ndim else 1


def _n_gemm(case, out) -> int:
    a = np.asarray(_positional(case, 0))
    k = a.shape[0] if _attr(case, "transA", 0) else a.shape[-1]
    return k + (1 if _positional(case, 2) is not None else 0)


def _n_conv(case, out) -> int:
    w = np.asarray(_positional(case, 1))
    return int(np.prod(w.shape[1:], dtype=np.int64)) + (1 if _positional(case, 2) is not None else 0)


def _n_conv_transpose(case, out) -> int:
    w = np.asarray(_positional(case, 1))
    per_group = w.shape[0] // max(int(_attr(case, "group", 1)), 1)
    return per_group * int(np.prod(w.shape[2:], dtype=np.int64)) + (1 if _positional(case, 2) is not None else 0)


def _n_along_axis(case, out) -> int:
    x = np.asarray(_positional(case, 0))
    axis = int(np.asarray(_positional(case, 1)).reshape(-1)[0])
    return x.shape[axis] if x.ndim else 1


def _n_inputs(case, out) -> int:
    return sum(1 for _, x in case.inputs if x is not None)


def _n_kernel(case, out) -> int:
    return int(np.prod(_attr(case, "kernel_shape", [1]), dtype=np.int64))


def _n_spatial(case, out) -> int:
    return int(np.prod(np.shape(_positional(case, 0))[2:], dtype=np.int64))


def _n_einsum(case, out) -> int:
    """Terms per output element: the product of every index's size over the output's."""
    equation = str(_attr(case, "equation", "")).replace(" ", "")
    if "..." in equation:
        return _n_largest(case, out)
    lhs = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    for labels, (_, x) in zip(lhs, case.inputs):
        for label, size in zip(labels, np.shape(x)):
            sizes[label] = size
    total = int(np.prod(list(sizes.values()), dtype=np.int64)) if sizes else 1
    return total // max(int(out.size), 1) if out.size else 1


def _n_largest(case, out) -> int:
    return max((x.size for x in float_inputs(case)), default=1)


def _softmax_length(case, out, version) -> int:
    x = np.asarray(_positional(case, 0))
    default = 1 if case.since < 13 else -1
    axis = int(_attr(case, "axis", default))
    axis = axis + x.ndim if axis < 0 else axis
    if case.since < 13:  # coerced to 2-D at axis: one softmax over everything from axis on
        return int(np.prod(x.shape[axis:], dtype=np.int64))
    return x.shape[axis] if x.ndim else 1


def _softmax(case, version, index, expected, elem):
    out = np.asarray(expected[index])
    n = max(1, _softmax_length(case, out, version))
    y = np.abs(wide(out)).astype(np.float64)
    tiny = float(ulp(0.0, elem))  # ln of an underflowed output: as if it were the smallest subnormal
    with np.errstate(divide="ignore", invalid="ignore"):
        log_y = np.abs(np.log(np.maximum(np.nan_to_num(y, nan=1.0), tiny)))
    return _Parts(2 * (n + 17 + log_y), 0.0, f"n={n} terms")


def _log_softmax(case, version, index, expected, elem):
    out = np.asarray(expected[index])
    n = max(1, _softmax_length(case, out, version))
    return _Parts(10.0, (n + 7) * _eps(elem), f"n={n} terms, floor (n+7) eps")


def _reduce_log_sum_exp(case, version, index, expected, elem):
    out = np.asarray(expected[index])
    n = max(1, _n_reduced(case, out))
    floor = (n + 7) * _eps(elem) + 8 * float(ulp(max(math.log(n), 0.0), elem))
    return _Parts(2.0, floor, f"n={n} terms, floor (n+7) eps + 8 ulp(ln n)")


def _reduce_log_sum(case, version, index, expected, elem):
    out = np.asarray(expected[index])
    n = max(1, _n_reduced(case, out))
    companion = _magnitude_companion(case, index, out.shape)  # ln(sum |x|)
    if companion is None:
        return coarse(case, version, index, expected, elem)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        summands = np.exp(companion)
        total = np.abs(np.exp(wide(out).real.astype(np.float64)))  # |sum x| where the log is defined
        floor = np.where(total > 0, 2 * n * ulp(summands, elem) / total, np.inf)
    return _Parts(10.0, floor, f"n={n} terms: the sum's error relative to |sum x|")


# -- normalisations


def _stash_elem(case, elem: str) -> str:
    """The precision ONNX fixes for stage one (mean, variance, normalising) of LayerNorm,
    GroupNorm-21 and RMSNorm: the ``stash_type`` attribute, a TensorProto type code (1, float, by
    default), whatever the input type."""
    code = int(_attr(case, "stash_type", 1))
    stash = ELEMENT_TYPES[code - 1] if 1 <= code <= len(ELEMENT_TYPES) else elem
    return stash if float_format(stash) is not None else elem


def _normalised(x: np.ndarray, axes: tuple, epsilon: float, centred: bool, norm: str = "std"):
    """z, kappa (the group's max|x| over the denominator), n, max|x| over ``axes`` (kept) and
    kappa_i ((|x| + |mean|) over the denominator, per element), computed in float64."""
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    with np.errstate(all="ignore"):
        mag = np.where(np.isfinite(x), np.abs(x), 0.0)
        big = mag.max(axis=axes, keepdims=True) if mag.size else np.zeros([1] * x.ndim)
        if norm == "l1":
            denom = np.abs(x).sum(axis=axes, keepdims=True)
            mean = 0.0
        elif norm == "l2":
            denom = np.sqrt(np.square(x).sum(axis=axes, keepdims=True))
            mean = 0.0
        else:
            mean = x.mean(axis=axes, keepdims=True) if centred else 0.0
            denom = np.sqrt(np.square(x - mean).mean(axis=axes, keepdims=True) + epsilon)
        safe = np.where(denom > 0, denom, 1.0)
        z = np.where(denom > 0, (x - mean) / safe, 0.0)
        kappa = np.where(denom > 0, big / safe, 0.0) if centred else 0.0
        kappa_i = np.where(denom > 0, (mag + np.abs(mean)) / safe, 0.0)
    return z, kappa, n, big, kappa_i


def _mean_terms(n: int) -> int:
    """The mean's error in units of u max|x|: n - 1 additions and the division by n; the mean of one
    value is that value, exactly."""
    return n if n > 1 else 0


def _normalised_floor(z, kappa, kappa_i, n, mean_terms, eps_acc, eps_out, scale=1.0, bias=0.0, stashed=False):
    """The floor for y = z * scale + bias, z = (x - mean) / sqrt(var + epsilon), between two
    implementations (see the module doc). Per implementation, with u = eps / 2:

    - stage one (mean, variance, z; in ``eps_acc``): the mean errs by ``mean_terms u max|x|``, which
      x - mean keeps and the division amplifies by kappa; the two-pass variance's relative error is
      ``(n + 3) u`` plus twice the mean's error over sigma; so z errs by
      ``u (mean_terms kappa (1 + |z|) + (n/2 + 3.5) |z|)``. A one-pass variance (E[x^2] - mean^2)
      loses kappa squared: the ONNX function bodies subtract the mean first, so it is not allowed for.
    - folding the mean into a multiply-add (``x a - mean a``, a = 1 / sqrt(var + epsilon)) rounds at
      ``3.5 u kappa_i``, kappa_i = (|x| + |mean|) / sqrt(var + epsilon): in stage one's precision
      where a stash type fixes it (``stashed``: LayerNorm's body normalises in float32, then casts),
      else in the output type (BatchNorm folds scale and bias in too: ``x a + (bias - mean a)``).
    - stage two (scale, bias; in the output type): ``u (|z scale| + |bias|)``.
    """
    with np.errstate(all="ignore"):
        z, scale, bias = np.abs(z), np.abs(scale), np.abs(bias)
        stage_one = eps_acc * scale * (mean_terms * kappa * (1 + z) + (n / 2 + 3.5) * z)
        folding = (eps_acc if stashed else eps_out) * 3.5 * scale * kappa_i
        stage_two = eps_out * (z * scale + bias)
        return np.nan_to_num(stage_one + folding + stage_two, nan=0.0)


def _channel(v, ndim: int):
    return np.asarray(v, dtype=np.float64).reshape((1, -1) + (1,) * (ndim - 2))


def _layer_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    axis = int(_attr(case, "axis", -1))
    axis = axis + x.ndim if axis < 0 else axis
    axes = tuple(range(axis, x.ndim))
    acc = _stash_elem(case, elem)
    z, kappa, n, big, kappa_i = _normalised(x, axes, float(_attr(case, "epsilon", 1e-5)), centred=True)
    if index == 0:
        scale = np.abs(wide(_positional(case, 1))).astype(np.float64)
        bias = _positional(case, 2)
        bias = 0.0 if bias is None else np.abs(wide(bias)).astype(np.float64)
        floor = _normalised_floor(z, kappa, kappa_i, n, _mean_terms(n), _eps(acc), _eps(elem), scale, bias,
                                  stashed=True)
        return _Parts(2.0, floor, f"n={n}, kappa up to {finite_max(np.asarray(kappa)):.3g}")
    return _statistics(index, n, kappa, big, expected, elem, acc)


def _statistics(index, n, kappa, big, expected, elem, acc):
    """Mean (index 1) and inverse standard deviation (index 2) outputs of a normalisation."""
    out = np.abs(wide(expected[index])).astype(np.float64)
    eps = _eps(acc)
    terms = _mean_terms(n)
    if index == 1:
        floor = terms * eps * big
        return _Parts(2.0, floor.reshape(out.shape) if np.size(floor) == out.size else finite_max(floor),
                      f"n={n}: the mean")
    relative = eps * ((n + 3) / 2 + terms * kappa + 2)
    relative = relative.reshape(out.shape) if np.size(relative) == out.size else finite_max(np.asarray(relative))
    return _Parts(2.0, relative * out, f"n={n}: the inverse standard deviation")


def _instance_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    z, kappa, n, _, kappa_i = _normalised(x, tuple(range(2, x.ndim)), float(_attr(case, "epsilon", 1e-5)),
                                          centred=True)
    floor = _normalised_floor(z, kappa, kappa_i, n, _mean_terms(n), _eps(elem), _eps(elem),
                              _channel(np.abs(_positional(case, 1)), x.ndim),
                              _channel(np.abs(_positional(case, 2)), x.ndim))
    return _Parts(2.0, floor, f"n={n} per instance and channel")


def _group_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    groups = int(_attr(case, "num_groups"))
    shape = x.shape
    grouped = x.reshape((shape[0], groups, -1)) if x.size else x.reshape((shape[0], groups, 0))
    z, kappa, n, _, kappa_i = _normalised(grouped, (2,), float(_attr(case, "epsilon", 1e-5)), centred=True)
    z, kappa_i = z.reshape(shape), kappa_i.reshape(shape)
    kappa = np.broadcast_to(kappa, grouped.shape).reshape(shape)
    scale = np.abs(np.asarray(_positional(case, 1), np.float64))
    bias = np.abs(np.asarray(_positional(case, 2), np.float64))
    channels = shape[1]
    if scale.size == groups and groups != channels:  # opset 18: one value per group
        scale, bias = np.repeat(scale, channels // groups), np.repeat(bias, channels // groups)
    acc = _stash_elem(case, elem) if case.since >= 21 else elem
    floor = _normalised_floor(z, kappa, kappa_i, n, _mean_terms(n), _eps(acc), _eps(elem), _channel(scale, x.ndim),
                              _channel(bias, x.ndim), stashed=case.since >= 21)
    return _Parts(2.0, floor, f"n={n} per group")


def _mean_variance_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    axes = tuple(int(a) + (x.ndim if int(a) < 0 else 0) for a in _attr(case, "axes", [0, 2, 3]))
    z, kappa, n, _, kappa_i = _normalised(x, axes, 1e-9, centred=True)
    return _Parts(2.0, _normalised_floor(z, kappa, kappa_i, n, _mean_terms(n), _eps(elem), _eps(elem)), f"n={n}")


def _rms_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    axis = int(_attr(case, "axis", -1))
    axis = axis + x.ndim if axis < 0 else axis
    z, _, n, _, kappa_i = _normalised(x, tuple(range(axis, x.ndim)), float(_attr(case, "epsilon", 1e-5)),
                                      centred=False, norm="rms")
    scale = np.abs(wide(_positional(case, 1))).astype(np.float64)
    floor = _normalised_floor(z, 0.0, kappa_i, n, 0, _eps(_stash_elem(case, elem)), _eps(elem), scale, stashed=True)
    return _Parts(2.0, floor, f"n={n}, no mean subtracted")


def _lp_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    axis = int(_attr(case, "axis", -1))
    axis = axis + x.ndim if axis < 0 else axis
    norm = "l1" if int(_attr(case, "p", 2)) == 1 else "l2"
    z, _, n, _, kappa_i = _normalised(x, (axis,), 0.0, centred=False, norm=norm)
    return _Parts(2.0, _normalised_floor(z, 0.0, kappa_i, n, 0, _eps(elem), _eps(elem)), f"n={n}, {norm} norm")


def _batch_norm(case, version, index, expected, elem):
    x = wide(_positional(case, 0)).real.astype(np.float64)
    scale = _channel(np.abs(_positional(case, 1)), x.ndim)
    bias = _channel(np.abs(_positional(case, 2)), x.ndim)
    epsilon = float(_attr(case, "epsilon", 1e-5))
    eps = max(_eps(elem), _eps(float_elem(_positional(case, 0)) or elem))
    if case.since >= 14 and int(_attr(case, "training_mode", 0)):
        axes = (0,) + tuple(range(2, x.ndim))
        z, kappa, n, big, kappa_i = _normalised(x, axes, epsilon, centred=True)
        if index == 0:
            return _Parts(2.0, _normalised_floor(z, kappa, kappa_i, n, _mean_terms(n), eps, _eps(elem), scale, bias),
                          f"training: n={n} per channel")
        momentum = float(_attr(case, "momentum", 0.9))
        previous = np.abs(np.asarray(_positional(case, 2 + index), np.float64))  # input_mean, input_var
        stats = x.mean(axis=axes) if index == 1 else x.var(axis=axes)
        kappa, big = np.reshape(kappa, -1), np.reshape(big, -1)
        terms = _mean_terms(n)
        if index == 1:  # running_mean = input_mean * momentum + mean * (1 - momentum)
            err = terms * big + np.abs(stats)
        else:  # running_var: the variance's own n + 3 roundings, and the mean's error against sigma
            err = (n + 3) * np.abs(stats) + 2 * terms * big * np.sqrt(np.abs(stats))
        floor = eps * (err * abs(1 - momentum) + 2 * previous * abs(momentum))
        return _Parts(2.0, floor, f"training: n={n} per channel, the running statistic")
    mean = _channel(_positional(case, 3), x.ndim)
    denom = np.sqrt(np.abs(_channel(_positional(case, 4), x.ndim)) + epsilon)
    with np.errstate(all="ignore"):  # mean and variance are inputs: no stage one to err
        z = (x - mean) / denom
        kappa_i = (np.abs(x) + np.abs(mean)) / denom
    floor = _normalised_floor(z, 0.0, np.nan_to_num(kappa_i, nan=0.0, posinf=0.0), 0, 0, eps, _eps(elem), scale, bias)
    return _Parts(2.0, floor, "inference: per element")


def coarse(case, version, index, expected, elem):
    n = _n_largest(case, None)
    big = max(1.0, max((finite_max(x) for x in float_inputs(case)), default=1.0))
    return _Parts(2.0, 2 * n * float(ulp(n * big * big, elem)),
                  f"coarse: n={n} terms of up to {big:.3g}^2 (no error model for this op yet)")


# each activation within the elementary class's 4 ULPs, in either implementation
RECURRENCE_STEP_ULPS = 8
RECURRENCE_SAFETY = 4  # one direction for every step is a probe of the response, not its worst case


def _recurrent(case, version, index, expected, elem):
    """RNN, GRU, LSTM: the coarse bound, plus how far the recurrence carries each step's rounding.
    Nothing fixes the accuracy of tanh or sigmoid or the order of a step's sums, and a step's error
    enters the next through the state: an update gate z of 8000 amplifies it (Ht = (1 - z) ht + z
    Ht-1), so onnxruntime's GRU, 4 ULPs off in one tanh, was 35 ULPs off three steps later. The
    reference runs again with every activation's output moved by 8 eps relative, up and down
    (``RECURRENCE_PERTURBATION``); 4 times the larger response is added to the floor."""
    from ..kernels.lib import RECURRENCE_PERTURBATION
    from .harness import expected_outputs

    base = coarse(case, version, index, expected, elem)
    delta = RECURRENCE_STEP_ULPS * _eps(elem)
    exact = np.asarray(wide(np.asarray(expected[index])), np.float64)
    spread = np.zeros(exact.shape)
    for sign in (1.0, -1.0):
        token = RECURRENCE_PERTURBATION.set(sign * delta)
        try:
            moved = np.asarray(wide(np.asarray(expected_outputs(case)[index])), np.float64)
        finally:
            RECURRENCE_PERTURBATION.reset(token)
        with np.errstate(invalid="ignore"):
            step = np.abs(moved - exact)
        spread = np.maximum(spread, np.where(np.isfinite(step), step, 0.0))
    return _Parts(base.ulps, base.floor + RECURRENCE_SAFETY * spread,
                  base.basis + f"; recurrence: {RECURRENCE_SAFETY} x its response to {delta:.2g} relative per activation")


def _linear_attention(case, version, index, expected, elem):
    """LinearAttention: the gated rules scale the state by exp(decay) at every token, so its terms
    outgrow the inputs' squares (inputs of 3 give outputs near 4e4); the coarse bound taken at the
    larger of n * big^2 and the output's own magnitude, which the state's terms reach."""
    n = _n_largest(case, None)
    big = max(1.0, max((finite_max(np.abs(x)) for x in float_inputs(case)), default=1.0))
    out = finite_max(np.abs(wide(np.asarray(expected[index])).real.astype(np.float64)))
    top = max(n * big * big, out)
    return _Parts(2.0, 2 * n * float(ulp(top, elem)), f"recurrence: n={n} terms of up to {top:.3g}")


def _dequantized_magnitudes(case, pairs) -> list[np.ndarray]:
    """|scale * (q - zero_point)| for each (quantized input, scale, zero point) name triple of
    ``pairs`` present in ``case``, the parameters per tensor or along q's last axis."""
    inputs = dict(case.inputs)
    out = []
    for q, s, z in pairs:
        if inputs.get(q) is None or inputs.get(s) is None:
            continue

        def along_last(p):
            a = np.asarray(p).astype(np.float64).reshape(-1)
            return a.reshape(()) if a.size == 1 else a

        zp = 0.0 if inputs.get(z) is None else along_last(inputs[z])
        with np.errstate(all="ignore"):
            out.append(np.abs((np.asarray(inputs[q]).astype(np.float64) - zp) * along_last(inputs[s])))
    return out


def _qattention(case, version, index, expected, elem):
    """QAttention: the coarse bound (as com.microsoft Attention and MultiHeadAttention get) over the
    float operands of its computation, which are the dequantized input and weight besides bias and
    past: their integers alone say nothing of the magnitudes the products and scores reach."""
    mags = float_inputs(case) + _dequantized_magnitudes(case, (("input", "input_scale", "input_zero_point"),
                                                               ("weight", "weight_scale", "weight_zero_point")))
    n = max((x.size for x in mags), default=1)
    big = max(1.0, max((finite_max(x) for x in mags), default=1.0))
    return _Parts(2.0, 2 * n * float(ulp(n * big * big, elem)),
                  f"coarse: n={n} terms of up to {big:.3g}^2 (dequantized input and weight, bias, past)")


def _squares(root: bool) -> Callable:
    """ReduceSumSquare (``root`` False) and ReduceL2 (True): the sum-of-products model, plus the
    squares that fall below the normal range: a value under sqrt(smallest normal) (1.1e-19 in
    float32) squares to a subnormal or to 0, which ONNX does not require a runtime to keep
    (flush-to-zero), so the sum of n squares may lose n smallest normals, and its square root
    sqrt(n smallest normals): float32 L2 of 36 values near 1e-38 is 3.8e-38 exactly and 0 in
    float32 arithmetic (onnxruntime and onnx.reference), which the text does not rule out."""
    terms = _terms(_n_reduced)

    def model(case, version, index, expected, elem):
        parts = terms(case, version, index, expected, elem)
        n = max(1, _n_reduced(case, np.asarray(expected[index])))
        lost = n * float_format(elem).tiny
        extra = math.sqrt(lost) if root else lost
        return _Parts(parts.ulps, parts.floor + extra, f"{parts.basis}; squares below the normal range: "
                                                       f"{extra:.3g}")

    return model


MODELS: dict[str, Callable] = {
    **{op: _terms(_n_reduced) for op in ("ReduceSum", "ReduceMean", "ReduceL1", "ReduceProd")},
    "ReduceSumSquare": _squares(root=False), "ReduceL2": _squares(root=True),
    "ReduceLogSum": _reduce_log_sum, "ReduceLogSumExp": _reduce_log_sum_exp,
    "MatMul": _terms(_n_matmul), "Gemm": _terms(_n_gemm), "Conv": _terms(_n_conv),
    "ConvTranspose": _terms(_n_conv_transpose), "Einsum": _terms(_n_einsum),
    "CumSum": _terms(_n_along_axis), "CumProd": _terms(_n_along_axis),
    "Sum": _terms(_n_inputs), "Mean": _terms(_n_inputs),
    "AveragePool": _terms(_n_kernel), "LpPool": _terms(_n_kernel),
    "GlobalAveragePool": _terms(_n_spatial), "GlobalLpPool": _terms(_n_spatial),
    "Softmax": _softmax, "LogSoftmax": _log_softmax,
    "LayerNormalization": _layer_norm, "InstanceNormalization": _instance_norm,
    "GroupNormalization": _group_norm, "MeanVarianceNormalization": _mean_variance_norm,
    "RMSNormalization": _rms_norm, "LpNormalization": _lp_norm, "BatchNormalization": _batch_norm,
    "LinearAttention": _linear_attention, "QAttention": _qattention,
    "RNN": _recurrent, "GRU": _recurrent, "LSTM": _recurrent,
}
