"""``opkit import``: write importer output into specs/, merging with what is already there."""

from __future__ import annotations

import os
from collections.abc import Callable

from .importers.merge import merge_spec
from .spec.diagnostics import Diagnostic
from .spec.dump import dump_spec
from .spec.load import load_spec_file
from .spec.model import OpSpec
from .writer import WriteResult, write_files

IMPORTERS: dict[str, tuple[str, str]] = {
    # name -> (module:function, what it needs installed)
    "onnx": ("opkit.importers.onnx_defs:import_onnx", "onnx"),
    "onnxruntime": ("opkit.importers.onnxruntime:import_onnxruntime", "onnxruntime (pip install 'opkit[ort]')"),
}


def spec_path(specs_dir: str, spec: OpSpec) -> str:
    return os.path.join(specs_dir, spec.domain, f"{spec.name}.yaml")


def load_importer(name: str) -> Callable[[], list[OpSpec]]:
    import importlib

    target, _needs = IMPORTERS[name]
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def import_specs(specs: list[OpSpec], specs_dir: str, *, check: bool = False,
                 only: set[str] | None = None) -> tuple[WriteResult, list[Diagnostic]]:
    """Merge ``specs`` into ``specs_dir``. A spec file on disk that does not load is left alone
    (its hand-written parts would be lost) and reported."""
    files: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for spec in specs:
        if only and spec.name not in only:
            continue
        path = spec_path(specs_dir, spec)
        old = None
        if os.path.exists(path):
            old, diags = load_spec_file(path)
            if diags:
                problems.extend(diags)
                continue
        files[path] = dump_spec(merge_spec(spec, old))
    return write_files(files, check=check), problems
