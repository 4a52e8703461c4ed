"""Find and call generated kernels.

Generated modules live at ``<generated>/kernels/<domain>/<op>.py`` of the spec tree that defines
the op (the project's or opkit's built-in one; ``opkit.spec.catalog`` says which). Domains have dots, so
they are loaded by file path, not imported as packages, and are cached after the first load.

``get_kernel(domain, op, since)`` returns a callable ``fn(*inputs, **attributes)`` that always
returns a tuple with one entry per formal output (None for outputs the kernel did not produce).
It also accepts ``_n_outputs=`` (how many outputs the node asks for), forwarded to the kernels
that need it (Split without sizes) and ignored by the rest.
Inputs are passed flat, as in a node: the callable groups trailing values into a variadic
parameter's list, and an absent optional input is ``None``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable

import numpy as np

from ..spec import catalog
from ..core.naming import module_path, snake
from ..core.onnx_types import DEFAULT_DOMAIN



def _domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", None) else domain


@functools.lru_cache(maxsize=None)
def _module(domain: str, op: str):
    entry = catalog.find(domain, op)
    path = entry.kernel_file if entry else None
    if path is None or not os.path.exists(path):
        return None
    name = f"opkit_generated_kernels.{domain.replace('.', '_')}.{snake(op)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    # the module's own op name (file names are snake case; two ops could collide)
    return module


def _adapt(fn: Callable, options: tuple[str, ...], n_outputs: int, wants_n: bool) -> Callable:
    variadic_at = options.index("variadic") if "variadic" in options else None

    def call(*inputs, _n_outputs=None, **attributes):
        if wants_n:
            attributes["_n_outputs"] = _n_outputs
        if variadic_at is not None:
            args = list(inputs[:variadic_at]) + [list(inputs[variadic_at:])]
        else:
            args = inputs
        result = fn(*args, **attributes)
        if isinstance(result, tuple):
            out = result + (None,) * (n_outputs - len(result))
        else:
            out = (result,) + (None,) * (n_outputs - 1)
        return out

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn
    return call


def get_kernel(domain: str, op: str, since: int) -> Callable | None:
    """The kernel of ``op`` version ``since`` (exact), or None. ``''`` means ai.onnx."""
    return _get_kernel(_domain(domain), op, since)


@functools.lru_cache(maxsize=None)
def _get_kernel(domain: str, op: str, since: int) -> Callable | None:
    module = _module(domain, op)
    if module is None or since not in module.KERNELS:
        return None
    options, n_outputs, wants_n = module.SIGNATURES[since]
    return _adapt(module.KERNELS[since], tuple(options), n_outputs, wants_n)


@functools.lru_cache(maxsize=None)
def _versions(domain: str, op: str) -> tuple[int, ...]:
    """Every ``since`` of the op in the specs (with or without a kernel)."""
    module = _module(domain, op)
    if module is not None:
        return tuple(module.VERSIONS)
    entry = catalog.find(domain, op)
    if entry is None:
        return ()
    from ..spec.load import load_specs

    specs, _ = load_specs([entry.path])
    return tuple(v.since for v in specs[0].versions) if specs else ()


def version_for_opset(domain: str, op: str, opset: int) -> int | None:
    """The ``since`` of the op version in force at ``opset``."""
    found = None
    for since in _versions(_domain(domain), op):
        if since <= opset:
            found = since
    return found


def kernel_for_opset(domain: str, op: str, opset: int) -> Callable | None:
    """The kernel of the op version in force at ``opset`` (None if that version has no kernel)."""
    since = version_for_opset(domain, op, opset)
    return None if since is None else get_kernel(domain, op, since)


def available_kernels() -> list[tuple[str, str, int]]:
    """(domain, op, since) for every generated kernel, sorted."""
    out = []
    for entry in catalog.entries():
        if os.path.exists(entry.kernel_file):
            module = _module(entry.domain, entry.op)
            out.extend((entry.domain, entry.op, since) for since in sorted(module.KERNELS))
    return out


def clear_caches() -> None:
    """Forget loaded kernels (after the active project changed)."""
    for cached in (_module, _get_kernel, _versions):
        cached.cache_clear()


__all__ = ["get_kernel", "kernel_for_opset", "available_kernels", "version_for_opset", "module_path", "np"]
