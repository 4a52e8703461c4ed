"""Helpers that generated kernels import: type names, checks, and small numeric utilities.

Everything here is deliberately small and dependency-free (numpy + ml_dtypes) so that a
generated kernel module reads as: validation calls into this module, then the compute core.
"""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np

from ..core.numpy_types import NUMPY_DTYPES
from ..core.onnx_types import ELEMENT_TYPES
from . import KernelValidationError

__all__ = [
    "KernelValidationError", "ONNX_TO_NUMPY", "element_type", "type_string", "check_type",
    "check_rank", "check_domain", "fail", "as_dtype", "legacy_broadcast", "onnx_dtype",
    "normalize_axes", "reduce_core", "cast_to", "cast_defined", "e8m0_cast_defined", "erf", "round_half_even", "element_name", "CORE_ERRORS",
    "core_error", "NARROW_FLOATS", "compute_dtype", "widen", "float_attribute",
]

# ONNX element type name -> numpy dtype (ml_dtypes for the narrow float and int types)
ONNX_TO_NUMPY: dict[str, np.dtype] = {name: dt for name, dt in NUMPY_DTYPES.items() if dt is not None}
_NUMPY_TO_ONNX: dict[np.dtype, str] = {dt: name for name, dt in ONNX_TO_NUMPY.items()}
# TensorProto.DataType codes are 1-based positions in ELEMENT_TYPES
_CODES = ELEMENT_TYPES


def onnx_dtype(code: int) -> np.dtype:
    """numpy dtype of a TensorProto.DataType code (the value of Cast's ``to``)."""
    if not 1 <= code <= len(_CODES):
        raise ValueError(f"unknown ONNX element type code {code}")
    return ONNX_TO_NUMPY[_CODES[code - 1]]


def element_type(value: np.ndarray) -> str:
    """ONNX element type name of an array ('float', 'bfloat16', 'string', ...)."""
    name = _NUMPY_TO_ONNX.get(value.dtype)
    if name is None:
        if value.dtype.kind in "US":
            return "string"
        return value.dtype.name
    return name


def type_string(value) -> str:
    """ONNX type string of a runtime value: tensor(float), seq(tensor(int64)), ..."""
    if isinstance(value, np.ndarray):
        return f"tensor({element_type(value)})"
    if isinstance(value, list):
        return f"seq({type_string(value[0])})" if value else "seq(?)"
    if isinstance(value, dict):
        return getattr(value, "type_str", None) or _map_guess(value)
    return type(value).__name__


def _kind(values, ints: str = "int64", floats: str = "float") -> str:
    kinds = {"string" if isinstance(v, str) else floats if isinstance(v, (float, np.floating)) else ints
             for v in values}
    return kinds.pop() if len(kinds) == 1 else "?"


def _map_guess(value: dict) -> str:
    """The type string a plain dict reads as: its keys' and values' kinds (int -> int64, float ->
    float); ``check_type`` turns it into a MapValue of the allowed type it fits."""
    return f"map({_kind(value.keys())}, {_kind(value.values())})" if value else "map(?)"


def _as_allowed_map(value, allowed: frozenset):
    """A plain dict (or a list of them) as a MapValue of the first allowed map type its keys and
    values fit (a float map fits map(int64, float) before map(int64, double)); unchanged when none."""
    from ..core.values import as_value

    for t in sorted(allowed):
        inner = t[len("seq("):-1] if t.startswith("seq(") else t
        if not inner.startswith("map(") or t.startswith("seq(") != isinstance(value, list):
            continue
        try:
            return as_value(value, t)
        except (TypeError, ValueError):
            continue
    return value


# What a compute core raises when its inputs are outside what the op accepts (an axis out of range,
# an index out of bounds, shapes that do not broadcast, a shape too large to allocate). The
# generated function reports them as KernelValidationError(rule="compute") naming the op and
# version, so callers can tell "the kernel rejects these inputs" from a crash.
CORE_ERRORS = (IndexError, ValueError, TypeError, OverflowError, ZeroDivisionError, MemoryError, KeyError)


def core_error(op: str, version: int, exc: BaseException) -> KernelValidationError:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return KernelValidationError(op, version, "compute", f"the inputs are outside what the compute core "
                                 f"accepts: {type(exc).__name__}: {text}"[:500])


