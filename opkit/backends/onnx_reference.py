"""onnx.reference.ReferenceEvaluator as a conformance backend (pure Python, in onnx itself)."""

from __future__ import annotations

import re

from .base import BackendBase, Unsupported

_UNSUPPORTED = re.compile(r"Unable to find a class for operator|No implementation|not implemented|"
                          r"is not implemented|Unable to import|not supported", re.I)


class _Session:
    def __init__(self, evaluator):
        self._ev = evaluator

    def run(self, feeds):
        return self._ev.run(None, feeds)


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
        return _Session(ReferenceEvaluator(model))

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
