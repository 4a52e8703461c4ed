"""onnxruntime as a conformance backend (CPUExecutionProvider unless ``providers`` says otherwise).

Models are written at the IR version the installed release reads, and op versions newer than its
opsets are skipped (``onnxruntime_versions``). A load or run failure is *unsupported* when
onnxruntime says it lacks the op, type or feature (``says_unsupported``), an *error* otherwise.

Sessions run single-threaded by default: conformance cases are tiny and many, and thread pools
cost more than they give there. ml_dtypes tensors (bfloat16, float8, int4 ...) go in and out as
OrtValues because onnxruntime's numpy bridge does not know those dtypes; a string input of such a
model then goes in as an OrtValue too, made by a one-Constant session (``_string_ortvalue``).
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ..core.dtypes import elem_of, onnx_code
from ..core.values import element_of, has_map_type, is_container_type
from ._runtime_common import contiguous  # np.ascontiguousarray would turn 0-d inputs into 1-d
from .onnx_bytes import from_raw_bytes, is_packed, raw_bytes
from .onnxruntime_versions import OLDEST_AI_ONNX_OPSET, for_version
from .base import BackendBase, Unsupported

# element types onnxruntime's numpy bridge cannot convert
_VIA_ORTVALUE = {"bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",
                 "int4", "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2"}

# the map types onnxruntime's Python binding builds from a dict (as onnxruntime spells them): a dict
# of floats always becomes one of these, so a map of doubles, int64 or strings cannot be fed
_FEEDABLE_MAPS = {"map(int64,tensor(float))", "map(string,tensor(float))"}

# onnxruntime saying that it lacks the op, type or feature (rather than that the model or the input
# is wrong). Its NOT_IMPLEMENTED status says so by itself; these are the same statement under the
# generic FAIL / INVALID_GRAPH / RUNTIME_EXCEPTION statuses, as onnxruntime words it:
#   "MLDataType for: tensor(complex64) is not currently registered or supported" (load)
#   "directml:DiagonalMatrix1(-1) is not a registered function/op" (load)
#   "ConstantOfShapeBase<...>::SetValueFromTensorProto ... Unsupported value attribute datatype: 20" (load)
#   "GRU operator does not support double yet", "... is not currently supported" (run)
_UNSUPPORTED = re.compile(r"Could not find an implementation|No Op registered for|is not a registered function/op|"
                          r"is not currently registered or supported|not (currently )?supported|"
                          r"does not support|not implemented|Unsupported (value attribute )?data ?type|"
                          r"No opset import for domain|Unsupported model IR|"
                          r"ONNX Runtime only \*guarantees\* support", re.I)
# The part of _UNSUPPORTED that says no kernel exists for the op or the type (kernel lookup at session
# creation, an unknown element type, an unknown op, domain, IR version or opset): a coverage fact.
# Every other refusal comes from a kernel that was found and then refused the input (a reduction
# for float16, layout = 1, dilations with SAME padding, a value attribute's type): "refused".
_NO_KERNEL = re.compile(r"Could not find an implementation|Failed to find kernel|No Op registered for|"
                        r"is not a registered function/op|is not currently registered or supported|"
                        r"No opset import for domain|Unsupported model IR|ONNX Runtime only \*guarantees\* support",
                        re.I)
# "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : ..." -- how every onnxruntime status reaches Python
_STATUS = re.compile(r"\[ONNXRuntimeError\] : (\d+) : ([A-Z_]+) :")
# the Python exception classes onnxruntime raises per status, for messages without the prefix
_STATUS_OF_CLASS = {"Fail": "FAIL", "InvalidArgument": "INVALID_ARGUMENT", "NoSuchFile": "NO_SUCHFILE",
                    "NoModel": "NO_MODEL", "EngineError": "ENGINE_ERROR", "RuntimeException": "RUNTIME_EXCEPTION",
                    "InvalidProtobuf": "INVALID_PROTOBUF", "ModelLoaded": "MODEL_LOADED",
                    "NotImplemented": "NOT_IMPLEMENTED", "InvalidGraph": "INVALID_GRAPH", "EPFail": "EP_FAIL"}


class BindingLimit(Unsupported):
    """What onnxruntime's Python binding cannot pass (a map of doubles, an empty map): no model or
    kernel was tried, so it is a coverage fact of the binding, never a refusal of the runtime."""


def status_of(exc: BaseException) -> str | None:
    """onnxruntime's status name for an exception it raised ("NOT_IMPLEMENTED", "FAIL" ...), None
    for anything else (an exception of opkit's own, numpy's ...)."""
    found = _STATUS.search(str(exc))
    if found:
        return found.group(2)
    if type(exc).__module__.startswith("onnxruntime"):
        return _STATUS_OF_CLASS.get(type(exc).__name__)
    return None


def says_unsupported(exc: BaseException) -> bool:
    """Whether onnxruntime's exception says that it does not implement or support what the model
    asks (the op, a type, an attribute value): by its status when that is NOT_IMPLEMENTED, else by
    its wording; only for onnxruntime's own exceptions (a ValueError of opkit's feeding code that
    happens to say "not supported" is not the runtime's verdict)."""
    status = status_of(exc)
    if status is None:
        return False
    return status == "NOT_IMPLEMENTED" or bool(_UNSUPPORTED.search(str(exc)))