def fail(op: str, version: int, rule: str, message: str):
    raise KernelValidationError(op, version, rule, message)


def _matches(ts: str, allowed: frozenset) -> bool:
    if ts in allowed:
        return True
    if ts == "seq(?)":
        return any(a.startswith(("seq(", "optional(seq(")) for a in allowed)
    if "map(?)" in ts:  # an empty map says nothing of its types: any map type of the same nesting
        return any(a.startswith(ts.replace("map(?)", "map(")[:-1]) for a in allowed)
    return f"optional({ts})" in allowed


def check_type(op: str, version: int, name: str, value, constraint: str, allowed: frozenset,
               expected: str | None = None):
    """Check one (present) input against its type constraint; return (value, its type string).

    Python scalars and lists given for a tensor-only parameter are converted with np.asarray.
    ``expected`` is the type already bound to the constraint by an earlier input."""
    if value is None:
        fail(op, version, f"required-input:{name}", f"input '{name}' is required")
    if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict)):
        if not hasattr(value if isinstance(value, dict) else value[0], "type_str"):
            value = _as_allowed_map(value, allowed)  # a plain dict: its types come from what is allowed
    elif not isinstance(value, np.ndarray) and not isinstance(value, list):
        value = np.asarray(value)
    elif isinstance(value, list) and not any(a.startswith(("seq", "optional(seq")) for a in allowed):
        value = np.asarray(value)
    ts = type_string(value)
    if not _matches(ts, allowed):
        fail(op, version, f"type:{constraint}",
             f"input '{name}' has type {ts}, not one allowed by {constraint}: {', '.join(sorted(allowed))}")
    if expected is not None and ts != expected and ts != "seq(?)" and expected != "seq(?)":
        fail(op, version, f"same-type:{constraint}",
             f"input '{name}' has type {ts} but another input bound {constraint} to {expected}")
    return value, ts


def check_rank(op: str, version: int, name: str, value, low: int, high: int | None) -> None:
    rank = value.ndim
    if rank < low or (high is not None and rank > high):
        want = f"rank {low}" if high == low else f"rank >= {low}" if high is None else f"rank {low} to {high}"
        fail(op, version, f"rank:{name}", f"input '{name}' must have {want}, got rank {rank}")


def check_domain(op: str, version: int, name: str, value, values=None, low=None, high=None) -> None:
    items = value if isinstance(value, (list, tuple)) else (value,)
    for item in items:
        bad = (values is not None and item not in values) or (low is not None and item < low) \
            or (high is not None and item > high)
        if bad:
            parts = []
            if values is not None:
                parts.append("one of " + ", ".join(repr(v) for v in values))
            if low is not None:
                parts.append(f">= {low}")
            if high is not None:
                parts.append(f"<= {high}")
            fail(op, version, f"attribute-domain:{name}",
                 f"attribute '{name}' must be {' and '.join(parts)}, got {value!r}")


# Floating types too narrow to hold intermediate results: float16 and bfloat16 keep 11 and 8
# significant bits, so an expression evaluated in them rounds after every step (exp(x) - 1 for a
# small x loses every digit) and overflows early (x * x for |x| > 256). A kernel evaluates them in
# float32 and rounds once, to the output type, at the end: as close to the exact value rounded to
# the output type as float32 carries, which is what runtimes compute (they convert half types to
# float32 and back) and what tolerances compare against.
NARROW_FLOATS = frozenset(ONNX_TO_NUMPY[name] for name in (
    "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1",
    "float8e8m0", "float6e2m3", "float6e3m2"))


def compute_dtype(dtype) -> np.dtype:
    """The type a kernel computes in for data of ``dtype``: float32 for the narrow floating types,
    ``dtype`` itself otherwise (float32, float64, integers, bool and strings are not widened:
    integer kernels keep integer arithmetic)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype in NARROW_FLOATS else dtype


def widen(x):
    """``x`` in its compute type (a copy in float32 for a narrow float; ``x`` itself otherwise)."""
    if isinstance(x, np.ndarray) and x.dtype in NARROW_FLOATS:
        return x.astype(np.float32)
    return x


def float_attribute(value):
    """A ``float`` / ``floats`` attribute as the model carries it: ONNX stores them as float32
    (AttributeProto.f), so a default written as 0.01 in a spec is float32(0.01) =
    0.009999999776482582 to every runtime, in double arithmetic too. None stays None."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [float(np.float32(v)) for v in value]
    if isinstance(value, np.ndarray):
        return value.astype(np.float32).astype(value.dtype) if value.dtype.kind == "f" else value
    return float(np.float32(value))


