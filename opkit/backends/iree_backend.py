"""IREE as a conformance backend: ``pip install 'opkit-onnx[iree]'`` (iree-base-compiler + iree-base-runtime).

Pipeline per model: ONNX -> ``iree.compiler.extras.onnx_importer`` (torch-mlir's ONNX importer,
the same code as ``iree-import-onnx``) -> ``iree-compile`` for the ``llvm-cpu`` target (host CPU)
-> a VM module run on the ``local-task`` CPU driver.

Compiling costs ~0.8 s per model, so compiled modules are cached three ways: the runner's worker
keeps one session per model signature; a session keeps one module per combination of input ranks
(the importer needs ranked inputs; dims stay dynamic, so one module serves every shape of a rank);
and compiled ``.vmfb`` files are cached on disk, keyed by a hash of the imported MLIR, the compile
flags and the compiler version (``$OPKIT_CACHE_DIR/iree``, default ``~/.cache/opkit/iree``; option
``cache_dir``, ``cache_dir=""`` turns it off).

Compile flags opkit sets: ``--iree-llvmcpu-target-cpu=host``, and every input type conversion off,
so that each type is computed at its own width (``describe()["precision"]``):
``--iree-input-demote-f64-to-f32=false`` (on by default in 3.13: a float64 model then fails at run
time, "buffer view byte length 16 exceeds backing buffer byte length 8"),
``--iree-input-demote-i64-to-i32=false`` and ``--iree-input-demote-f32-to-f16=false`` (off by
default; said explicitly), ``--iree-input-promote-f16-to-f32=false`` and
``--iree-input-promote-bf16-to-f32=false`` (off by default: the narrow floats are computed as
such, not in float32 and rounded back).

The importer and iree-compile are the converter (``converter``): a model either cannot translate
(an importer error, a compile error, a compiler crash) is ``ConversionFailed``, outcome
*unconverted*, never charged to IREE's runtime; what fails as the runtime loads or runs the compiled
module is the runtime's. IREE has no string tensors: string models are *unsupported* up front.

IREE's ABI is signless: uint8..uint64 results come back as int8..int64 arrays holding the right
bits; opkit views them as the declared ONNX type (no value conversion), see ``view_as``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading

import numpy as np

from ._runtime_common import (
    RankSpecializedSession,
    backend_api_prepare,
    contiguous,
    io_elems,
    one_line,
    require,
    view_as,
)
from .base import BackendBase, ConversionFailed, Unsupported

FLAGS = ("--iree-llvmcpu-target-cpu=host", "--iree-input-demote-f64-to-f32=false",
         "--iree-input-demote-i64-to-i32=false", "--iree-input-demote-f32-to-f16=false",
         "--iree-input-promote-f16-to-f32=false", "--iree-input-promote-bf16-to-f32=false")
PRECISION = ("each type at its own width: no f64->f32, i64->i32 or f32->f16 demotion and no f16/bf16->f32 "
             "promotion (compile flags)")
IMPORTER, COMPILER = "iree-import-onnx", "iree-compile"

_UNSUPPORTED = re.compile(
    r"unimplemented|failed to legalize operation 'torch\.operator'|failed to legalize|"
    r"conversion of dtype|not supported|unsupported|No importer for|is not a supported", re.IGNORECASE)


class IreeError(RuntimeError):
    pass


def _default_cache() -> str:
    root = os.environ.get("OPKIT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "opkit")
    return os.path.join(root, "iree")


class IreeBackend(BackendBase):
    name = "iree"
    max_ir_version = 13  # the importer reads IR 3..14 (tested); 13 keeps models identical to onnxruntime's
    max_ai_onnx_opset = 28  # loads opsets 7..28 (tested)
    converter = f"{IMPORTER} + {COMPILER}"

    def __init__(self, cache_dir: str | None = None, driver: str = "local-task"):
        compiler, runtime, tools = require("iree", "iree", "iree.compiler", "iree.runtime", "iree.compiler.tools")
        import onnx
        from iree.compiler.extras import onnx_importer
        from iree.compiler.ir import Context

        self._compiler, self._rt, self._tools = compiler, runtime, tools
        self._importer, self._Context = onnx_importer, Context
        self._onnx = onnx
        self.driver = driver
        self._config = runtime.Config(driver)
        self.cache_dir = _default_cache() if cache_dir is None else cache_dir
        self._lock = threading.Lock()
        self.stats = {"compiled": 0, "disk_hits": 0, "compile_s": 0.0}

    def version(self) -> str:
        from importlib.metadata import version

        try:
            return version("iree-base-compiler")
        except Exception:  # noqa: BLE001
            return "unknown"

    def converter_version(self) -> str:
        return self.version()  # the importer and iree-compile ship in iree-base-compiler

    def describe(self) -> dict:
        from importlib.metadata import version

        try:
            runtime = version("iree-base-runtime")
        except Exception:  # noqa: BLE001
            runtime = "unknown"
        return {"name": self.name, "version": self.version(), "runtime": runtime, "target": "llvm-cpu",
                "driver": self.driver, "compile_flags": list(FLAGS), "disk_cache": bool(self.cache_dir),
                "precision": PRECISION}


    # -- compile
    def _import(self, model) -> str:
        onnx = self._onnx
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001, S110 - the importer copes with missing result shapes
            pass
        context = self._Context()
        info = self._importer.ModelInfo(model)
        module = info.create_module(context=context).operation
        imp = self._importer.NodeImporter.define_function(info.main_graph, module)
        imp.import_all()
        module.verify()
        return module.get_asm(assume_verified=True)

    def _vmfb(self, asm: str) -> bytes:
        import time

        key = hashlib.sha256("\0".join((asm, *FLAGS, self.version())).encode()).hexdigest()[:32]
        path = os.path.join(self.cache_dir, key[:2], key + ".vmfb") if self.cache_dir else None
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                self.stats["disk_hits"] += 1
                return f.read()
        t0 = time.perf_counter()
        try:
            data = self._tools.compile_str(asm, input_type="onnx", target_backends=["llvm-cpu"],
                                           extra_args=list(FLAGS))
        except self._tools.CompilerToolError as exc:  # a crash too: the compiler's, not the runtime's
            raise ConversionFailed(COMPILER, _compile_message(exc), self.version()) from None
        finally:
            self.stats["compile_s"] += time.perf_counter() - t0
        self.stats["compiled"] += 1
        if path:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except OSError:
                pass
        return data

    def _compile(self, model, feeds):
        rt = self._rt
        try:
            asm = self._import(model)
        except Exception as exc:  # noqa: BLE001 - importer failures: the op or type has no import
            raise self.conversion_failed(exc, IMPORTER) from None
        vmfb = self._vmfb(asm)
        ctx = rt.SystemContext(config=self._config)
        ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
        func = ctx.modules.module[model.graph.name]
        inits = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in inits]
        out_elems = [e for e in _out_elems(model)]

        def run(feeds):
            args = [contiguous(feeds[n]) for n in names if n in feeds]
            try:
                result = func(*args)
            except Exception as exc:  # noqa: BLE001
                raise IreeError(one_line(str(exc))) from None
            if not isinstance(result, (tuple, list)):
                result = [result]
            outs = []
            for value, elem in zip(result, out_elems):
                arr = value.to_host() if hasattr(value, "to_host") else np.asarray(value)
                outs.append(view_as(np.array(arr, copy=True), elem))
            return outs

        return run

    @backend_api_prepare
    def prepare(self, model_bytes: bytes):
        model = self._onnx.load_from_string(model_bytes)
        ins, _, outs = io_elems(model)
        if "string" in set(ins.values()) | set(outs):  # the runtime's lack, not a failure to convert
            raise Unsupported("IREE has no string tensors")
        return RankSpecializedSession(model, self._compile)

    def is_unsupported(self, exc: BaseException) -> bool:
        if isinstance(exc, (Unsupported, NotImplementedError)):
            return True
        text = str(exc)
        if "Error code: -" in text:  # the compiler crashed (signal): a bug, not a refusal
            return False
        return bool(_UNSUPPORTED.search(text))


def _out_elems(model) -> list[str]:
    from ._runtime_common import elem_name

    return [elem_name(vi.type.tensor_type.elem_type) for vi in model.graph.output]


def _compile_message(exc) -> str:
    text = str(exc)
    code = re.search(r"Error code: (-?\d+)", text)
    diags = []
    for line in text.splitlines():
        line = line.strip()
        if "error:" in line and line not in diags:
            diags.append(line.replace("<unknown>:0: ", ""))
    # (the words follow the converter's label, "iree-compile 3.13.0: crashed ...")
    if code and code.group(1).startswith("-"):
        return (f"crashed (Error code: {code.group(1)}, signal {code.group(1)[1:]})"
                + (": " + " | ".join(diags[:3]) if diags else ""))
    return "failed: " + (" | ".join(diags[:4]) if diags else one_line(text, 400))
