"""Comparing a backend's outputs with the reference kernel's, with per-dtype tolerances.

Integers, bool and strings compare exactly. Floats and complex compare as
``|actual - expected| <= atol + rtol * |expected|`` with the spec's per-dtype ``tolerances`` or
the defaults below; NaN positions must match, infinities must match exactly (sign included).
"""

from __future__ import annotations

import numpy as np

from .dtypes import COMPLEX, FLOATS, elem_from_dtype, elem_of

# (rtol, atol) per element type when the spec gives none
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float": (1e-5, 1e-6), "double": (1e-12, 1e-14), "float16": (1e-3, 1e-4), "bfloat16": (1e-2, 1e-3),
    "complex64": (1e-5, 1e-6), "complex128": (1e-12, 1e-14),
    "float8e4m3fn": (1.25e-1, 1e-2), "float8e4m3fnuz": (1.25e-1, 1e-2), "float8e5m2": (2.5e-1, 1e-2),
    "float8e5m2fnuz": (2.5e-1, 1e-2), "float4e2m1": (5e-1, 1e-1), "float8e8m0": (0.5, 0.0),
    "float6e2m3": (2.5e-1, 1e-1), "float6e3m2": (2.5e-1, 1e-1),
}


def tolerance_for(version, elem: str) -> tuple[float, float]:
    elem = elem_of(elem)
    for tol in getattr(version, "tolerances", ()) or ():
        if tol.dtype == elem:
            return tol.rtol, tol.atol
    return DEFAULT_TOLERANCES.get(elem, (0.0, 0.0))


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
            name: str = "output") -> None:
    """Raise ``Mismatch`` (what = dtype | shape | values | missing) unless ``actual`` matches."""
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
        _compare_float(expected, actual, elem, rtol, atol, name)
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


def _item(v):
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, complex):
        return str(v)
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    return v


def _compare_float(expected, actual, elem, rtol, atol, name):
    default_rtol, default_atol = DEFAULT_TOLERANCES.get(elem, (0.0, 0.0))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    wide = np.complex128 if elem in COMPLEX else np.float64
    e = expected.astype(wide).ravel()
    a = actual.astype(wide).ravel()
    with np.errstate(all="ignore"):
        e_nan, a_nan = np.isnan(e), np.isnan(a)
        e_inf, a_inf = np.isinf(e), np.isinf(a)
        finite = ~(e_nan | a_nan | e_inf | a_inf)
        diff = np.where(finite, np.abs(a - e), 0.0)
        rel = np.where(finite & (np.abs(e) > 0), diff / np.where(np.abs(e) > 0, np.abs(e), 1.0), 0.0)
        bad = (e_nan != a_nan) | ((e_inf | a_inf) & ~(e_nan | a_nan) & (a != e))
        bad |= finite & (diff > atol + rtol * np.abs(e))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        idx = np.unravel_index(first, expected.shape)
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float(rel.max()) if rel.size else 0.0
        details = {"mismatched": int(bad.sum()), "total": int(bad.size), "first_index": [int(i) for i in idx],
                   "expected_value": _item(expected[idx]), "actual_value": _item(actual[idx]),
                   "max_abs_error": max_abs, "max_rel_error": max_rel, "rtol": rtol, "atol": atol,
                   "nan_mismatches": int((e_nan != a_nan).sum())}
        raise Mismatch("values", f"{name}: {int(bad.sum())}/{bad.size} elements differ; max abs error "
                       f"{max_abs:.6g}, max rel error {max_rel:.6g} (rtol={rtol:g}, atol={atol:g}); first at "
                       f"{[int(i) for i in idx]}: got {_item(actual[idx])!r}, expected {_item(expected[idx])!r}"
                       + (f"; {details['nan_mismatches']} NaN position(s) differ" if details["nan_mismatches"] else ""),
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