def as_dtype(result, dtype) -> np.ndarray:
    """``result`` as an ndarray of ``dtype`` (numpy returns scalars for 0-d inputs)."""
    if isinstance(result, np.ndarray) and result.dtype == dtype:
        return result
    return np.asarray(result).astype(dtype, copy=False)


def legacy_broadcast(A: np.ndarray, B: np.ndarray, axis) -> np.ndarray:
    """Opset < 7 unidirectional broadcasting: B's shape matches A's from ``axis`` (default: suffix)."""
    if axis is None:
        return B
    axis = axis if axis >= 0 else axis + A.ndim
    shape = (1,) * axis + B.shape + (1,) * (A.ndim - axis - B.ndim)
    return B.reshape(shape)


def normalize_axes(axes, rank: int) -> tuple[int, ...]:
    return tuple(sorted({int(a) + rank if a < 0 else int(a) for a in np.asarray(axes).reshape(-1)}))


def reduce_core(data: np.ndarray, axes, keepdims, noop_with_empty_axes, fn, pre=None, post=None,
                empty=None):
    """The shared body of the Reduce* family.

    ``axes`` None or empty reduces over every axis unless ``noop_with_empty_axes``; ``pre``
    transforms the data first (e.g. square), ``post`` the reduced value (e.g. sqrt); ``empty`` is
    the value of a reduction over no elements where ``fn`` has no identity (max, min)."""
    x = pre(data) if pre is not None else data
    if axes is None or len(np.asarray(axes).reshape(-1)) == 0:
        if noop_with_empty_axes:  # each element reduced on its own: pre and post still apply
            r = post(x) if post is not None else x
            return as_dtype(r, data.dtype)  # the output keeps the input's type (int32 sqrt: int32)
        axes_t = tuple(range(data.ndim))
    else:
        axes_t = normalize_axes(axes, data.ndim)
    keep = bool(keepdims)
    if empty is not None and any(x.shape[a] == 0 for a in axes_t):
        if x.dtype == np.bool_:
            empty = empty > 0
        elif x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            empty = info.max if empty > 0 else info.min
        r = fn(x, axis=axes_t, keepdims=keep, initial=empty)
    else:
        r = fn(x, axis=axes_t, keepdims=keep)
    if post is not None:
        r = post(r)
    return as_dtype(r, data.dtype)


_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    # np.frompyfunc returns a Python float for 0-d input
    return as_dtype(np.asarray(_erf(np.asarray(x, dtype=np.float64)), dtype=np.float64), np.asarray(x).dtype)


def round_half_even(x):
    return np.round(x)


# -- casts ----------------------------------------------------------------------------------------

_FLOAT8_LIKE = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1",
                "float8e8m0", "float6e2m3", "float6e3m2"}
_FLOATING = _FLOAT8_LIKE | {"float16", "float", "double", "bfloat16"}


_INT_BITS = {"int2": (2, True), "uint2": (2, False), "int4": (4, True), "uint4": (4, False),
             "int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False),
             "int32": (32, True), "uint32": (32, False), "int64": (64, True), "uint64": (64, False)}


