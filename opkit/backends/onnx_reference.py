"""onnx.reference.ReferenceEvaluator as a conformance backend (pure Python, in onnx itself)."""

from __future__ import annotations

import re

from .base import BackendBase, Unsupported

_UNSUPPORTED = re.compile(r"Unable to find a class for operator|No implementation|not implemented|"
                          r"is not implemented|Unable to import|not supported", re.I)


class _Session:
    def __init__(self, evaluator, wrapped: bool = False):
        self._ev = evaluator
        self._wrapped = wrapped

    def run(self, feeds):
        outputs = self._ev.run(None, {name: _typed_maps(value) for name, value in feeds.items()})
        if self._wrapped:  # onnx.reference's Optional returns [value], or [] for the empty optional
            return [(value[0] if value else None) if isinstance(value, list) and len(value) <= 1 else value
                    for value in outputs]
        return outputs


def _typed_maps(value):
    """A map (or a list of maps) with its values as NumPy scalars of its value type: onnx.reference
    reads a map's types from its values (DictVectorizer builds its output with np.array of them), so
    a map(int64, float) of Python floats would come out as doubles."""
    if isinstance(value, list):
        return [_typed_maps(v) for v in value] if any(isinstance(v, dict) for v in value) else value
    kind = getattr(value, "value_type", None) if isinstance(value, dict) else None
    if kind is None or kind == "string":
        return value
    from ..core.dtypes import np_dtype

    dtype = np_dtype(kind)
    return {k: dtype.type(v) for k, v in value.items()}


def _wraps_optionals(model) -> bool:
    """onnx.reference's Optional op returns its optional as a one-element list (empty when it holds
    nothing), where opkit's values (opkit.core.values) and onnxruntime give the element or None. Only
    that op wraps: an optional fed to Identity comes back as it went in."""
    return any(node.op_type == "Optional" and node.domain in ("", "ai.onnx") for node in model.graph.node)


class OnnxReferenceBackend(BackendBase):
    name = "onnx-reference"
    container_values = True
    max_ir_version = 14

    def __init__(self):
        import onnx

        self._onnx = onnx

    def version(self) -> str:
        return self._onnx.__version__

    def prepare(self, model_bytes: bytes):
        from onnx.reference import ReferenceEvaluator

        model = self._onnx.load_from_string(model_bytes)
        return _Session(ReferenceEvaluator(model), _wraps_optionals(model))

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
