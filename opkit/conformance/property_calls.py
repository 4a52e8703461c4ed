"""The ``op()`` calls a property makes, kept so that a repro bundle can replay the property.

A property failure is not a claim about the drawn case's own output: ``partition`` of Trilu calls
``op(input, k, upper=1)`` and ``op(input, k - 1, upper=0)``, and it is the second call that a
backend may get wrong. Rerunning the drawn case alone (what a differential bundle does) then
"no longer reproduces". So the runner records every call of a failing evaluation (the model it
ran, under the key below), plus the calls the property makes when the reference kernel answers
them (what a fixed backend will be asked), and the bundle's ``repro.py`` evaluates the property
again with ``op`` running those models on the backend.

``call_key`` is the one function both sides use to find a call's model: the runner here, and the
bundle's script, which gets its source text (``call_key_source``) because it cannot import opkit.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from ..cases.case import Case
from ..cases.onnx_model import BuiltModel

BACKEND, REFERENCE = "backend", "reference"  # who answered the call when it was recorded


def call_key(inputs, attributes):
    """What decides the model of an ``op(*inputs, **attributes)`` call: each input's dtype and
    rank (and a 1-D integer input's length, which models declare), and the attributes given with
    their values (None means not given). Plain JSON text, the same in opkit and in repro.py."""
    import json

    import numpy as np

    def plain(value):
        if isinstance(value, (np.ndarray, np.generic)):
            arr = np.asarray(value)
            data = arr.tobytes().hex() if arr.dtype.kind == "V" else plain(arr.tolist())
            return ["array", str(arr.dtype), list(arr.shape), data]
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, float):
            return ["float", repr(value)]  # nan and inf are no JSON numbers
        if value is None or isinstance(value, (bool, int, str)):
            return value
        return ["repr", repr(value)]

    shapes = []
    for value in inputs:
        if value is None:
            shapes.append(None)
            continue
        arr = np.asarray(value)
        length = int(arr.shape[0]) if arr.ndim == 1 and arr.dtype.kind in "iu" else None
        shapes.append([str(arr.dtype), arr.ndim, length])
    given = sorted([name, plain(value)] for name, value in attributes.items() if value is not None)
    return json.dumps([shapes, given], sort_keys=True)


def call_key_source() -> str:
    """``call_key`` as source text, for the bundle's script."""
    return inspect.getsource(call_key)


@dataclass(frozen=True)
class PropertyCall:
    """One ``op()`` call of a property evaluation: its key, the case it became and the model the
    backend runs for it (built by the runner's BackendRunner, exactly as it was sent)."""

    key: str
    case: Case
    model: BuiltModel
    source: str  # BACKEND: made by the failing evaluation; REFERENCE: by one the reference answered