def cast_defined(x: np.ndarray, target: str) -> bool:
    """Whether ONNX's Cast text defines the result of casting ``x`` to the element type ``target``.

    * a number to a string: the text asks for a "plain floating-point representation (such as
      "314.15926")" and pins neither the digits, nor a trailing ".0" on integral values, nor the
      text of integers and booleans, so no exact string is defined;
    * a string to a number: "Converting non-numerical-literal string such as "Hello World!" is an
      undefined behavior", and so is a string "representing floating-point arithmetic value, such
      as "2.718", to INT": the text must be a plain or scientific number ("3.14", "1e-5") or
      "+INF", "INF", "-INF", "NaN" (any case), an integer literal for an integer target;
    * a floating-point value to an integer type: "fixed point: undefined if OOR" (NaN and the
      infinities included), and the text names no rounding for a fractional value in range
      (onnxruntime truncates for 8-64 bit targets and rounds for 4-bit ones), so the result is
      defined for integral values in the target's range only. ONNX's own node tests
      (test_cast_FLOAT_to_INT4, _UINT4, _INT2, _UINT2) do define integral values out of a 4-bit
      or 2-bit range: they wrap (-9.0 -> int4 7), like the fixed point rule.
    """
    src = element_type(x)
    if target == "string":
        return src == "string"
    if src == "string":
        return all(_numeric_text(v, target) for v in np.asarray(x).reshape(-1))
    if target not in _INT_BITS or src not in _FLOATING:
        return True
    bits, signed = _INT_BITS[target]
    v = np.asarray(x).astype(np.float64)  # exact for every floating source type
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (v == np.trunc(v))
        if bits > 4:
            lo, hi = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if signed else (0.0, 2.0 ** bits)
            ok &= (v >= lo) & (v < hi)
        return bool(np.all(ok))


_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def _numeric_text(value, target: str) -> bool:
    text = value.decode() if isinstance(value, bytes) else str(value)
    if target in _INT_BITS:
        return _INTEGER_TEXT.fullmatch(text) is not None
    return _NUMBER_TEXT.fullmatch(text) is not None or text.upper() in ("+INF", "INF", "-INF", "NAN")


def _to_string(x: np.ndarray) -> np.ndarray:
    kind = x.dtype.kind
    src = element_type(x)
    out = np.empty(x.shape, dtype=object)
    flat, dst = x.reshape(-1), out.reshape(-1)
    for i, v in enumerate(flat):
        if kind == "b":
            dst[i] = "1" if v else "0"
        elif kind in "iu" or src in _INT_BITS:  # int4/uint4/int2/uint2 are ml_dtypes, not kind i/u
            dst[i] = str(int(v))
        else:
            f = float(v)
            if math.isnan(f):
                dst[i] = "NaN"
            elif math.isinf(f):
                dst[i] = "INF" if f > 0 else "-INF"
            else:  # shortest round-trip text of the value in its own precision
                dst[i] = str(v) if kind == "f" else str(f)
    return out


