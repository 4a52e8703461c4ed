"""A runtime that has no kernels at opset 25 and later: opkit's reference kernels below it."""

from __future__ import annotations

from opkit.backends.base import Unsupported
from opkit.backends.reference import ReferenceBackend


class NoOpset25(ReferenceBackend):
    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs):
        if any(o.domain in ("", "ai.onnx") and o.version >= 25 for o in model.opset_import):
            raise Unsupported("NOT_IMPLEMENTED: no kernel registered for opset 25")
        return super().prepare(model, device, **kwargs)
