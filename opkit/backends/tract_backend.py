"""tract (Sonos' Rust inference engine, PyPI ``tract``) as a conformance backend:
``pip install 'opkit-onnx[tract]'``.

tract loads an ONNX file as an *inference model*, which must know every input's rank before it
can be typed ("Source node without a determined fact"); so a session types and optimizes the model
once per combination of input ranks, every dim a symbol (``RankSpecializedSession``), and per
concrete input shape when tract cannot type it on symbols (any typing failure: an op that fixes a
dim or wants the shape itself, shape arithmetic); what tract says on concrete shapes is its answer.

Data in and out goes through the engine's C API (``tract_tensor_from_bytes`` /
``tract_tensor_as_bytes``) with opkit's own dtype table instead of the binding's numpy helpers,
which mis-code complex dtypes and cannot read complex, zero-size or 0-d tensors back. tract has
no bfloat16 or complex datum type (load fails with "Unknown DatumType": *unsupported*), and its C
API cannot move string tensors (string models are *unsupported* up front).

tract reads ONNX itself (no converter). Precision: every type at its own width; the model is typed
and run as declared, without a transform such as tract's ``f32_to_f16`` (``describe()``).
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ._runtime_common import (
    RankSpecializedSession,
    backend_api_prepare,
    contiguous,
    io_elems,
    model_file,
    one_line,
    require,
    view_as,
    with_shapes,
)
from .base import BackendBase, Unsupported

# tract DatumType codes <-> numpy
_DT = {"bool": 0x01, "uint8": 0x11, "uint16": 0x12, "uint32": 0x14, "uint64": 0x18, "int8": 0x21, "int16": 0x22,
       "int32": 0x24, "int64": 0x28, "float16": 0x32, "float32": 0x34, "float64": 0x38, "complex64": 0x54,
       "complex128": 0x58}
_NP = {code: np.dtype(name) for name, code in _DT.items()}
_NO_FEED = {"string"}  # tract has a String datum type, but its C API moves plain bytes only

_UNSUPPORTED = re.compile(
    r"not implemented|unimplemented|Unsupported|not supported|No operator|Unknown operator|"
    r"unknown op|Can not parse|Unexpected datum type|no datum type|Unknown DatumType|cannot pass", re.IGNORECASE)


class TractError(RuntimeError):
    pass


def _clean(exc: BaseException) -> str:
    """tract's anyhow errors: 'context\n\nCaused by:\n    cause\n\nStack backtrace: ...' -> 'cause (context)'."""
    text = str(exc).split("Stack backtrace")[0]
    head, _, causes = text.partition("Caused by:")
    if causes.strip():
        cause = one_line(causes, 300)
        return f"{cause} (while {one_line(head, 200)})"
    return one_line(text)


class _Session:
    def __init__(self, backend, model):
        self._b = backend
        self._inner = RankSpecializedSession(model, self._compile)

    def _runnable(self, model):
        tract = self._b._tract
        with model_file(model.SerializeToString()) as path:
            try:
                return tract.onnx().load(path).into_model().into_runnable()
            except tract.TractError as exc:
                raise TractError(_clean(exc)) from None

    def _compile(self, model, feeds):
        tract = self._b._tract
        names = self._inner.input_order
        out_elems = self._inner.output_elems

        def runner(runnable):
            def run(feeds):
                inputs = [_to_tract(tract, feeds[n]) for n in names if n in feeds]
                try:
                    outs = runnable.run(inputs)
                except tract.TractError as exc:
                    raise TractError(_clean(exc)) from None
                return [view_as(_from_tract(tract, o), e) for o, e in zip(outs, out_elems)]
            return run

        try:
            return runner(self._runnable(model))
        except TractError:
            pass
        # tract cannot type this model on symbolic dims: its shape arithmetic ("Can not compute a
        # shape with square of symbols"), an op that fixes a dim the symbol stands for (OneHot's
        # values of 2: "Impossible to unify Sym(values_0) with Val(2)"), an op that wants the shape
        # itself ("Only constant input shape are supported in Multinomial", Resize's "Can not
        # compute output shape"). The facts are the adapter's choice, not the model's, so any typing
        # failure is tried again per concrete input shape; what tract says then is its answer
        per_shape: dict[tuple, object] = {}

        def run_static(feeds):
            key = tuple((n, tuple(np.shape(feeds[n]))) for n in names if n in feeds)
            entry = per_shape.get(key)
            if entry is None:
                if len(per_shape) >= 32:
                    per_shape.pop(next(iter(per_shape)))
                try:
                    entry = runner(self._runnable(with_shapes(self._inner.model, dict(key))))
                except TractError as err:
                    entry = err
                per_shape[key] = entry
            if isinstance(entry, Exception):
                raise entry
            return entry(feeds)

        return run_static

    def run(self, feeds):
        return self._inner.run(feeds)


def _to_tract(tract, array):
    arr = contiguous(array)
    code = _DT.get(arr.dtype.name)
    if code is None:
        raise Unsupported(f"tract has no datum type for numpy dtype {arr.dtype}")
    shape = (ctypes.c_size_t * max(arr.ndim, 1))(*arr.shape)
    buf = arr if arr.size else np.zeros(1, dtype=arr.dtype)  # a valid pointer for empty tensors
    ptr = ctypes.c_void_p()
    tract.check(tract.lib.tract_tensor_from_bytes(ctypes.c_uint32(code), ctypes.c_size_t(arr.ndim), shape,
                                                  ctypes.c_void_p(buf.__array_interface__["data"][0]),
                                                  ctypes.byref(ptr)))
    return tract.Tensor(ptr)


def _from_tract(tract, tensor):
    rank = ctypes.c_size_t()
    shape = ctypes.POINTER(ctypes.c_size_t)()
    data = ctypes.c_void_p()
    dt = ctypes.c_uint32(0)
    tract.check(tract.lib.tract_tensor_as_bytes(tensor.ptr, ctypes.byref(dt), ctypes.byref(rank), ctypes.byref(shape),
                                                ctypes.byref(data)))
    dims = tuple(int(shape[i]) for i in range(rank.value))
    dtype = _NP.get(dt.value)
    if dtype is None:
        raise TractError(f"tract returned datum type 0x{dt.value:x}, which opkit cannot map to numpy")
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    nbytes = count * dtype.itemsize
    raw = ctypes.string_at(data.value, nbytes) if nbytes and data.value else b""
    return np.frombuffer(raw, dtype=dtype, count=count if raw else 0).reshape(dims).copy()


class TractBackend(BackendBase):
    name = "tract"
    max_ir_version = 13  # loads IR 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)

    def __init__(self):
        (tract,) = require("tract", "tract", "tract")
        import onnx

        self._tract = tract
        self._onnx = onnx  # (models reach tract through model_file: nothing is left in the temp folder)

    def version(self) -> str:
        try:
            return str(self._tract.version())
        except Exception:  # noqa: BLE001
            from importlib.metadata import version

            return version("tract")

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "device": "CPU",
                "precision": "each type at its own width (no model transform such as f32_to_f16 applied)"}


    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        model = self._onnx.load_from_string(model_bytes)
        ins, _, outs = io_elems(model)
        missing = sorted({e for e in list(ins.values()) + outs if e in _NO_FEED})
        if missing:
            raise Unsupported(f"tract's C API cannot pass {', '.join(missing)} tensors in or out")
        # loading (not typing) the rank-free model surfaces unknown ops and datum types at load time
        with model_file(model_bytes) as path:
            try:
                self._tract.onnx().load(path)
            except self._tract.TractError as exc:
                raise TractError(_clean(exc)) from None
        return _Session(self, model)

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
