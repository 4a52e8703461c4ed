"""onnxruntime as a conformance backend (CPUExecutionProvider unless ``providers`` says otherwise).

Sessions run single-threaded by default: conformance cases are tiny and many, and thread pools
cost more than they give there. ml_dtypes tensors (bfloat16, float8, int4 ...) go in and out as
OrtValues because onnxruntime's numpy bridge does not know those dtypes.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ..conformance.dtypes import elem_of, np_dtype, onnx_code
from ._runtime_common import contiguous  # np.ascontiguousarray would turn 0-d inputs into 1-d
from .base import BackendBase, Unsupported

# element types onnxruntime's numpy bridge cannot convert
_VIA_ORTVALUE = {"bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",
                 "int4", "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2"}

_UNSUPPORTED = re.compile(r"NOT_IMPLEMENTED|Could not find an implementation|not supported|"
                          r"is not a registered function/op|No opset import for domain|Unsupported model IR|"
                          r"is not currently registered or supported|ONNX Runtime only \*guarantees\* support|No Op registered for", re.I)


class _Session:
    def __init__(self, ort, sess):
        self._ort = ort
        self._sess = sess
        self._outputs = [o.name for o in sess.get_outputs()]
        self._out_elems = [elem_of(o.type) for o in sess.get_outputs()]
        self._in_elems = {i.name: elem_of(i.type) for i in sess.get_inputs()}
        self._slow = any(e in _VIA_ORTVALUE for e in self._out_elems + list(self._in_elems.values()))
        # a failing run would otherwise log to stderr on top of the exception we turn into an outcome
        self._run_options = ort.RunOptions()
        self._run_options.log_severity_level = 4

    def run(self, feeds):
        if not self._slow:
            return self._sess.run(self._outputs, feeds, self._run_options)
        ort = self._ort
        values = {}
        for name, arr in feeds.items():
            elem = self._in_elems.get(name, "")
            if elem in _VIA_ORTVALUE:
                raw = contiguous(arr).view(np.uint16 if arr.dtype.itemsize == 2 else np.uint8)
                values[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, onnx_code(elem))
            else:
                values[name] = ort.OrtValue.ortvalue_from_numpy(contiguous(arr))
        results = self._sess.run_with_ort_values(self._outputs, values, self._run_options)
        out = []
        for value, elem in zip(results, self._out_elems):
            if elem in _VIA_ORTVALUE:
                shape = tuple(value.shape())
                nbytes = value.tensor_size_in_bytes()
                buf = ctypes.string_at(value.data_ptr(), nbytes) if nbytes else b""
                dt = np_dtype(elem)
                out.append(np.frombuffer(buf, dtype=dt).reshape(shape).copy())
            else:
                out.append(value.numpy())
        return out


class OnnxRuntimeBackend(BackendBase):
    name = "onnxruntime"
    max_ir_version = 13  # onnxruntime 1.31 rejects IR 14 (what onnx 1.23 writes by default)
    max_ai_onnx_opset = 26

    def __init__(self, providers: list[str] | None = None, threads: int = 1):
        import onnxruntime as ort

        self._ort = ort
        self.providers = list(providers) if providers else ["CPUExecutionProvider"]
        available = ort.get_available_providers()
        missing = [p for p in self.providers if p not in available]
        if missing:
            raise ValueError(f"onnxruntime providers not available: {', '.join(missing)} "
                             f"(available: {', '.join(available)})")
        self._options = ort.SessionOptions()
        self._options.intra_op_num_threads = threads
        self._options.inter_op_num_threads = threads
        self._options.log_severity_level = 4  # load failures reach us as exceptions too
        ort.set_default_logger_severity(4)  # failures reach us as exceptions; keep stderr for progress
        if self.providers != ["CPUExecutionProvider"]:
            self.name = "onnxruntime[" + ",".join(p.replace("ExecutionProvider", "") for p in self.providers) + "]"

    def version(self) -> str:
        return self._ort.__version__

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "providers": self.providers}


    def prepare(self, model_bytes: bytes):
        sess = self._ort.InferenceSession(model_bytes, sess_options=self._options, providers=self.providers)
        return _Session(self._ort, sess)

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
