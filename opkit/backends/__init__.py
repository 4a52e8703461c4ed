"""Backends that run ONNX models: ``reference`` (opkit's generated kernels) and, through
``registry``, onnxruntime, onnx.reference and any ``module:Class``."""

from __future__ import annotations

BACKENDS = {"reference": "opkit.backends.reference:ReferenceBackend"}


def get_backend(name: str):
    """An onnx Backend API class (``prepare(model).run(inputs)``) by short name or ``module:Class``.

    Names come from ``opkit.backends.registry`` when it knows them (e.g. ``reference``,
    ``onnxruntime-backend-api``); backends that only speak opkit's own backend protocol are refused
    with a hint, since suites of ONNX models need the Backend API."""
    import importlib

    target = BACKENDS.get(name)
    if target is None:
        try:
            from .registry import resolve
        except ImportError:  # pragma: no cover - registry not present
            resolve = None
        if resolve is not None:
            spec = resolve(name)
            if spec.api == "opkit":
                raise ValueError(f"backend {name!r} implements opkit's backend protocol, not onnx's Backend API; "
                                 "use e.g. 'reference', 'onnxruntime-backend-api' or module:Class")
            target = spec.target
        else:
            target = name
    if ":" not in target:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))} (or module:Class)")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)
