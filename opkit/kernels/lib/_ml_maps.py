"""Compute helpers of ai.onnx.ml's map ops: CastMap, DictVectorizer, ZipMap (and their rules).

Maps arrive as ``opkit.core.values.MapValue`` (a dict that knows its key and value types; the
generated type check turns a plain dict into one), a sequence of maps as a list of them.
"""

from __future__ import annotations

import math

import numpy as np

from ...core.values import make_map

__all__ = ["cast_map", "cast_map_defined", "dict_vectorizer", "map_keys_in", "numeric_text", "zip_map"]

_CAST_TO = {"TO_FLOAT": np.float32, "TO_INT64": np.int64, "TO_STRING": object}
_INT64 = (-(2**63), 2**63 - 1)


def numeric_text(text: str, integral: bool = False) -> bool:
    """Whether ``text`` is a decimal number (an integer when ``integral``): what a string value
    must be for CastMap to convert it to a number (the text names no parser, so no more than this)."""
    import re

    pattern = r"[+-]?\d+" if integral else r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"
    return isinstance(text, str) and re.fullmatch(pattern, text.strip()) is not None and text == text.strip()


def cast_map_defined(X, cast_to: str) -> bool:
    """Whether every value of ``X`` has a conversion to ``cast_to`` the text defines: a number to
    float, a float that is an integer in int64's range to int64, numeric text to a number, a string
    to string. A float as text is not defined (no format is named; onnxruntime prints "%f")."""
    for v in X.values():
        if isinstance(v, str):
            if cast_to != "TO_STRING" and not numeric_text(v, integral=cast_to == "TO_INT64"):
                return False
        elif cast_to == "TO_STRING":
            return False
        elif cast_to == "TO_INT64" and not (math.isfinite(v) and v == int(v) and _INT64[0] <= v <= _INT64[1]):
            return False
    return True


def map_keys_in(X, low: int, high: int) -> bool:
    """Whether every key of ``X`` is in [low, high)."""
    return all(low <= k < high for k in X)


def _convert(values: list, cast_to: str) -> np.ndarray:
    dtype = _CAST_TO[cast_to]
    if cast_to == "TO_STRING":
        out = np.empty(len(values), dtype=object)
        out[:] = [str(v) for v in values]
        return out
    if cast_to == "TO_INT64":
        return np.array([int(v) for v in values], dtype=np.int64)
    return np.array([float(v) for v in values], dtype=np.float64).astype(dtype)


def cast_map(X, *, cast_to="TO_FLOAT", map_form="DENSE", max_map=1):
    """CastMap: X's values in ascending key order, converted to ``cast_to``'s type. DENSE: one
    element per entry; SPARSE: ``max_map`` elements, element k holding X[k] and 0 where X has no key k."""
    if cast_to not in _CAST_TO:
        raise ValueError(f"cast_to {cast_to!r} is not one of {', '.join(_CAST_TO)}")
    keys = sorted(X)
    if map_form == "DENSE":
        return _convert([X[k] for k in keys], cast_to)
    if map_form != "SPARSE":
        raise ValueError(f"map_form {map_form!r} is not DENSE or SPARSE")
    out = _convert([0] * int(max_map), cast_to)
    if keys:
        out[np.asarray(keys, dtype=np.int64)] = _convert([X[k] for k in keys], cast_to)
    return out


_VALUE_DTYPES = {"int64": np.int64, "float": np.float32, "double": np.float64, "string": object}


def dict_vectorizer(X, *, int64_vocabulary=None, string_vocabulary=None):
    """DictVectorizer: Y[i] = X[vocabulary[i]], 0 where X lacks that key: a 1-D tensor as long as
    the vocabulary, of X's value type. (The "zero" of a string map is not defined; the spec's rules
    keep such maps complete, and "" stands in here.)"""
    vocabulary = list(int64_vocabulary if int64_vocabulary is not None else string_vocabulary)
    value_type = getattr(X, "value_type", None) or ("string" if any(isinstance(v, str) for v in X.values())
                                                    else "float")
    dtype = _VALUE_DTYPES[value_type]
    zero = "" if dtype is object else 0  # the zero of a string tensor: the empty string
    items = [X.get(k, zero) for k in vocabulary]
    if dtype is object:
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    return np.array(items, dtype=np.float64 if dtype is not np.int64 else np.int64).astype(dtype)


def zip_map(X, *, classlabels_int64s=None, classlabels_strings=None):
    """ZipMap: one map per row of X, the row's column j under key classlabels[j] (float values)."""
    ints = classlabels_int64s is not None
    labels = list(classlabels_int64s if ints else classlabels_strings)
    rows = X.reshape(1, -1) if X.ndim == 1 else X
    return [make_map(zip(labels, row.tolist()), "int64" if ints else "string", "float") for row in rows]
