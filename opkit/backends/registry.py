"""Backend names -> backends.

Built in: ``onnxruntime`` (alias ``ort``), ``onnx-reference`` and ``reference`` (opkit's own
reference kernels through ``opkit.backends.reference:ReferenceBackend``, driven via the onnx
Backend API). Anything spelled ``module:Class`` is loaded directly (an onnx Backend API class or
an opkit backend class), and packages can add names through the ``opkit.backends`` entry-point
group (the entry point names either kind of class).

Backends are described by a picklable ``BackendSpec`` so that worker processes can build their own.
"""

from __future__ import annotations

from ..core.distribution import pip_install

from dataclasses import dataclass, field

from ..core.onnx_types import suggest


class BackendNotFound(LookupError):
    """Unknown backend name (the message carries a did-you-mean hint)."""


class BackendUnavailable(ImportError):
    """A known backend whose package is not installed (the message names the extra)."""


@dataclass(frozen=True)
class BackendSpec:
    name: str
    target: str  # module:Class
    api: str  # "opkit" (opkit backend protocol) or "onnx" (onnx.backend.base.Backend API)
    options: tuple = field(default=())  # (key, value) pairs passed to the class
    requires: str | None = None  # pip extra / package named when the import fails
    # modules a worker's fork server may import before it forks workers (conformance.worker_start):
    # the adapter and its runtime, which start no thread and open no device when imported. Empty:
    # every worker is a fresh interpreter (spawn), the safe choice for a runtime not known to fork
    preload: tuple[str, ...] = ()


BUILTIN: dict[str, BackendSpec] = {
    "onnxruntime": BackendSpec("onnxruntime", "opkit.backends.onnxruntime:OnnxRuntimeBackend", "opkit",
                               requires=f"onnxruntime ({pip_install('ort')})",
                               preload=("numpy", "onnx", "onnxruntime", "opkit.backends.onnxruntime")),
    "onnx-reference": BackendSpec("onnx-reference", "opkit.backends.onnx_reference:OnnxReferenceBackend", "opkit",
                                  requires="onnx",
                                  preload=("numpy", "onnx", "onnx.reference", "opkit.backends.onnx_reference")),
    "reference": BackendSpec("reference", "opkit.backends.reference:ReferenceBackend", "onnx",
                             preload=("numpy", "onnx", "opkit.backends.reference")),
    "onnxruntime-backend-api": BackendSpec("onnxruntime-backend-api", "onnxruntime.backend.backend:OnnxRuntimeBackend",
                                           "onnx", requires=f"onnxruntime ({pip_install('ort')})"),
}
# opkit's adapters for third-party runtimes (entry points) whose runtime starts no thread when
# imported, checked by tests/test_worker_start.py: their workers fork from a server that imported
# them. JAX (threads at import) and any adapter not listed start as fresh interpreters.
FORK_SAFE: dict[str, tuple[str, ...]] = {
    "opkit.backends.openvino_backend:OpenVinoBackend": ("numpy", "onnx", "openvino", "opkit.backends.openvino_backend"),
    "opkit.backends.tract_backend:TractBackend": ("numpy", "onnx", "tract", "opkit.backends.tract_backend"),
    "opkit.backends.iree_backend:IreeBackend": ("numpy", "onnx", "iree.runtime", "iree.compiler",
                                                "opkit.backends.iree_backend"),
    # not onnx2torch: importing it outside the adapter (which stubs a broken torchvision) can fail
    "opkit.backends.torch_backend:TorchBackend": ("numpy", "onnx", "torch", "opkit.backends.torch_backend"),
}
ALIASES = {"ort": "onnxruntime", "onnx_reference": "onnx-reference", "onnxreference": "onnx-reference"}


def _entry_points() -> dict[str, str]:
    try:
        from importlib.metadata import entry_points

        return {ep.name: ep.value for ep in entry_points(group="opkit.backends")}
    except Exception:  # pragma: no cover
        return {}


def names() -> list[str]:
    return sorted(set(BUILTIN) | set(_entry_points()))


def resolve(name: str, **options) -> BackendSpec:
    """The spec of backend ``name`` (a registered name or ``module:Class``); raises BackendNotFound."""
    opts = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items() if v is not None))
    canonical = ALIASES.get(name, name)
    if canonical in BUILTIN:
        spec = BUILTIN[canonical]
        return BackendSpec(spec.name, spec.target, spec.api, opts, spec.requires, spec.preload)
    eps = _entry_points()
    if canonical in eps:
        return BackendSpec(canonical, eps[canonical], "auto", opts, preload=FORK_SAFE.get(eps[canonical], ()))
    if ":" in name:
        return BackendSpec(name, name, "auto", opts)
    raise BackendNotFound(f"unknown backend {name!r}" + (suggest(name, names() + list(ALIASES))
                          or f" (known: {', '.join(names())}; or give module:Class)"))


def _speaks_backend_api(cls) -> bool:
    """onnx's Backend API is class-level (``prepare`` is a classmethod, as in
    onnx.backend.base.Backend); opkit backends are instances whose ``prepare`` takes model bytes.
    Duck typing, so Backend-API classes that do not subclass onnx's base still work."""
    import inspect

    try:
        from onnx.backend.base import Backend as OnnxBackend

        if isinstance(cls, type) and issubclass(cls, OnnxBackend):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(cls, type) and isinstance(inspect.getattr_static(cls, "prepare", None), classmethod)


def create(spec: BackendSpec):
    """Instantiate the backend described by ``spec`` (in the current process)."""
    from .backend_api import BackendAPIBackend, load_class

    options = dict(spec.options)
    try:
        if spec.api == "onnx":
            return BackendAPIBackend(spec.target, name=spec.name, **options)
        cls = load_class(spec.target)
    except ModuleNotFoundError as exc:
        need = spec.requires or exc.name
        raise BackendUnavailable(f"backend {spec.name!r} needs {need} (missing module {exc.name!r})") from None
    if spec.api == "auto" and _speaks_backend_api(cls):
        return BackendAPIBackend(spec.target, name=spec.name, **options)
    backend = cls(**options)
    if spec.name and getattr(backend, "name", None) in (None, "backend"):
        backend.name = spec.name
    return backend


def backend_api_class(name: str):
    """The onnx Backend API class (``prepare(model).run(inputs)``) of backend ``name``, for suites of
    whole ONNX models (onnx's node tests). A backend that speaks only opkit's own protocol is refused
    with a hint. Errors are ValueError (unknown name, wrong protocol) or ImportError."""
    from .backend_api import load_class

    try:
        spec = resolve(name)
    except BackendNotFound as exc:
        raise ValueError(str(exc)) from None
    if spec.api == "opkit":
        raise ValueError(f"backend {name!r} implements opkit's backend protocol, not onnx's Backend API; "
                         "use e.g. 'reference', 'onnxruntime-backend-api' or module:Class")
    return load_class(spec.target)


def get(name: str, **options):
    """resolve + create."""
    return create(resolve(name, **options))
