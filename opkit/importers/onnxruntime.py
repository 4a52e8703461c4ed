"""onnxruntime's contrib schema registry -> OpSpec models (``opkit import onnxruntime``).

onnxruntime's pybind schemas look like onnx's but differ in detail: attribute defaults come as
serialized AttributeProto bytes, parameters spell ``typeStr``/``isHomogeneous`` and carry no
differentiability. ``version_from_schema`` reads both spellings.
"""

from __future__ import annotations

from typing import Any

from ..spec.model import OpSpec
from .onnx_defs import specs_from_schemas


def _default_proto(attr: Any) -> Any:
    import onnx

    proto = onnx.AttributeProto()
    raw = getattr(attr, "_default_value", b"")
    if raw:
        proto.ParseFromString(raw)
    return proto


def import_onnxruntime(domains: tuple[str, ...] = ("com.microsoft",)) -> list[OpSpec]:
    import onnxruntime
    from onnxruntime.capi import onnxruntime_pybind11_state as C

    schemas = [s for s in C.get_all_operator_schema() if s.domain in domains]
    return specs_from_schemas(schemas, (("onnxruntime", onnxruntime.__version__),), _default_proto)