def _from_string(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    flat = [s.decode() if isinstance(s, bytes) else str(s) for s in x.reshape(-1)]
    if dtype.kind in "iu":
        vals = [int(s) for s in flat]
        return np.array(vals, dtype=dtype).reshape(x.shape)
    if dtype == np.bool_:
        return np.array([s not in ("0", "false", "False", "") for s in flat], dtype=bool).reshape(x.shape)
    return np.array([float(s) for s in flat], dtype=np.float32 if dtype.kind == "V" else np.float64) \
        .reshape(x.shape).astype(dtype)


def cast_to(x: np.ndarray, target: str, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    """Cast to the ONNX element type ``target`` with ONNX semantics (saturation for float8)."""
    dtype = ONNX_TO_NUMPY[target]
    src = element_type(x)
    # the float8 table applies to every float x: a saturating cast maps E5M2's infinities to
    # +-FLT_MAX even from E5M2 itself (CastLike(x, x) with saturate = 1)
    if src == target and not (saturate and target == "float8e5m2"):
        return x.copy()
    if target == "string":
        return _to_string(x)
    if src == "string":
        if target in _FLOAT8_LIKE:  # the number the text denotes, then the float8 rules (saturate ...)
            return cast_to(_from_string(x, np.dtype(np.float32)), target, saturate, round_mode)
        return _from_string(x, dtype)
    if target in _FLOAT8_LIKE:
        f = x.astype(np.float32) if src not in ("double",) else x
        if saturate and target not in ("float8e8m0",):
            fmax = float(ml_dtypes.finfo(dtype).max)
            f = np.where(np.isnan(f), f, np.clip(f, -fmax, fmax))
        if target == "float8e8m0":
            return _to_e8m0(f, saturate, round_mode)
        return f.astype(dtype)
    if src in _FLOAT8_LIKE or src in ("bfloat16",):
        if target in ("float", "double", "float16", "bfloat16"):
            return x.astype(np.float32).astype(dtype)
        return x.astype(np.float32).astype(dtype)
    if target in ("int4", "uint4", "int2", "uint2"):
        info = ml_dtypes.iinfo(dtype)
        v = x
        if x.dtype.kind == "f" or x.dtype.kind == "V":
            v = np.rint(x.astype(np.float32))
        v = v.astype(np.int64) if v.dtype.kind != "b" else v.astype(np.int64)
        # wrap like the integer conversion (two's complement on the narrow width)
        bits = 4 if "4" in target else 2
        v = v & ((1 << bits) - 1)
        if info.min < 0:
            v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        return v.astype(dtype)
    if src in ("int4", "uint4", "int2", "uint2"):
        return x.astype(np.int64).astype(dtype)
    return x.astype(dtype)


def _to_e8m0(f: np.ndarray, saturate: int, round_mode: str) -> np.ndarray:
    """float8e8m0 (a power of two 2^-127 .. 2^127, no sign, no zero) of ``f``'s magnitudes, from
    float64 (exact for every source: a double's low mantissa bits decide "up"). ``up`` takes the
    power at or above, ``down`` the one at or below, ``nearest`` the nearer with ties up (the text:
    "round to nearest value and ties round up"). Past the range: the table's E8M0_MIN / E8M0_MAX
    when saturating, NaN for non-saturate + nearest (0 too); negative values are undefined (rule
    E8M0) and cast as their magnitude."""
    a = np.abs(np.asarray(f, dtype=np.float64))
    finite = np.isfinite(a) & (a > 0)
    m, e = np.frexp(np.where(finite, a, 1.0))  # a = m * 2**e, m in [0.5, 1)
    k = e.astype(np.int64) - 1  # the power at or below
    if round_mode == "up":
        k = k + (m > 0.5)
    elif round_mode == "nearest":
        k = k + (m >= 0.75)
    biased = k + 127
    low, high = biased < 0, biased > 254
    out = np.clip(biased, 0, 254)
    if not saturate:
        out = np.where(high, 255, out)
        if round_mode == "nearest":
            out = np.where(low | (a == 0), 255, out)
    out = np.where(a == 0, out if not saturate and round_mode == "nearest" else 0, out)
    out = np.where(np.isinf(a), 254 if saturate else 255, out)
    out = np.where(np.isnan(a), 255, out)
    return out.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def e8m0_cast_defined(x, target: str, saturate=None, round_mode=None) -> bool:
    """Whether Cast's text defines the cast of ``x`` to float8e8m0 (True for other targets):
    "Casting negative values to FLOAT8E8M0 gives undefined behavior" and -0 is "Unspecified"; the
    table gives 0, values below E8M0_MIN or above E8M0_MAX and the infinities only for saturate + up
    and non-saturate + nearest ("the two most common cases"); every other combination leaves them
    undefined (onnxruntime: NaN for non-saturate + up, onnx.reference NaN for Inf with saturate +
    nearest, where a saturating reading gives E8M0_MAX)."""
    if target != "float8e8m0":
        return True
    x = np.asarray(x)
    if x.dtype == object or x.dtype.kind in "US":
        v = np.array([_text_value(t) for t in x.reshape(-1)], dtype=np.float64)
    else:
        v = x.astype(np.float64).reshape(-1)
    mode = round_mode.decode() if isinstance(round_mode, bytes) else (round_mode or "up")
    with np.errstate(invalid="ignore"):
        if np.any((v < 0) | ((v == 0) & np.signbit(v))):
            return False
        sat = bool(1 if saturate is None else int(saturate))
        if (sat, mode) not in ((True, "up"), (False, "nearest")):  # the two tabled combinations
            return not bool(np.any(~np.isnan(v) & ((v < 2.0 ** -127) | (v > 2.0 ** 127))))
    return True


def _text_value(text) -> float:
    text = text.decode() if isinstance(text, bytes) else str(text)
    try:
        return float(text)
    except ValueError:  # not a number: cast_defined's rule already leaves it out
        return float("nan")


def element_name(to) -> str:
    """ONNX element type name from Cast's ``to``: a DataType code, or (Cast-1) a name like 'FLOAT'."""
    if isinstance(to, bytes):
        to = to.decode()
    if isinstance(to, str):
        name = to.lower()
        return {"float32": "float", "float64": "double"}.get(name, name)
    return _CODES[int(to) - 1]
