"""Any class following onnx's Backend API (``onnx.backend.base.Backend``) as a conformance backend.

Given as ``module:Class`` (e.g. ``onnxruntime.backend:OnnxRuntimeBackend`` or opkit's own
``opkit.backends.reference:ReferenceBackend``). ``is_compatible`` / ``supports_device`` returning
False, or ``prepare`` raising NotImplementedError, make a case *unsupported*.
"""

from __future__ import annotations

import importlib
import re
import unittest

from .base import BackendBase, Unsupported

_UNSUPPORTED = re.compile(r"NOT_IMPLEMENTED|Could not find an implementation|not implemented|not supported|"
                          r"Unable to find a class for operator|No kernel for", re.I)


def load_class(target: str):
    if ":" not in target:
        raise ValueError(f"expected module:Class, got {target!r}")
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class _Session:
    def __init__(self, rep, input_names):
        self._rep = rep
        self._names = input_names

    def run(self, feeds):
        outputs = self._rep.run([feeds[n] for n in self._names if n in feeds])
        return list(outputs)


class BackendAPIBackend(BackendBase):
    max_ir_version = 13
    # Backend-API implementations check what they are given (onnxruntime's runs onnx.checker), and
    # the checker refuses an output without a shape: the runner gives them one (output_shapes)
    needs_output_shapes = True

    def __init__(self, target: str, name: str | None = None, device: str = "CPU"):
        self.target = target
        self.cls = load_class(target)
        self.name = name or target
        self.device = device
        self.max_ir_version = getattr(self.cls, "max_ir_version", 13)
        self.container_values = bool(getattr(self.cls, "container_values", False))
        self._max_opsets: dict[str, int] = {}
        if self.target.split(".")[0] == "onnxruntime":  # onnxruntime's own Backend API: what its release reads
            from .onnxruntime_versions import for_version

            compatibility = for_version(self.version())
            self.max_ir_version = compatibility.ir_version
            self._max_opsets = compatibility.opsets()

    def version(self) -> str:
        version = getattr(self.cls, "version", None) or getattr(self.cls, "__version__", None)
        if callable(version):
            version = version()
        if version is None:
            module = importlib.import_module(self.target.split(":")[0].split(".")[0])
            version = getattr(module, "__version__", "unknown")
        return str(version)

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "class": self.target}

    def max_opsets(self) -> dict[str, int]:
        return dict(self._max_opsets)

    def prepare(self, model_bytes: bytes):
        import onnx

        model = onnx.load_from_string(model_bytes)
        if hasattr(self.cls, "supports_device") and not self.cls.supports_device(self.device):
            raise Unsupported(f"{self.target} does not support device {self.device}")
        if hasattr(self.cls, "is_compatible") and not self.cls.is_compatible(model, device=self.device):
            raise Unsupported(f"{self.target}.is_compatible() is False for this model")
        rep = self.cls.prepare(model, device=self.device)
        initializers = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initializers]
        return _Session(rep, names)

    def is_unsupported(self, exc: BaseException) -> bool:
        # a Backend API class that skips a model declines it (onnxruntime's raises unittest.SkipTest
        # for domains other than onnx's released ones: "only released onnx opsets are supported")
        return isinstance(exc, (Unsupported, NotImplementedError, unittest.SkipTest)) or bool(
            _UNSUPPORTED.search(str(exc)))

    def lacks_kernel(self, exc: BaseException) -> bool | None:
        """onnxruntime's words, when the class wraps onnxruntime (its Backend API class raises its
        exceptions unchanged); a declined model (SkipTest, is_compatible) lacks the kernel; else
        the runner decides (``BackendBase.lacks_kernel``)."""
        from .onnxruntime import lacks_kernel

        if isinstance(exc, unittest.SkipTest) or str(exc).endswith(".is_compatible() is False for this model"):
            return True
        return lacks_kernel(exc)
