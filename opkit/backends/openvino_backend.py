"""OpenVINO (CPU device) as a conformance backend: ``pip install 'opkit-onnx[openvino]'``.

The ONNX frontend reads the model, the CPU plugin compiles it. The CPU plugin refuses inputs of
unknown rank ("CPU plug-in doesn't support Parameter operation with dynamic rank"), so a session
compiles once per combination of input ranks (dims stay dynamic), see ``RankSpecializedSession``.

Precision: on CPUs with bf16/AMX or fp16 support the CPU plugin's default
``INFERENCE_PRECISION_HINT`` is bf16 (or f16), i.e. f32 graphs silently run in reduced precision.
For conformance opkit compiles with ``INFERENCE_PRECISION_HINT=f32`` (option ``precision``), and
``describe()`` reports both the hint used and the device default, so a report says what ran.

Element types: OpenVINO's numpy bridge hands bf16 tensors out as float16 arrays holding bf16 bits;
opkit moves bf16 in and out as raw 16-bit words (a view, no conversion). Unsupported element
types (complex, string for most ops) fail in the frontend at load: *unsupported*.
"""

from __future__ import annotations

import re

import numpy as np

from ._runtime_common import (
    CompiledPool,
    RankSpecializedSession,
    backend_api_prepare,
    contiguous,
    one_line,
    require,
    view_as,
)
from .base import BackendBase, Unsupported
from .onnx_bytes import from_raw_bytes, is_packed, raw_bytes

_UNSUPPORTED = re.compile(
    r"Unsupported data type|OpConversionFailure|not supported|doesn't support|does not support|"
    r"No conversion rule|unsupported element type|Unsupported operation|"
    r"Cannot create .* layer|isn't supported|is not supported", re.IGNORECASE)


# ONNX element types OpenVINO holds packed, two to a byte, as ONNX does
_PACKED_TYPES = {"int4": "i4", "uint4": "u4", "float4e2m1": "f4e2m1"}


def packed_input(array: np.ndarray, elem: str) -> np.ndarray:
    """The bytes of an OpenVINO tensor of packed type ``elem`` holding ``array`` (for
    ``ov.Tensor(bytes, shape, type)``): the numpy bridge refuses ml_dtypes' int4 ("Unsupported data
    type: int4"), and one element per byte is not how OpenVINO reads them."""
    return np.frombuffer(raw_bytes(array, elem), dtype=np.uint8).copy()


def decode_output(elem: str, shape, data) -> np.ndarray:
    """An OpenVINO output as the array of ONNX element ``elem`` and ``shape`` it stands for.
    ``data`` is the tensor's ``data`` (``str_data`` for strings). Packed 4-bit outputs come as
    bytes, two elements each (int4 [1, -2, 3, -4, 5] is int8 [-31, -61, 5]); a string output with
    no element comes as an empty float64 array; bf16 comes as float16 holding bf16 bits."""
    shape = tuple(int(d) for d in shape)
    if elem == "string":
        if int(np.prod(shape, dtype=np.int64)) == 0:
            return np.empty(shape, dtype=object)
        return np.array([str(v) for v in np.asarray(data).reshape(-1)], dtype=object).reshape(shape)
    if is_packed(elem):
        return from_raw_bytes(np.ascontiguousarray(data).tobytes(), elem, shape)
    return view_as(np.array(data, copy=True), elem)


class OpenVinoError(RuntimeError):
    """An OpenVINO exception with its stack of 'Exception from src/...' lines squeezed to one line."""


def _clean(exc: BaseException) -> str:
    text = str(exc)
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("Exception from ")]
    return one_line("\n".join(lines) or text)


class _Session:
    def __init__(self, backend, model):
        self._ov = backend._ov
        self._backend = backend
        self._inner = RankSpecializedSession(model, self._compile, pool=backend.pool)

    def _compile(self, model, feeds):
        core = self._backend.core
        try:
            ov_model = core.read_model(model.SerializeToString(), b"")
            compiled = core.compile_model(ov_model, "CPU", self._backend.config)
        except RuntimeError as exc:
            raise OpenVinoError(_clean(exc)) from None
        request = compiled.create_infer_request()
        names = [p.get_any_name() for p in compiled.inputs]
        in_types = {p.get_any_name(): str(p.get_element_type()) for p in compiled.inputs}
        out_elems = self._inner.output_elems
        ov = self._ov

        in_elems = self._inner.inputs

        def run(feeds):
            tensors, keep = {}, []
            for name in names:
                arr = contiguous(feeds[name])
                elem = in_elems.get(name, "")
                if elem in _PACKED_TYPES:
                    data = packed_input(arr, elem)
                    keep.append(data)  # the tensor may share this memory until infer returns
                    tensors[name] = ov.Tensor(data, ov.Shape(list(arr.shape)), getattr(ov.Type, _PACKED_TYPES[elem]))
                elif in_types[name] == "<Type: 'bfloat16'>" or arr.dtype.name == "bfloat16":
                    t = ov.Tensor(ov.Type.bf16, list(arr.shape))
                    if arr.size:
                        t.data.view(np.uint16)[...] = arr.view(np.uint16)
                    tensors[name] = t
                else:
                    tensors[name] = ov.Tensor(arr, shared_memory=False) if arr.dtype.kind != "O" else \
                        ov.Tensor(arr.astype(str))
            try:
                request.infer(tensors)
            except RuntimeError as exc:
                raise OpenVinoError(_clean(exc)) from None
            outs = []
            for i, elem in enumerate(out_elems):
                t = request.get_output_tensor(i)
                data = t.str_data if str(t.element_type) == "<Type: 'string'>" else t.data
                outs.append(decode_output(elem, list(t.shape), data))
            return outs

        return run

    def run(self, feeds):
        return self._inner.run(feeds)


class OpenVinoBackend(BackendBase):
    """OpenVINO CPU plugin (``INFERENCE_PRECISION_HINT=f32`` unless ``precision`` says otherwise)."""

    name = "openvino"
    max_ir_version = 13  # accepts 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)

    def __init__(self, precision: str = "f32", threads: int = 1, max_compiled: int = 160):
        (ov,) = require("openvino", "openvino", "openvino")
        import onnx

        self._ov = ov
        self._onnx = onnx
        self.core = ov.Core()
        try:
            hint = str(self.core.get_property("CPU", "INFERENCE_PRECISION_HINT"))
            self.default_precision = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}.get(
                hint.split("'")[1] if "'" in hint else hint, hint)
        except Exception:  # noqa: BLE001
            self.default_precision = "unknown"
        self.precision = precision
        self.threads = threads
        self.config = {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": int(threads),
                       "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
        self.core.set_property("CPU", {"INFERENCE_NUM_THREADS": int(threads)})
        self.pool = CompiledPool(max_compiled)

    def version(self) -> str:
        return self._ov.__version__.split("-")[0]

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "build": self._ov.__version__, "device": "CPU",
                "inference_precision_hint": self.precision,
                "device_default_precision_hint": self.default_precision, "threads": self.threads,
                "precision": (f"INFERENCE_PRECISION_HINT={self.precision}" + (
                    "" if self.precision == "f32" else ": float32 graphs run in reduced precision"))}


    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        # the frontend converts here (unsupported ops/types fail at load); the CPU plugin compiles
        # lazily, once per combination of input ranks (it needs static ranks)
        try:
            self.core.read_model(model_bytes, b"")
        except RuntimeError as exc:
            raise OpenVinoError(_clean(exc)) from None
        return _Session(self, self._onnx.load_from_string(model_bytes))

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
