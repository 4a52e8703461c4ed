"""The backend protocol the conformance runner drives.

A backend prepares a serialized one-node model into a session and runs feeds through it. Prepared
sessions are cached by the runner's worker per model signature, so ``prepare`` is called once per
signature and ``run`` many times.

Errors: ``prepare`` or ``run`` raise ``Unsupported`` when the backend refuses the op or type (the
runner reports the case as *unsupported*, not as an error); ``is_unsupported(exc)`` lets a backend
classify its native exceptions (e.g. onnxruntime's NOT_IMPLEMENTED) the same way.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class Unsupported(Exception):
    """The backend does not implement this op / type / attribute combination."""


@runtime_checkable
class Session(Protocol):
    def run(self, feeds: dict[str, Any]) -> list[Any]:
        """Outputs in the graph's output order."""


@runtime_checkable
class Backend(Protocol):
    name: str
    max_ir_version: int

    def version(self) -> str: ...

    def prepare(self, model_bytes: bytes) -> Session: ...

    def is_unsupported(self, exc: BaseException) -> bool: ...

    def max_opset(self, domain: str) -> int | None: ...


class BackendBase:
    """Defaults for the optional parts of the protocol."""

    name = "backend"
    max_ir_version = 13
    max_ai_onnx_opset: int | None = None  # the newest ai.onnx opset the engine loads, when known

    def version(self) -> str:
        return "unknown"

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError))

    def max_opset(self, domain: str) -> int | None:
        return self.max_ai_onnx_opset if domain in ("", "ai.onnx") else None

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version()}
