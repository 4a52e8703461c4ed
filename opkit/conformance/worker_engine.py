"""What a backend worker does with a request: the model prepared once per signature key (load
failures remembered too), the feeds run, the answer a ``Result``; and ``InProcess``, the worker
interface without a process (no isolation), for debugging and for measuring what isolation costs."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..backends.base import ConversionFailed

OK, UNSUPPORTED, REFUSED, ERROR, CRASH, TIMEOUT = "ok", "unsupported", "refused", "error", "crash", "timeout"
MAX_SESSIONS = 512


@dataclass
class Result:
    kind: str
    outputs: list | None = None
    message: str = ""
    stage: str = ""  # load | run
    output: str = ""  # a crash, hang or memory kill: the last lines the worker wrote (worker_output)
    no_kernel: bool = False  # UNSUPPORTED, and the backend's words say it has no kernel for the op or type
    converter: str = ""  # UNSUPPORTED because the converter in front of the runtime failed: its label
    # a crash met in a worker that had run other cases, run again in a fresh process
    # (conformance.worker): how that went (``reproduced``, ``after_history``, ``sequence``)
    replay: dict | None = None


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 2000 else text[:2000] + " ..."


class _Engine:
    """What the worker does, usable in process too."""

    def __init__(self, spec):
        from ..backends.registry import create

        self.backend = create(spec)
        self.sessions: OrderedDict[str, Any] = OrderedDict()

    def describe(self) -> dict:
        info = self.backend.describe() if hasattr(self.backend, "describe") else {
            "name": self.backend.name, "version": self.backend.version()}
        from ..backends.base import converter_label, limits

        info.update(limits(self.backend))  # IR version, opsets and domains the runner must respect
        label = converter_label(self.backend)
        if label:  # what translates the model for the runtime: the report says whose failures are whose
            info.setdefault("converter", label)
        return info

    def _refusal(self, exc: BaseException, stage: str) -> Result:
        """What the backend raised, as a Result: ERROR, or for a refusal UNSUPPORTED (no kernel for
        the op or type; or the backend's words do not tell, and the runner decides from what else
        of the binding ran: ``refusals``) or REFUSED (its words say a kernel was found and refused
        the input). A ``ConversionFailed`` (the converter in front of the runtime could not
        translate the model) is UNSUPPORTED with ``no_kernel`` and the converter's label: nothing
        ran, so every search and check treats it as a model the engine cannot take (never charged
        as refused), and the runner records it as ``unconverted`` (``recording``)."""
        if isinstance(exc, ConversionFailed):
            return Result(UNSUPPORTED, None, _short(exc), stage, no_kernel=True, converter=exc.label)
        if not self.backend.is_unsupported(exc):
            return Result(ERROR, None, _short(exc), stage)
        lacks = getattr(self.backend, "lacks_kernel", None)
        said = lacks(exc) if lacks is not None else None
        if said is False:
            return Result(REFUSED, None, _short(exc), stage)
        return Result(UNSUPPORTED, None, _short(exc), stage, no_kernel=said is True)

    def has(self, key: str) -> bool:
        return key in self.sessions

    def run(self, key: str, model_bytes: bytes | None, feeds: dict) -> Result:
        entry = self.sessions.get(key)
        if entry is None:
            if model_bytes is None:
                return Result("nomodel")
            try:
                entry = ("session", self.backend.prepare(model_bytes))
            except Exception as exc:  # noqa: BLE001 - everything a backend raises is an outcome
                entry = ("failed", self._refusal(exc, "load"))
            self.sessions[key] = entry
            if len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        else:
            self.sessions.move_to_end(key)
        if entry[0] == "failed":
            return entry[1]
        if feeds is None:  # load only: the model was accepted (BackendRunner.load_only)
            return Result(OK, [])
        try:
            outputs = entry[1].run(feeds)
        except Exception as exc:  # noqa: BLE001
            return self._refusal(exc, "run")
        return Result(OK, [None if o is None else _plain(o) for o in outputs])


def _plain(value):
    import numpy as np

    if isinstance(value, (list, tuple)):  # a sequence output: its tensors, not one stacked array
        return [None if v is None else _plain(v) for v in value]
    if isinstance(value, dict):  # a map output: kept a map (np.asarray would wrap it in a 0-d object array)
        return value
    return value if isinstance(value, np.ndarray) else np.asarray(value)


class InProcess:
    """Worker interface without isolation."""

    def __init__(self, spec, timeout: float = 10.0, memory_gb: float | None = None):
        self.spec = spec
        self.timeout = timeout
        self._engine = None
        self.restarts = 0

    def describe(self) -> dict:
        if self._engine is None:
            self._engine = _Engine(self.spec)
        return self._engine.describe()

    def run(self, key, model_bytes, feeds, timeout=None) -> Result:
        if self._engine is None:
            self._engine = _Engine(self.spec)
        data = None if self._engine.has(key) else (model_bytes() if callable(model_bytes) else model_bytes)
        return self._engine.run(key, data, feeds)

    def run_many(self, requests, timeout=None) -> list[Result]:
        return [self.run(*r, timeout=timeout) for r in requests]

    def close(self):
        self._engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
