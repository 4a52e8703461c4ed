"""The backend protocol the conformance runner drives.

A backend prepares a serialized one-node model into a session and runs feeds through it. Prepared
sessions are cached by the runner's worker per model signature, so ``prepare`` is called once per
signature and ``run`` many times.

Errors: ``prepare`` or ``run`` raise ``Unsupported`` when the backend refuses the op or type (the
runner reports the case as *unsupported*, not as an error); ``is_unsupported(exc)`` lets a backend
classify its native exceptions (e.g. onnxruntime's NOT_IMPLEMENTED) the same way.

Not implementing an op or type at all is a coverage fact; refusing one input of an op and type the
engine does implement (an attribute value, a shape) is a conformance failure, *refused*. Where a
backend can tell the two apart from its own words, ``lacks_kernel(exc)`` says which (True: no kernel
is registered for the op or type; False: a kernel was found and refused the input); None (the
default) leaves it to the runner, which charges a refusal once another case of the same op version
and type binding ran.

Some runtimes do not read ONNX themselves: a converter or compiler translates the model first
(onnx2torch for PyTorch, jaxonnxruntime for JAX, IREE's ONNX importer and iree-compile). Such a
backend names it (``converter``, ``converter_version``) and raises ``ConversionFailed`` when the
translation fails: the case is *unconverted*, the converter's, never charged to the runtime. The
backends that read ONNX themselves (onnxruntime, OpenVINO, tract, opkit's reference) have
``converter = None``.

What an engine cannot know is not run at all (``limits``): op versions newer than the opsets it
declares (``max_opsets``) or than the versions its ONNX schemas know (``known_versions``), and
domains it cannot run as configured (``unavailable_domains``) are *skipped* with the reason, never
charged to it.
"""

from __future__ import annotations

import re
from typing import Any, Protocol, runtime_checkable


class Unsupported(Exception):
    """The backend does not implement this op / type / attribute combination."""


class ConversionFailed(Unsupported):
    """The converter in front of the runtime (``converter``, at ``version``) could not translate
    the model, so the runtime never saw it. Raised for the translation step only: a failure of the
    translated model at run time is the runtime's. The message reads "ConversionFailed: onnx2torch
    1.5.15: <what failed>" in a worker's answer (``converter_of`` finds the converter in it)."""

    def __init__(self, converter: str, message: str, version: str = ""):
        self.converter, self.version, self.what = converter, version or "", message
        super().__init__(f"{self.label}: {message}")

    @property
    def label(self) -> str:
        """The converter and its version, as reports count them ("onnx2torch 1.5.15")."""
        return f"{self.converter} {self.version}".strip()

    def __reduce__(self):  # picklable with its fields (the default would call __init__ with the text only)
        return type(self), (self.converter, self.what, self.version)


# a converter's label holds no ": " (names and versions do not), so the first one ends it
_CONVERTED_BY = re.compile(r"\bConversionFailed: (?P<label>[^:]+?): ")


def converter_of(message: str) -> str | None:
    """The converter label of a worker's answer to a ``ConversionFailed`` ("onnx2torch 1.5.15"),
    found anywhere in ``message`` (a property's call prefixes it with its own words); else None."""
    found = _CONVERTED_BY.search(message or "")
    return found.group("label") if found else None


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

    def min_opsets(self) -> dict[str, int]:
        """The oldest opset of each domain the engine supports, where it says so: op versions that
        are no longer in force at it are skipped as dropped (not run), and the versions still in
        force there are run in a model of that opset."""
        return {}

    def unfeedable_elements(self) -> dict[str, str]:
        """Element types opkit's adapter cannot feed to or read from this engine (an old binding
        that lacks the call that would), with the reason: their bindings are skipped, not run."""
        return {}

    def max_opset(self, domain: str) -> int | None: ...


def spec_domain(domain: str) -> str:
    """A domain as specs name it: the default domain is "ai.onnx" (models write it as "")."""
    return domain or "ai.onnx"


