"""Shared plumbing for the third-party runtime backends (openvino, tract, iree, torch, jax).

Each of those backends is an optional extra: its module imports without the engine, and building
the backend without the engine raises an ``ImportError`` whose one-line message names the extra
(``opkit backend 'tract' needs: pip install 'opkit-onnx[tract]' (missing module 'tract')``).

opkit's conformance models declare graph inputs by element type only (no rank, no dims) so that one
session serves every shape of a signature. Most compiling engines refuse unknown-rank inputs, so
``RankSpecializedSession`` specializes the model per *input ranks* (every dim a named symbol) on
first use of each rank combination and caches the compiled form: a Trilu signature fed rank 2, 3
and 4 inputs compiles three times, not once per drawn shape.

Repro bundles (opkit.conformance.repro) rerun non-builtin backends through the onnx Backend API
(``Class.prepare(model, device="CPU").run([inputs])``). ``backend_api_prepare`` gives the opkit
backend classes that class-level entry point, so a bundle's ``repro.py`` reruns a case on these
runtimes with no change to the bundle format.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..core.distribution import pip_install
from ..core.dtypes import NUMPY_DTYPES, elem_of
from ..core.onnx_types import ELEMENT_TYPE_CODES

_CODE_TO_ELEM = {code: name for name, code in ELEMENT_TYPE_CODES.items()}

# per-process compile counters of RankSpecializedSession (benchmarks/bench_runtimes.py reads them)
STATS = {"compiles": 0, "compile_s": 0.0}


def require(backend: str, extra: str, *modules: str) -> list:
    """Import ``modules``; a missing one raises ImportError naming the extra to install."""
    loaded = []
    for name in modules:
        try:
            loaded.append(importlib.import_module(name))
        except ImportError as exc:
            if isinstance(exc, ModuleNotFoundError):
                why = f"missing module {(exc.name or name)!r}"
            else:
                why = f"cannot import {name!r}: {(str(exc).splitlines() or [''])[0][:200]}"
            raise ImportError(f"opkit backend {backend!r} needs: {pip_install(extra)} ({why})") from None
    return loaded


def one_line(text: str, limit: int = 600) -> str:
    """An engine's multi-line error (stack dumps, Rust backtraces) squeezed to its useful lines."""
    lines = []
    for line in str(text).splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith(("Stack backtrace", "Stack dump", "Please report issues", "PLEASE submit a bug")):
            break
        lines.append(line)
    out = " | ".join(lines)
    return out if len(out) <= limit else out[:limit] + " ..."


def elem_name(code: int) -> str:
    return _CODE_TO_ELEM.get(int(code), f"code{code}")


def io_elems(model) -> tuple[dict[str, str], list[str], list[str]]:
    """(graph input name -> element name, input names in order, output element names in order)."""
    inits = {t.name for t in model.graph.initializer}
    ins = {}
    order = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        ins[vi.name] = elem_name(vi.type.tensor_type.elem_type)
        order.append(vi.name)
    outs = [elem_name(vi.type.tensor_type.elem_type) for vi in model.graph.output]
    return ins, order, outs


def with_ranks(model, ranks: dict[str, int]):
    """A copy of ``model`` whose graph inputs have the given ranks, each dim a named symbol."""
    return _with_input_dims(model, {name: [f"{_sym(name)}_{j}" for j in range(rank)] for name, rank in ranks.items()})


def with_shapes(model, shapes: dict[str, tuple]):
    """A copy of ``model`` whose graph inputs have the given static shapes."""
    return _with_input_dims(model, {name: [int(d) for d in shape] for name, shape in shapes.items()})


def _with_input_dims(model, dims: dict[str, list]):
    """A copy of ``model`` whose named graph inputs get these dims (ints: static, strings: symbols)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in m.graph.input:
        if vi.name not in dims:
            continue
        t = vi.type.tensor_type
        t.ClearField("shape")
        t.shape.SetInParent()
        for d in dims[vi.name]:
            if isinstance(d, str):
                t.shape.dim.add().dim_param = d
            else:
                t.shape.dim.add().dim_value = d
    return m


def _sym(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "x"


def view_as(array: np.ndarray, elem: str) -> np.ndarray:
    """Reinterpret an engine's output bits as ONNX element ``elem`` when the engine's ABI cannot
    name that type (IREE's signless integers, OpenVINO's bf16 read back as float16). Only a
    same-itemsize *view*: values are never converted, so wrong bits still show as a mismatch."""
    want = NUMPY_DTYPES.get(elem_of(elem))
    array = np.asarray(array)
    if want is None or array.dtype == want or want.kind == "O" or array.dtype.kind == "O":
        return array
    if array.dtype.itemsize != want.itemsize or array.dtype.kind not in "iubfV":
        return array
    return contiguous(array).view(want)


def contiguous(array) -> np.ndarray:
    """C-contiguous without promoting 0-d arrays to 1-d (np.ascontiguousarray does)."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else array.copy(order="C")


