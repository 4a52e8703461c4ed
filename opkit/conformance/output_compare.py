"""Comparing a backend's outputs with the reference kernel's.

Integers, bool and strings compare exactly. Floats and complex compare with an ``Allowance``
(``opkit.conformance.allowance``): ``|actual - expected| <= ulps * ulp(max(|expected|, |actual|)) +
floor (+ atol + rtol * max(|expected|, |actual|))``, ULPs of the output type, scaled by the op's
accuracy class (``opkit.spec.accuracy``). NaN must meet NaN (any payload), an infinity the same
infinity; -0.0 equals 0.0. A failure message names the allowance it was held to.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .allowance import Allowance, class_allowance
from ..core.dtypes import COMPLEX, FLOATS, elem_from_dtype, elem_of
from .ulp import ulp

# What compare() holds floats to when its caller names no allowance: one correctly rounded
# operation, the strictest class that is not bit-exact.
DEFAULT_CLASS = "rounded"


class Mismatch(Exception):
    def __init__(self, what: str, message: str, details: dict | None = None):
        self.what, self.message, self.details = what, message, details or {}
        super().__init__(message)


def _same_dtype(expected: np.ndarray, actual: np.ndarray) -> bool:
    if expected.dtype.kind in "OUS" or actual.dtype.kind in "OUS":
        return expected.dtype.kind in "OUS" and actual.dtype.kind in "OUS"
    return expected.dtype == actual.dtype


def _dtype_name(a: np.ndarray) -> str:
    try:
        return elem_from_dtype(a.dtype)
    except KeyError:
        return str(a.dtype)


def compare(expected, actual, elem: str | None = None, rtol: float | None = None, atol: float | None = None,
            name: str = "output", allowance: Allowance | None = None) -> None:
    """Raise ``Mismatch`` (what = dtype | shape | values | missing) unless ``actual`` matches.

    Floats are held to ``allowance``; without one, to ``rtol``/``atol`` when given (a spec's legacy
    per-dtype ``tolerances``), else to ``DEFAULT_CLASS``."""
    if expected is None:
        return
    if actual is None:
        raise Mismatch("missing", f"{name}: the backend returned no value")
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if not _same_dtype(expected, actual):
        raise Mismatch("dtype", f"{name}: dtype {_dtype_name(actual)}, expected {_dtype_name(expected)}",
                       {"expected_dtype": _dtype_name(expected), "actual_dtype": _dtype_name(actual)})
    if expected.shape != actual.shape:
        raise Mismatch("shape", f"{name}: shape {list(actual.shape)}, expected {list(expected.shape)}",
                       {"expected_shape": list(expected.shape), "actual_shape": list(actual.shape)})
    elem = _dtype_name(expected)  # what the arrays hold decides how to compare, not the case's binding
    if expected.size == 0:
        return
    if elem in FLOATS or elem in COMPLEX:
        if allowance is None and (rtol is not None or atol is not None):
            allowance = Allowance("tolerances", elem, rtol=rtol or 0.0, atol=atol or 0.0)
        elif allowance is None:
            allowance = class_allowance(DEFAULT_CLASS, elem)
        elif allowance.elem != elem:  # a sequence's tensor of another type: ULPs of what it holds
            allowance = dataclasses.replace(allowance, elem=elem)
        _compare_float(expected, actual, allowance, name)
        return
    if expected.dtype.kind in "OUS":
        bad = np.array([str(a) != str(e) for a, e in zip(actual.ravel(), expected.ravel())], dtype=bool)
    else:
        bad = (actual != expected).ravel()
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        idx = np.unravel_index(first, expected.shape)
        details = {"mismatched": int(bad.sum()), "total": int(bad.size), "first_index": [int(i) for i in idx],
                   "expected_value": _item(expected[idx]), "actual_value": _item(actual[idx])}
        if expected.dtype.kind in "iub":
            diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
            details["max_abs_error"] = float(diff.max())
        raise Mismatch("values", f"{name}: {int(bad.sum())}/{bad.size} elements differ (exact comparison); "
                       f"first at {[int(i) for i in idx]}: got {_item(actual[idx])!r}, expected {_item(expected[idx])!r}"
                       + (f"; max abs error {details['max_abs_error']:g}" if "max_abs_error" in details else ""),
                       details)


def compare_value(expected, actual, type_str: str | None = None, rtol: float | None = None,
                  atol: float | None = None, name: str = "output", allowance: Allowance | None = None) -> None:
    """``compare`` for any ONNX value, by the output's bound ``type_str``: an optional first by
    presence (``None`` is the empty optional), a sequence by its count of tensors and then each
    tensor (``name[i]``) with the element type's tolerance, a tensor as ``compare`` does. Without
    a container type it is ``compare`` (and an expected ``None`` means nothing to check)."""
    type_str = type_str or ""
    if type_str.startswith("optional("):
        if expected is None or actual is None:
            if (expected is None) != (actual is None):
                have, want = ("no element", "one") if actual is None else ("an element", "none (an empty optional)")
                raise Mismatch("optional", f"{name}: the optional holds {have}, expected {want}",
                               {"expected_has_element": expected is not None, "actual_has_element": actual is not None})
            return
        compare_value(expected, actual, type_str[len("optional("):-1], rtol, atol, name, allowance)
        return
    if type_str.startswith("map(") or isinstance(expected, dict):
        compare_map(expected, actual, type_str, rtol, atol, name, allowance)
        return
    if type_str.startswith("seq(") or isinstance(expected, list):
        if not isinstance(actual, (list, tuple)):
            raise Mismatch("type", f"{name}: a tensor, expected a sequence of {len(expected)} tensor(s)",
                           {"expected_kind": "sequence", "actual_kind": "tensor"})
        if len(actual) != len(expected):
            raise Mismatch("length", f"{name}: a sequence of {len(actual)} tensor(s), expected {len(expected)}",
                           {"expected_length": len(expected), "actual_length": len(actual)})
        inner = type_str[len("seq("):-1] if type_str.startswith("seq(") else None
        for i, (e, a) in enumerate(zip(expected, actual)):
            compare_value(e, a, inner, rtol, atol, f"{name}[{i}]", allowance)
        return
    if isinstance(actual, (list, tuple)) and expected is not None:
        raise Mismatch("type", f"{name}: a sequence of {len(actual)} tensor(s), expected a tensor",
                       {"expected_kind": "tensor", "actual_kind": "sequence"})
    compare(expected, actual, None, rtol, atol, name, allowance)


def compare_map(expected: dict, actual, type_str: str = "", rtol: float | None = None, atol: float | None = None,
                name: str = "output", allowance: Allowance | None = None) -> None:
    """Two maps: the same keys (in any order), and under each key values that ``compare`` accepts
    as elements of the map's value type (``name[key]``)."""
    from ..core.values import map_types

    if isinstance(actual, np.ndarray) and actual.dtype == object and actual.ndim == 0 and isinstance(actual.item(), dict):
        actual = actual.item()  # a worker that wraps what is not a list in np.asarray hands a map over as a 0-d array
    if not isinstance(actual, dict):
        raise Mismatch("type", f"{name}: a {type(actual).__name__}, expected a map of {len(expected)} entries",
                       {"expected_kind": "map", "actual_kind": type(actual).__name__})
    value_type = map_types(type_str)[1] if type_str.startswith("map(") else getattr(expected, "value_type", None)
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    if missing or extra:
        raise Mismatch("keys", f"{name}: map keys differ: {len(missing)} missing (first {missing[:3]!r}), "
                       f"{len(extra)} unexpected (first {extra[:3]!r})",
                       {"missing_keys": [_item(k) for k in missing[:10]], "extra_keys": [_item(k) for k in extra[:10]],
                        "expected_size": len(expected), "actual_size": len(actual)})
    from ..core.dtypes import np_dtype

    dtype = np_dtype(value_type) if value_type else None
    for key in sorted(expected, key=repr):  # a fixed order: the first mismatch named is always the same
        e, a = expected[key], actual[key]
        if dtype is not None and (value_type == "string") == isinstance(a, str):  # else: a dtype mismatch
            e, a = np.asarray(e, dtype=dtype), np.asarray(a, dtype=dtype)
        compare(e, a, None, rtol, atol, f"{name}[{key!r}]", allowance)


