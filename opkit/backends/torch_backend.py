"""PyTorch via onnx2torch as a conformance backend: ``pip install 'opkit-onnx[torch]'``.

onnx2torch converts the one-node model into a ``torch.fx.GraphModule`` at load (an op without a
converter fails there: "Converter is not implemented ...", *unsupported*); runs go through the
module on CPU, one thread, under ``torch.inference_mode``.

torch is pinned (``torch==2.13.0``, the CPU wheel reachable here). onnx2torch imports torchvision
at import time, and PyPI's torchvision wheel is a CUDA build that fails to load next to CPU torch
("operator torchvision::nms does not exist"); when that happens opkit installs a stub
``torchvision.ops`` whose functions raise NotImplementedError, so only NonMaxSuppression and
RoiAlign (the two converters that need torchvision) become unsupported. ``describe()`` says so.

Tensors: numpy in, ``torch.from_numpy``; bfloat16 moves as its 16-bit pattern (torch has no numpy
bfloat16). torch has no string tensors: string models are *unsupported* up front.
"""

from __future__ import annotations

import re
import sys
import types

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
    r"Converter is not implemented|not implemented for|not supported|Unsupported|unsupported|"
    r"No converter|torchvision is unusable|can't convert np\.ndarray of type", re.IGNORECASE)

_TORCHVISION_STUB = False


def _ensure_torchvision() -> bool:
    """Import torchvision, or install a stub of the bits onnx2torch imports. True when stubbed."""
    global _TORCHVISION_STUB
    if _TORCHVISION_STUB:
        return True
    try:
        import torchvision
        import torchvision.ops  # noqa: F401

        return False
    except Exception:  # noqa: BLE001 - ImportError, or RuntimeError from a CUDA-only build
        for key in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
            del sys.modules[key]

        def unusable(*args, **kwargs):
            raise NotImplementedError("torchvision is unusable here (its wheel needs CUDA): "
                                      "NMS / RoiAlign cannot run")

        tv = types.ModuleType("torchvision")
        ops = types.ModuleType("torchvision.ops")
        ops.nms = ops.roi_align = ops.box_convert = ops.batched_nms = unusable
        tv.ops = ops
        tv.__version__ = "stub"
        sys.modules["torchvision"] = tv
        sys.modules["torchvision.ops"] = ops
        _TORCHVISION_STUB = True
        return True


class _Session:
    def __init__(self, backend, module, names, out_elems):
        self._torch = backend._torch
        self._module = module
        self._names = names
        self._out_elems = out_elems

    def run(self, feeds):
        torch = self._torch
        args = [_to_torch(torch, feeds[n]) for n in self._names if n in feeds]
        with torch.inference_mode():
            result = self._module(*args)
        if not isinstance(result, (tuple, list)):
            result = [result]
        return [view_as(_to_numpy(torch, r), e) for r, e in zip(result, self._out_elems)]


def _to_torch(torch, array):
    arr = contiguous(array)
    if arr.dtype.name == "bfloat16":
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    if arr.dtype.kind == "O":
        raise Unsupported("torch has no string tensors")
    return torch.from_numpy(arr.copy())


def _to_numpy(torch, value):
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.dtype == torch.bfloat16:
            import ml_dtypes

            return value.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
        return value.numpy().copy()
    return np.asarray(value)


class TorchBackend(BackendBase):
    name = "torch"
    max_ir_version = 13  # onnx2torch reads IR 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)

    def __init__(self, threads: int = 1):
        (torch,) = require("torch", "torch", "torch")
        self.torchvision_stub = _ensure_torchvision()
        (onnx2torch,) = require("torch", "torch", "onnx2torch")
        import onnx

        torch.set_num_threads(int(threads))
        self._torch, self._onnx2torch, self._onnx = torch, onnx2torch, onnx
        self.threads = threads

    def version(self) -> str:
        return self._torch.__version__

    def describe(self) -> dict:
        from importlib.metadata import version

        try:
            o2t = version("onnx2torch")
        except Exception:  # noqa: BLE001
            o2t = "unknown"
        return {"name": self.name, "version": self.version(), "onnx2torch": o2t, "device": "cpu",
                "threads": self.threads, "torchvision": "stub (CUDA-only wheel)" if self.torchvision_stub else "ok"}


    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        model = self._onnx.load_from_string(model_bytes)
        ins, names, outs = io_elems(model)
        if "string" in set(ins.values()) | set(outs):
            raise Unsupported("torch has no string tensors")
        try:
            module = self._onnx2torch.convert(model)
        except NotImplementedError as exc:
            raise Unsupported(f"onnx2torch: {one_line(str(exc))}") from None
        except Exception as exc:  # noqa: BLE001 - a converter that fails on this model: still a refusal
            raise Unsupported(f"onnx2torch conversion failed: {type(exc).__name__}: {one_line(str(exc))}") from None
        module.eval()
        return _Session(self, module, names, outs)

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
