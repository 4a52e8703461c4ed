"""Element-wise math: Shrink, sigmoid, exact integer Div and Pow (and the rules that say when they
are defined), Dropout and the random ops' generator."""

from __future__ import annotations

import math

import numpy as np

from ..runtime import as_dtype
from ._shared import _truncated_sum, _wrap_to


def shrink(x, lambd, bias):
    """Shrink: x + bias where x < -lambd, x - bias where x > lambd, 0 elsewhere.

    Floating x (float16 / bfloat16 already widened by the unary template): lambd and bias as
    given (float32), not rounded to x's type. Integer x: the formula's exact value, converted to
    x's type as Cast converts a real number, toward zero (4 - 1.5 is 2), wrapping around out of
    range (Cast's integer rule); computed in Python integers, where a trip through float32 turns
    int32 2147483646 into -2147483648 and one through float64 int64 2**63 - 1 into -2**63. (The
    function body casts bias to x's type first, "BiasCast = CastLike (Bias, input)", 4 - 1 = 3:
    see docs/reference-disagreements.md, "Shrink".)"""
    if x.dtype.kind not in "iu":
        return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))
    exact = x.astype(object)  # Python integers: no float rounding of large values
    below = np.asarray(exact < math.ceil(-lambd) if math.isfinite(lambd) else x < -lambd, dtype=bool)
    above = np.asarray(exact > math.floor(lambd) if math.isfinite(lambd) else x > lambd, dtype=bool)
    y = np.where(below, _truncated_sum(exact, bias), np.where(above, _truncated_sum(exact, -bias), 0))
    return _wrap_to(y, x.dtype)


def shrink_defined(x, lambd, bias) -> bool:
    """Whether Shrink's two readings agree on integer ``x`` (always True for floating ``x``).

    The formula ("If x > lambd, y = x - bias") and the function body ("BiasCast = CastLike (Bias,
    input)", "InputSubBias = Sub (input, BiasCast)", "Less (LambdCast, input)") give the same
    integers when bias is integral, lambd is in [0, the type's max] (CastLike of lambd is then
    defined, and x > lambd iff x > trunc(lambd)) and x + bias, x - bias stay in the type's range
    (the body's Add/Sub would overflow; ONNX does not define integer overflow)."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        return True
    info = np.iinfo(x.dtype)
    if not (math.isfinite(bias) and bias == math.trunc(bias) and math.isfinite(lambd) and 0 <= lambd <= info.max):
        return False
    exact = x.astype(object).reshape(-1)  # Python integers
    b = int(bias)
    sums = [v + b if v < -lambd else v - b for v in exact if v < -lambd or v > lambd]
    return all(info.min <= v <= info.max for v in sums)


def sigmoid(x):
    """1 / (1 + exp(-x)) in float64 (at least), without overflow: exp(x) / (1 + exp(x)) for
    negative x. float32 sigmoid(-100) is the subnormal 3.7e-44, not 1 / (1 + inf) = 0, and
    Swish's x * sigmoid(x) of it keeps its digits (a float32 subnormal sigmoid has almost none)."""
    xw = np.asarray(x).astype(np.result_type(np.asarray(x).dtype, np.float64))
    e = np.exp(-np.abs(xw))
    return np.where(xw >= 0, 1 / (1 + e), e / (1 + e))


def int_div(A, B):
    """Integer division truncating toward zero (C semantics), exactly, in the inputs' type.

    np.trunc(np.divide(A, B)) goes through float64 and is off by hundreds for int64 quotients past
    2**53. Floor division corrected by one where the signs differ and there is a remainder gives
    the C quotient; INT_MIN / -1 wraps around (it traps in C, which ONNX leaves undefined)."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(A, B)
        fix = (np.remainder(A, B) != 0) & ((A < 0) != (B < 0))
        return np.where(fix, q + np.ones((), q.dtype), q).astype(np.result_type(A, B))


def int_pow(X, Y):
    """Pow with an integer base X, in X's type, as C++ integer arithmetic would compute it.

    An integer exponent >= 0 is integer arithmetic: products wrap around on overflow (int32 X with
    Y = 3 is x*x*x mod 2**32, as onnxruntime gives, not the saturated value a trip through float
    gives). Computed in uint64, whose wraparound agrees with every narrower signed / unsigned type
    once truncated to X's type, and which never rejects a large exponent. A float or negative
    exponent is static_cast<T>(std::pow(double(x), double(y))): float64, truncated toward zero; out
    of range is undefined behaviour in C++ and whatever numpy's cast gives here."""
    with np.errstate(all="ignore"):
        via_float = np.power(X.astype(np.float64), Y.astype(np.float64)).astype(X.dtype)
        if Y.dtype.kind not in "iu":
            return via_float
        exponent = np.where(Y < 0, 0, Y).astype(np.uint64)
        via_int = np.power(X.astype(np.uint64), exponent).astype(X.dtype)
        return np.where(Y >= 0, via_int, via_float)


def int_pow_defined(X, Y) -> bool:
    """Pow's rule RESULT: for an integer X every x^y is an integer that X's type holds, computed
    exactly in Python integers. A negative exponent gives a fraction (or a division by zero for
    x = 0) unless |x| = 1, a non-integral float exponent a fraction, and a power past the type's
    range an overflow; the text ("f(x) = x^exponent", output in T) defines none of them. A float
    X is not this rule's business."""
    X, Y = np.asarray(X), np.asarray(Y)
    if X.dtype.kind not in "iu":
        return True
    info = np.iinfo(X.dtype)
    xs, ys = np.broadcast_arrays(X, Y)
    for x, y in zip(xs.ravel().tolist(), ys.ravel().tolist()):
        if isinstance(y, float):
            if not math.isfinite(y) or y != int(y):
                return False
            y = int(y)
        if y < 0:
            if abs(x) != 1:
                return False
        elif abs(x) > 1 and y > 64:  # |x| >= 2: 2**64 is past every integer type
            return False
        if not info.min <= x ** (y if y >= 0 else -y) <= info.max:
            return False
    return True


def dropout_core(data, ratio, training_mode, seed):
    """Identity (and an all-true mask) unless training; then a mask drawn from a seeded
    ``np.random.RandomState`` (seed attribute, default 0) keeps values >= ratio, scaled by 1/(1-ratio)."""
    r = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
    training = False if training_mode is None else bool(np.asarray(training_mode).reshape(-1)[0])
    if not training or r == 0:
        return data.copy(), np.ones(data.shape, dtype=bool)
    rng = np.random.RandomState(0 if seed is None else int(seed))
    mask = rng.uniform(0, 1.0, data.shape) >= r
    return as_dtype(mask * data / (1 - r), data.dtype), mask


def rng(seed):
    """NumPy generator for the random ops: seeded when the node has a seed, else fresh entropy."""
    return np.random.default_rng(None if seed is None else int(seed))
