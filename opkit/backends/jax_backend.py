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

jaxonnxruntime is the converter (``converter``): a failure while it translates a node into a JAX
function (no handler for the op or its version, an attribute or static input its handler refuses)
is ``ConversionFailed``, outcome *unconverted*, never charged to JAX; a failure of that function as
JAX traces, compiles or runs it is JAX's.

Precision: every type at its own width. ``jax_enable_x64`` is checked after it is set (a 64-bit
value must come back unchanged, else 64-bit models are refused as *unsupported* rather than
computed in 32 bits), ``jax_default_matmul_precision`` is "highest", and whether XLA's CPU code
flushes subnormal floats to zero is measured; ``describe()["precision"]`` says all three.
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

_SIXTY_FOUR = {"int64", "uint64", "double", "complex128"}  # the types jax_enable_x64 decides

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
        try:
            func, params = call_onnx.call_onnx_model(self._model, inputs)
        except Exception as exc:  # noqa: BLE001 - the converter's failures are told apart from JAX's
            if _in_translation(call_onnx, exc):
                raise self._b.conversion_failed(exc) from None
            raise
        result = func(model_params=params, inputs=inputs)
        if not isinstance(result, (tuple, list)):
            result = [result]
        return [view_as(np.array(r, copy=True), e) for r, e in zip(result, self._out_elems)]


def _in_translation(call_onnx, exc: BaseException) -> bool:
    """Whether ``exc`` (raised by ``call_onnx_model``) comes from jaxonnxruntime translating the
    graph, not from JAX running the translation: it passed through the handler lookup and
    ``Handler.handle`` (``_get_jit_func``, ``_get_all_handlers``), or call_onnx's graph walk raised
    it itself (an input it cannot wire). ``call_onnx_graph`` also runs each translated node once
    to learn its outputs; what fails there is JAX's."""
    translating = {call_onnx._get_jit_func.__code__, call_onnx._get_all_handlers.__code__}
    walking = {call_onnx.call_onnx_graph.__code__, call_onnx.call_onnx_model.__code__}
    codes = []
    tb = exc.__traceback__
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    return any(c in translating for c in codes) or bool(codes and codes[-1] in walking)


class JaxBackend(BackendBase):
    name = "jax"
    max_ir_version = 13  # jaxonnxruntime reads IR 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)
    converter = "jaxonnxruntime"

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
        # full-precision dots whatever the environment set (on CPU the default is full already)
        jax.config.update("jax_default_matmul_precision", "highest")
        self.x64, self.flushes_subnormals = _measure(jax)

    def precision(self) -> str:
        width = ("each type at its own width (jax_enable_x64 on, checked: 64-bit values come back unchanged)"
                 if self.x64 else "64-bit types refused: jax_enable_x64 did not take effect in this process")
        subnormals = "flushed to zero by XLA's CPU code" if self.flushes_subnormals else "kept"
        return (f"{width}; matmul precision {self._jax.config.jax_default_matmul_precision}; "
                f"subnormal floats {subnormals} (measured)")

    def converter_version(self) -> str:
        from importlib.metadata import version

        try:
            return version("jaxonnxruntime")
        except Exception:  # noqa: BLE001
            return "unknown"

    def version(self) -> str:
        return self._jax.__version__

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "jaxonnxruntime": self.converter_version(),
                "jaxlib": getattr(self._jax, "__version__", ""), "platform": "cpu",
                "config": {"jax_enable_x64": bool(self._jax.config.jax_enable_x64),
                           STATIC_ARGS_FLAG: not self.static_args_from_inputs},
                "precision": self.precision()}


    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        model = self._onnx.load_from_string(model_bytes)
        ins, names, outs = io_elems(model)
        if "string" in set(ins.values()) | set(outs):
            raise Unsupported("JAX has no string dtype")
        wide = sorted(_SIXTY_FOUR & (set(ins.values()) | set(outs)))
        if wide and not self.x64:  # said, rather than computed in 32 bits and charged as mismatches
            raise Unsupported(f"JAX runs without x64 in this process: {', '.join(wide)} would be computed in 32 bits")
        import jaxonnxruntime.onnx_ops  # noqa: F401
        from jaxonnxruntime.core import handler  # noqa: F401 - registers handlers

        return _Session(self, model, names, outs)

    def is_unsupported(self, exc: BaseException) -> bool:
        if isinstance(exc, (Unsupported, NotImplementedError)):
            return True
        return bool(_UNSUPPORTED.search(one_line(str(exc))))


def _measure(jax) -> tuple[bool, bool]:
    """(whether a 64-bit float and integer come back from JAX unchanged, whether XLA's CPU code
    flushes a float32 subnormal to zero): what the 64-bit types and the smallest floats are
    computed at, measured rather than taken from the flags."""
    import jax.numpy as jnp

    wide = np.array([1 + 2.0 ** -40], dtype=np.float64)
    big = np.array([2 ** 40 + 1], dtype=np.int64)
    wide_back, big_back = np.asarray(jnp.asarray(wide) * 1.0), np.asarray(jnp.asarray(big) + 0)
    x64 = (wide_back.dtype == np.float64 and wide_back[0] == wide[0] and big_back.dtype == np.int64
           and big_back[0] == big[0])
    tiny = np.array([1e-45], dtype=np.float32)  # the smallest positive float32, a subnormal
    flushes = float(np.asarray(jnp.asarray(tiny) * 1.0)[0]) == 0.0
    return bool(x64), bool(flushes)
