"""JAX via jaxonnxruntime as a conformance backend: ``pip install 'opkit-onnx[jax]'``.

jaxonnxruntime maps each ONNX node to a ``jax.jit``-ed function; its ``BackendRep.run`` converts
the graph again on every call (``call_onnx_model``) and opkit does the same, on the CPU platform.

Config flags opkit sets, and why:

- ``jax_enable_x64 = True`` (JAX): without it JAX silently computes int64/uint64/float64/complex128
  tensors in 32 bits, so every 64-bit case would be a mismatch of opkit's making, not the op's.
- ``jax_platforms = "cpu"``: no accelerator probing (and no warnings about it).
- ``jaxort_only_allow_initializers_as_static_args = False`` (jaxonnxruntime): with the default
  ``True``, ops that turn an input into a static jit argument (Trilu's ``k``, Reshape's ``shape``,
  Pad's ``pads``, TopK's ``k``, Expand's ``shape`` ...) refuse any value that is not a graph
  initializer, because a jitted function that *cached* the converted graph would keep the first
  value. opkit feeds such inputs as graph inputs and converts the graph on every run (as
  ``BackendRep.run`` does), so reading the value from the input is sound here. The default also
  refuses Trilu with ``k`` absent, and a 0-D initializer ``k`` fails (``tolist()[0]`` on a
  scalar): see docs/findings-runtimes.md.

String tensors have no JAX dtype: string models are *unsupported* up front.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ._runtime_common import (
    backend_api_prepare,
    contiguous,
    io_elems,
    one_line,
    require,
    view_as,
)
from .base import BackendBase, Unsupported

_UNSUPPORTED = re.compile(
    r"not implemented|NotImplemented|not supported|Unsupported|no handler|has no attribute 'version_|"
    r"does not support|is not a valid JAX type|JAX only supports", re.IGNORECASE)

STATIC_ARGS_FLAG = "jaxort_only_allow_initializers_as_static_args"
CLEAR_EVERY = 200  # session runs between jax.clear_caches()


class _Session:
    def __init__(self, backend, model, names, out_elems):
        self._b = backend
        self._model = model
        self._names = names
        self._out_elems = out_elems

    def run(self, feeds):
        self._b.runs += 1
        if self._b.runs % CLEAR_EVERY == 0:
            # every distinct static argument (Trilu's k ...) and shape is a new XLA executable in
            # jax's caches: without a purge a sweep grows the worker past several GB
            self._b._jax.clear_caches()
        call_onnx = self._b._call_onnx
        inputs = {n: contiguous(feeds[n]) for n in self._names if n in feeds}
        func, params = call_onnx.call_onnx_model(self._model, inputs)
        result = func(model_params=params, inputs=inputs)
        if not isinstance(result, (tuple, list)):
            result = [result]
        return [view_as(np.array(r, copy=True), e) for r, e in zip(result, self._out_elems)]


class JaxBackend(BackendBase):
    name = "jax"
    max_ir_version = 13  # jaxonnxruntime reads IR 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)

    def __init__(self, static_args_from_inputs: bool = True):
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        jax, jaxort = require("jax", "jax", "jax", "jaxonnxruntime")
        (call_onnx,) = require("jax", "jax", "jaxonnxruntime.call_onnx")
        import onnx

        jax.config.update("jax_enable_x64", True)
        try:
            jax.config.update("jax_platforms", "cpu")
        except Exception:  # noqa: BLE001, S110 - already initialised
            pass
        from jaxonnxruntime import config as jcfg

        jcfg.update(STATIC_ARGS_FLAG, not static_args_from_inputs)
        self.static_args_from_inputs = static_args_from_inputs
        self._jax, self._jaxort, self._call_onnx, self._onnx = jax, jaxort, call_onnx, onnx
        self.runs = 0

    def version(self) -> str:
        return self._jax.__version__

    def describe(self) -> dict:
        from importlib.metadata import version

        try:
            jort = version("jaxonnxruntime")
        except Exception:  # noqa: BLE001
            jort = "unknown"
        return {"name": self.name, "version": self.version(), "jaxonnxruntime": jort,
                "jaxlib": getattr(self._jax, "__version__", ""), "platform": "cpu",
                "config": {"jax_enable_x64": True, STATIC_ARGS_FLAG: not self.static_args_from_inputs}}


    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        model = self._onnx.load_from_string(model_bytes)
        ins, names, outs = io_elems(model)
        if "string" in set(ins.values()) | set(outs):
            raise Unsupported("JAX has no string dtype")
        import jaxonnxruntime.onnx_ops  # noqa: F401
        from jaxonnxruntime.core import handler  # noqa: F401 - registers handlers

        return _Session(self, model, names, outs)

    def is_unsupported(self, exc: BaseException) -> bool:
        if isinstance(exc, (Unsupported, NotImplementedError)):
            return True
        return bool(_UNSUPPORTED.search(one_line(str(exc))))