def _item(v):
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, complex):
        return str(v)
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    return v


def _compare_float(expected, actual, allowance: Allowance, name):
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64
    e = expected.astype(wide)
    a = actual.astype(wide)
    with np.errstate(all="ignore"):
        e_nan, a_nan = np.isnan(e), np.isnan(a)
        e_inf, a_inf = np.isinf(e), np.isinf(a)
        finite = ~(e_nan | a_nan | e_inf | a_inf)
        diff = np.where(finite, np.abs(a - e), 0.0)  # -0.0 vs 0.0: 0
        allowed = allowance.bound(e, a)
        bad = (e_nan != a_nan) | ((e_inf | a_inf) & ~(e_nan | a_nan) & (a != e))  # inf only meets the same inf
        bad |= finite & ~(diff <= allowed)
        mag = np.maximum(np.abs(e), np.abs(a))
        rel = np.where(finite & (mag > 0), diff / np.where(mag > 0, mag, 1.0), 0.0)
    if not bad.any():
        return
    first = int(np.flatnonzero(bad.ravel())[0])
    idx = tuple(int(i) for i in np.unravel_index(first, expected.shape))
    with np.errstate(all="ignore"):
        ulps = np.where(finite, diff / ulp(mag, allowance.elem), 0.0)  # the error in ULPs of the larger value
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(rel.max()) if rel.size else 0.0
    max_ulps = float(np.nanmax(ulps)) if ulps.size else 0.0
    nan_mismatches = int((e_nan != a_nan).sum())
    bound = float(allowed[idx])
    if finite[idx]:
        where = allowance.describe(idx, bound)
    else:  # no allowance applies to NaN or an infinity
        where = f"NaN and infinities must match exactly; {allowance.elem}, {allowance.label}"
    details = {"mismatched": int(bad.sum()), "total": int(bad.size), "first_index": list(idx),
               "expected_value": _item(expected[idx]), "actual_value": _item(actual[idx]),
               "max_abs_error": max_abs, "max_rel_error": max_rel, "max_ulp_error": max_ulps,
               "nan_mismatches": nan_mismatches, "allowance": where, **allowance.details(idx, bound)}
    raise Mismatch("values", f"{name}: {int(bad.sum())}/{bad.size} elements differ; max abs error {max_abs:.6g}, "
                   f"max rel error {max_rel:.6g}, max {max_ulps:.4g} ulp; first at {list(idx)}: got "
                   f"{_item(actual[idx])!r}, expected {_item(expected[idx])!r} ({where})"
                   + (f"; {nan_mismatches} NaN position(s) differ" if nan_mismatches else ""),
                   details)


def equal(a, b) -> bool:
    """Same dtype, shape and values; NaN == NaN (what spec properties call ``equal``)."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if not _same_dtype(a, b) or a.shape != b.shape:
        return False
    if a.dtype.kind in "OUS":
        return all(str(x) == str(y) for x, y in zip(a.ravel(), b.ravel()))
    if a.dtype.kind in "fc" or elem_of(_dtype_name(a)) in FLOATS:
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        x, y = a.astype(wide), b.astype(wide)
        return bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))
    return bool(np.array_equal(a, b))
