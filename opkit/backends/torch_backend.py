"""PyTorch via onnx2torch as a conformance backend: ``pip install 'opkit-onnx[torch]'``.

onnx2torch converts the one-node model into a ``torch.fx.GraphModule`` at load; any failure there
(an op without a converter: "Converter is not implemented ..."; a bfloat16 initializer, which
onnx2torch 1.5.15 hands to ``torch.from_numpy`` as an ml_dtypes array torch cannot take) is the
converter's: ``ConversionFailed``, outcome *unconverted*, never charged to torch. So is a refusal
onnx2torch's translated code raises itself when the module runs (a ``raise`` statement in the
onnx2torch package, e.g. "GatherND for batch_dims != 0 is not implemented": the converter wrote a
module for a case it cannot translate; torch never ran a kernel). What torch raises, returns or
crashes on when the module runs is torch's. Runs go through the module on CPU, one thread, under
``torch.inference_mode``.

Precision: every type at its own width. torch's default dtype stays float32 (onnx2torch makes its
Python-number constants with it), no autocast, and ``float32_matmul_precision`` is set to
"highest" (the other settings let oneDNN compute float32 matmuls in bfloat16 on CPUs that have
it; TF32 is a CUDA matter). ``describe()["precision"]`` says so.

torch is pinned (``torch==2.13.0``, the CPU wheel reachable here). onnx2torch imports torchvision
at import time, and PyPI's torchvision wheel is a CUDA build that fails to load next to CPU torch
("operator torchvision::nms does not exist"); when that happens opkit installs a stub
``torchvision.ops`` whose functions raise NotImplementedError, so only NonMaxSuppression and
RoiAlign (the two converters that need torchvision) become unsupported. ``describe()`` says so.

Tensors: numpy in, ``torch.from_numpy``; bfloat16 and the float8 types move as their bit patterns
(torch has them, but no NumPy interop for them), every other ONNX tensor type (bool, int8..uint64,
float16/32/64, complex64/128) as it is. torch has no string tensors: string models are
*unsupported* up front. The 2-, 4- and 6-bit types have no NumPy-backed torch tensor opkit could
hand over (``torch.int4`` is a shell dtype): their bindings are skipped as opkit's adapter's
(``unfeedable_elements``), never charged to torch.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import types

import numpy as np

from ._runtime_common import (
    backend_api_prepare,
    contiguous,
    io_elems,
    require,
    view_as,
)
from .base import BackendBase, Unsupported

_UNSUPPORTED = re.compile(
    r"Converter is not implemented|not implemented for|not supported|Unsupported|unsupported|"
    r"No converter|torchvision is unusable", re.IGNORECASE)

# ml_dtypes types torch has under the same name: moved as their bit patterns (from_numpy refuses them)
_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e4m3fnuz": np.uint8, "float8_e5m2": np.uint8,
         "float8_e5m2fnuz": np.uint8, "float8_e8m0fnu": np.uint8}
# ONNX element types with no NumPy-backed torch tensor: opkit's adapter cannot hand them over
_NO_TENSOR = ("int2", "uint2", "int4", "uint4", "float4e2m1", "float6e2m3", "float6e3m2")

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
        self._backend = backend
        self._converter_dir = os.path.dirname(backend._onnx2torch.__file__)
        self._torch = backend._torch
        self._module = module
        self._names = names
        self._out_elems = out_elems

    def run(self, feeds):
        torch = self._torch
        args = [_to_torch(torch, feeds[n]) for n in self._names if n in feeds]
        try:
            with torch.inference_mode():
                result = self._module(*args)
        except Exception as exc:  # noqa: BLE001 - the converter's own refusals are told apart from torch's
            if raised_in_package(exc, self._converter_dir):
                raise self._backend.conversion_failed(exc) from None
            raise
        if not isinstance(result, (tuple, list)):
            result = [result]
        return [view_as(_to_numpy(torch, r), e) for r, e in zip(result, self._out_elems)]


def raised_in_package(exc: BaseException, package_dir: str) -> bool:
    """Whether ``exc`` was raised by a ``raise`` statement of the package at ``package_dir``: its
    innermost traceback frame is a file of the package and the line it stopped on raises. (An error
    of a C++ torch function onnx2torch calls directly also stops in onnx2torch's frame, on the
    call's line: that one is torch's, which the line tells apart.)"""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
    if os.path.commonpath([filename, os.path.abspath(package_dir)]) != os.path.abspath(package_dir):
        return False
    return linecache.getline(filename, tb.tb_lineno).lstrip().startswith("raise")


def _to_torch(torch, array):
    arr = contiguous(array)
    bits = _BITS.get(arr.dtype.name)
    if bits is not None and hasattr(torch, arr.dtype.name):
        return torch.from_numpy(arr.view(bits).copy()).view(getattr(torch, arr.dtype.name))
    if arr.dtype.kind == "O":
        raise Unsupported("torch has no string tensors")
    return torch.from_numpy(arr.copy())


def _to_numpy(torch, value):
    if isinstance(value, torch.Tensor):
        value = value.detach()
        name = str(value.dtype).replace("torch.", "")
        if name in _BITS:
            import ml_dtypes

            bits = torch.uint16 if _BITS[name] is np.uint16 else torch.uint8
            return value.contiguous().view(bits).numpy().view(getattr(ml_dtypes, name)).copy()
        return value.numpy().copy()
    return np.asarray(value)


class TorchBackend(BackendBase):
    name = "torch"
    max_ir_version = 13  # onnx2torch reads IR 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)
    converter = "onnx2torch"

    def __init__(self, threads: int = 1):
        (torch,) = require("torch", "torch", "torch")
        self.torchvision_stub = _ensure_torchvision()
        (onnx2torch,) = require("torch", "torch", "onnx2torch")
        import onnx

        torch.set_num_threads(int(threads))
        # full float32 matmuls whatever the environment set: "high"/"medium" allow bfloat16 passes
        torch.set_float32_matmul_precision("highest")
        self._torch, self._onnx2torch, self._onnx = torch, onnx2torch, onnx
        self.threads = threads

    def version(self) -> str:
        return self._torch.__version__

    def unfeedable_elements(self) -> dict[str, str]:
        return {t: f"opkit's torch adapter cannot hand {t} tensors to torch (torch has no NumPy-backed {t} tensor)"
                for t in _NO_TENSOR}

    def converter_version(self) -> str:
        from importlib.metadata import version

        try:
            return version("onnx2torch")
        except Exception:  # noqa: BLE001
            return "unknown"

    def precision(self) -> str:
        torch = self._torch
        return (f"each type at its own width (default dtype {str(torch.get_default_dtype()).replace('torch.', '')}, "
                f"float32 matmul precision {torch.get_float32_matmul_precision()}, no autocast; CPU, so no TF32)")

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "onnx2torch": self.converter_version(), "device": "cpu",
                "threads": self.threads, "torchvision": "stub (CUDA-only wheel)" if self.torchvision_stub else "ok",
                "precision": self.precision()}


    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        model = self._onnx.load_from_string(model_bytes)
        ins, names, outs = io_elems(model)
        if "string" in set(ins.values()) | set(outs):
            raise Unsupported("torch has no string tensors")
        try:
            module = self._onnx2torch.convert(model)
        except Exception as exc:  # noqa: BLE001 - whatever the converter raises, torch never saw the model
            raise self.conversion_failed(exc) from None
        module.eval()
        return _Session(self, module, names, outs)

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError)) or bool(_UNSUPPORTED.search(str(exc)))