def lacks_kernel(exc: BaseException) -> bool | None:
    """Of a refusal ``says_unsupported`` accepts: True when onnxruntime found no kernel for the op or
    type (``_NO_KERNEL``), False when its kernel refused the input; None for an exception that is
    not onnxruntime's (opkit's own ``Unsupported``: the runner decides)."""
    if status_of(exc) is None:
        return None
    return bool(_NO_KERNEL.search(str(exc)))


def _packed_ortvalue(ort, arr, elem: str):
    """An OrtValue of a sub-byte type (int4, uint4, float4e2m1, int2, uint2) holding ``arr``: its
    shape, and the elements packed as ONNX lays them out. (A numpy array viewed as bytes would be
    read as two elements a byte: int4 [1, -2, 3] came out as [1, 0, -2].)"""
    data = raw_bytes(arr, elem)
    value = ort.OrtValue.ortvalue_from_shape_and_type(list(np.shape(arr)), onnx_code(elem))
    if data:
        ctypes.memmove(value.data_ptr(), data, min(len(data), value.tensor_size_in_bytes()))
    return value


def _string_ortvalue(ort, arr):
    """An OrtValue of ONNX strings holding ``arr`` (an object array of str or bytes).

    The Python binding builds OrtValues from non-string numpy arrays only ("Creation of OrtValues
    is currently only supported from non-string numpy arrays"), and ``run_with_ort_values`` takes
    nothing else. A session whose graph is a single Constant of ``arr`` returns it as an OrtValue,
    so a model with a string input next to a bfloat16/float8/4-bit one can still be fed."""
    import onnx
    from onnx import helper, numpy_helper

    value = np.asarray(arr, dtype=object)
    node = helper.make_node("Constant", [], ["strings"], value=numpy_helper.from_array(value, "strings"))
    graph = helper.make_graph([node], "strings", [],
                              [helper.make_tensor_value_info("strings", onnx.TensorProto.STRING, list(value.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"])
    return sess.run_with_ort_values(["strings"], {})[0]


class _Session:
    def __init__(self, ort, sess):
        self._ort = ort
        self._sess = sess
        for value in list(sess.get_inputs()) + list(sess.get_outputs()):
            if is_container_type(value.type) and element_of(value.type) in _VIA_ORTVALUE:
                # OrtValue carries those types for tensors only: no Python value can go in or come out
                raise Unsupported(f"onnxruntime's Python API cannot pass {value.type} values ({value.name}): its "
                                  f"numpy bridge has no {element_of(value.type)}, and sequences or optionals of "
                                  "OrtValues cannot be built from Python")
        for value in sess.get_inputs():
            if has_map_type(value.type) and value.type.replace(" ", "") not in _FEEDABLE_MAPS:
                raise BindingLimit(f"onnxruntime's Python API cannot feed {value.type} values ({value.name}): it "
                                  "builds maps from Python dicts as map(int64,tensor(float)) or "
                                  "map(string,tensor(float)) only")
        self._maps = {i.name for i in sess.get_inputs() if has_map_type(i.type)}
        self._outputs = [o.name for o in sess.get_outputs()]
        self._out_elems = [elem_of(o.type) for o in sess.get_outputs()]
        self._in_elems = {i.name: elem_of(i.type) for i in sess.get_inputs()}
        self._slow = any(e in _VIA_ORTVALUE for e in self._out_elems + list(self._in_elems.values()))
        # a failing run would otherwise log to stderr on top of the exception we turn into an outcome
        self._run_options = ort.RunOptions()
        self._run_options.log_severity_level = 4

    def run(self, feeds):
        for name in self._maps:
            if isinstance(feeds.get(name), dict) and not feeds[name]:
                raise BindingLimit("onnxruntime's Python API cannot feed an empty map "
                                  "(\"Size of dictionary is empty\")")
        if not self._slow:
            return self._sess.run(self._outputs, feeds, self._run_options)
        ort = self._ort
        values = {}
        for name, arr in feeds.items():
            elem = self._in_elems.get(name, "")
            if is_packed(elem):  # two (four) elements a byte, as onnxruntime reads them
                values[name] = _packed_ortvalue(ort, arr, elem)
            elif elem in _VIA_ORTVALUE:
                raw = contiguous(arr).view(np.uint16 if arr.dtype.itemsize == 2 else np.uint8)
                values[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, onnx_code(elem))
            elif elem == "string":  # CastLike(string, bfloat16), Cast(string) -> float8 ...
                values[name] = _string_ortvalue(ort, arr)
            else:
                values[name] = ort.OrtValue.ortvalue_from_numpy(contiguous(arr))
        results = self._sess.run_with_ort_values(self._outputs, values, self._run_options)
        out = []
        for value, elem in zip(results, self._out_elems):
            if elem in _VIA_ORTVALUE:
                shape = tuple(value.shape())
                nbytes = value.tensor_size_in_bytes()
                buf = ctypes.string_at(value.data_ptr(), nbytes) if nbytes else b""
                out.append(from_raw_bytes(buf, elem, shape))  # unpacks int4/uint4/float4e2m1/2-bit
            else:
                out.append(value.numpy())
        return out


class OnnxRuntimeBackend(BackendBase):
    name = "onnxruntime"
    container_values = True  # its python API takes lists for sequences and None for an empty optional

    def __init__(self, providers: list[str] | None = None, threads: int = 1):
        import onnxruntime as ort

        self._ort = ort
        # the IR version and opsets this release reads (1.16: IR 9, opset 19; 1.31: IR 13, opset 26)
        self.compatibility = for_version(ort.__version__)
        self.max_ir_version = self.compatibility.ir_version
        self.max_ai_onnx_opset = self.compatibility.ai_onnx_opset
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

    def max_opsets(self) -> dict[str, int]:
        return self.compatibility.opsets()

    def min_opsets(self) -> dict[str, int]:
        return {"ai.onnx": OLDEST_AI_ONNX_OPSET}

    def known_versions(self) -> dict[str, list[int]]:
        # the operator schemas of the ONNX this release was built with (its registry may reach a
        # later opset than some op's newest schema: 1.31.1 knows opset 26 but Attention only to 24)
        try:
            from onnxruntime.capi import onnxruntime_pybind11_state as C

            schemas = C.get_all_operator_schema()
        except Exception:  # noqa: BLE001 - a build without the call: nothing is known, nothing skipped
            return {}
        known: dict[str, set[int]] = {}
        for schema in schemas:
            known.setdefault(f"{schema.domain or 'ai.onnx'}::{schema.name}", set()).add(int(schema.since_version))
        return {key: sorted(versions) for key, versions in sorted(known.items())}

    def unavailable_domains(self) -> dict[str, str]:
        # DirectML primitives exist only in the DirectML execution provider: the CPU provider (or
        # any other) has no kernel for them, whatever onnxruntime's version
        if "DmlExecutionProvider" in self.providers:
            return {}
        return {"directml": "needs the DirectML execution provider"}

    def unfeedable_elements(self) -> dict[str, str]:
        # bfloat16, float8 and 4-bit tensors go in and out as OrtValues made from raw bytes; the
        # Python binding of older releases (1.16) lacks the two calls that takes
        value = self._ort.OrtValue
        if hasattr(value, "ortvalue_from_numpy_with_onnx_type") and hasattr(value, "tensor_size_in_bytes"):
            return {}
        why = (f"opkit's adapter cannot feed or read {{}} tensors through onnxruntime {self.version()}'s Python "
               "binding (no OrtValue.ortvalue_from_numpy_with_onnx_type / tensor_size_in_bytes)")
        return {elem: why.format(elem) for elem in sorted(_VIA_ORTVALUE)}


    def prepare(self, model_bytes: bytes):
        sess = self._ort.InferenceSession(model_bytes, sess_options=self._options, providers=self.providers)
        return _Session(self._ort, sess)

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or says_unsupported(exc)

    def lacks_kernel(self, exc: BaseException) -> bool | None:
        if isinstance(exc, BindingLimit):
            return True
        return lacks_kernel(exc)