class BackendBase:
    """Defaults for the optional parts of the protocol."""

    name = "backend"
    max_ir_version = 13
    max_ai_onnx_opset: int | None = None  # the newest ai.onnx opset the engine loads, when known
    # the engine checks models with onnx.checker, which wants every graph output to have a shape
    needs_output_shapes = False
    # the adapter feeds and reads sequence and optional values (Python lists, None), not only tensors
    container_values = False
    # the converter or compiler that translates ONNX for the runtime (None: the runtime reads ONNX)
    converter: str | None = None

    def version(self) -> str:
        return "unknown"

    def converter_version(self) -> str:
        """The version of ``converter`` ("" when there is none or it cannot tell)."""
        return ""

    def conversion_failed(self, exc: BaseException, step: str | None = None) -> ConversionFailed:
        """``exc`` of the translation step as ``ConversionFailed`` (``step``: the converter's part
        that failed, e.g. "iree-compile" of IREE's importer + compiler; default ``converter``)."""
        from ._runtime_common import one_line

        return ConversionFailed(step or self.converter or "converter",
                                f"{type(exc).__name__}: {one_line(str(exc))}", self.converter_version())

    def is_unsupported(self, exc: BaseException) -> bool:
        return isinstance(exc, (Unsupported, NotImplementedError))

    def lacks_kernel(self, exc: BaseException) -> bool | None:
        """Of an exception ``is_unsupported`` accepts: True when it says the engine has no kernel
        for the op or type, False when a kernel was found and refused the input, None when the
        words do not tell (see the module doc)."""
        return None

    def max_opsets(self) -> dict[str, int]:
        """The newest opset of each domain the engine can know, for the domains where that is known:
        op versions beyond it are skipped, not run (an engine cannot know an opset newer than itself)."""
        return {} if self.max_ai_onnx_opset is None else {"ai.onnx": self.max_ai_onnx_opset}

    def max_opset(self, domain: str) -> int | None:
        return self.max_opsets().get(spec_domain(domain))

    def known_versions(self) -> dict[str, list[int]]:
        """The op versions the engine's own ONNX schemas know, as ``{"domain::Op": [since, ...]}``,
        where it says so: a runtime built with an ONNX older than an op version resolves a model of
        that opset to the op's last version it knows and refuses the new attributes (onnxruntime
        1.31.1 runs Attention at opset 25 as Attention-24, "Unrecognized attribute:
        left_window_size"). Versions newer than all it knows are skipped, not charged."""
        return {}

    def unavailable_domains(self) -> dict[str, str]:
        """Domains whose ops this engine, as configured, cannot run at all, with the reason (ops that
        only exist in an execution provider that is not enabled): skipped, not run."""
        return {}

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version()}


def converter_label(backend) -> str | None:
    """The converter in front of ``backend`` and its version ("onnx2torch 1.5.15"), for the
    report's target; None for a runtime that reads ONNX itself."""
    name = getattr(backend, "converter", None)
    if not name:
        return None
    version = getattr(backend, "converter_version", None)
    return f"{name} {version() if callable(version) else ''}".strip()


def limits(backend) -> dict:
    """What the runner needs to know before building or running a case on ``backend``: the IR
    version to write, the opsets it can know, the domains it cannot run. Works for any object
    following the protocol (engines that do not derive from BackendBase declare nothing)."""
    max_opsets = getattr(backend, "max_opsets", None)
    min_opsets = getattr(backend, "min_opsets", None)
    unfeedable = getattr(backend, "unfeedable_elements", None)
    unavailable = getattr(backend, "unavailable_domains", None)
    known = getattr(backend, "known_versions", None)
    return {"max_ir_version": getattr(backend, "max_ir_version", 13),
            "max_opsets": dict(max_opsets()) if callable(max_opsets) else {},
            "min_opsets": dict(min_opsets()) if callable(min_opsets) else {},
            "unfeedable_elements": dict(unfeedable()) if callable(unfeedable) else {},
            "unavailable_domains": dict(unavailable()) if callable(unavailable) else {},
            "known_versions": dict(known()) if callable(known) else {},
            "needs_output_shapes": bool(getattr(backend, "needs_output_shapes", False)),
            "container_values": bool(getattr(backend, "container_values", False))}