class CompiledPool:
    """A cap on compiled variants alive across all sessions of a backend (least recently used go
    first). Engines whose compiled models hold threads or big mappings (OpenVINO's CPU plugin)
    run out of resources ("Resource temporarily unavailable") when the worker keeps hundreds of
    sessions; an evicted variant is simply compiled again on its next use."""

    def __init__(self, cap: int = 64):
        from collections import OrderedDict

        self.cap = cap
        self._live: OrderedDict = OrderedDict()

    def touch(self, session, key) -> None:
        ident = (id(session), key)
        self._live[ident] = session
        self._live.move_to_end(ident)
        while len(self._live) > self.cap:
            (_, old_key), old = self._live.popitem(last=False)
            old._variants.pop(old_key, None)


class RankSpecializedSession:
    """A session that compiles ``model`` once per combination of input ranks."""

    def __init__(self, model, compile_fn: Callable[[Any, dict[str, np.ndarray]], Callable[[dict], list]],
                 max_variants: int = 16, pool: CompiledPool | None = None):
        self.model = model
        self._compile = compile_fn
        self._variants: dict[tuple, Any] = {}
        self._max = max_variants
        self._pool = pool
        self.inputs, self.input_order, self.output_elems = io_elems(model)

    def _key(self, feeds: dict) -> tuple:
        return tuple((n, np.ndim(feeds[n])) for n in self.input_order if n in feeds)

    def run(self, feeds: dict) -> list:
        key = self._key(feeds)
        entry = self._variants.get(key)
        if entry is None:
            if len(self._variants) >= self._max:
                self._variants.pop(next(iter(self._variants)))
            import time

            t0 = time.perf_counter()
            try:
                entry = ("ok", self._compile(with_ranks(self.model, dict(key)), feeds))
            except Exception as exc:  # noqa: BLE001 - remember compile failures for this rank combination too
                entry = ("failed", exc)
            STATS["compiles"] += 1
            STATS["compile_s"] += time.perf_counter() - t0
            self._variants[key] = entry
        if self._pool is not None and entry[0] == "ok":
            self._pool.touch(self, key)
        if entry[0] == "failed":
            raise entry[1]
        return entry[1](feeds)


class _BackendAPIRep:
    def __init__(self, session, names):
        self._session, self._names = session, names

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            feeds = dict(zip(self._names, inputs))
        return self._session.run(feeds)


class backend_api_prepare:
    """``prepare`` usable both ways: ``backend.prepare(model_bytes)`` (opkit protocol) and
    ``BackendClass.prepare(model_proto, device="CPU")`` (onnx Backend API, as repro.py calls it)."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj, cls):
        if obj is not None:
            return self.func.__get__(obj, cls)

        def prepare(model, device: str = "CPU", **kwargs):
            backend = cls()
            data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
            import onnx

            proto = onnx.load_from_string(bytes(data))
            inits = {t.name for t in proto.graph.initializer}
            names = [i.name for i in proto.graph.input if i.name not in inits]
            return _BackendAPIRep(self.func(backend, bytes(data)), names)

        return prepare


@contextlib.contextmanager
def model_file(data: bytes, suffix: str = ".onnx") -> Iterator[str]:
    """A path holding ``data`` for an engine that loads models only from a file (tract), that
    leaves nothing behind, even when the worker is killed: on Linux an anonymous memory file
    (``memfd_create``, read through /proc/self/fd), elsewhere a temporary file removed on exit."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("opkit-model", 0)
        try:
            _write_all(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    handle, path = tempfile.mkstemp(prefix="opkit-model-", suffix=suffix)
    try:
        _write_all(handle, data)
        os.close(handle)
        handle = -1
        yield path
    finally:
        if handle >= 0:
            os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
