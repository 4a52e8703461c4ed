"""YAML spec files -> ``OpSpec`` models, collecting every diagnostic with its location.

Two passes over each file: key/kind checks driven by ``fields.OBJECTS`` (unknown keys with a
did-you-mean hint, duplicate keys, missing keys, wrong kinds), then the semantic checks that need
the whole version in view (undefined type parameters, defaults of the wrong type, examples that do
not fit the declared types and ranks ...). Loading never raises for bad content: callers get the
model (or None) and the list of diagnostics.

This module holds the public entry points (one file, trees of files, the checks across files);
the passes live in located_values.py (pass 1, and the load context), build_model.py (pass 2),
embedded_python.py (rules, kernels, properties, lowerings and their Python) and example_values.py
(examples and attribute values).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .build_model import _build_spec
from .diagnostics import Diagnostic, SpecError
from .located_values import _Ctx
from .model import OpSpec
from .yamlsource import read_spec_bytes, read_yaml



def load_spec_file(path: str, data: bytes | None = None) -> tuple[OpSpec | None, list[Diagnostic]]:
    """Load one spec file. Returns (model or None, diagnostics)."""
    if data is None:
        try:
            data = read_spec_bytes(path)
        except OSError:
            pass  # read_yaml reports it
    node, diags = read_yaml(path, data)
    if node is None:
        return None, diags
    ctx = _Ctx(path, diags, lines=data.decode("utf-8", "replace").split("\n") if data is not None else [])
    spec = _build_spec(ctx, node)
    if ctx.diags:
        return (spec if spec is not None else None), ctx.diags
    return spec, []


# ---------------------------------------------------------------------------------------------
# trees of spec files


def spec_files(paths: Iterable[str]) -> list[str]:
    """Expand directories into their *.yaml files, sorted; files are kept as given."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith((".yaml", ".yml")))
        else:
            out.append(path)
    return out


def _file_keys(spec: OpSpec) -> tuple[tuple[str, ...], ...]:
    """What two ops of one project must not share: their spec file names ignoring case (macOS and
    Windows file systems ignore it), and the snake_case name of their generated modules
    (generated/kernels/<domain>/<snake>.py, generated/tests/...: 'GatherND' and 'Gather_ND' meet)."""
    from ..core.naming import snake  # the emitters' own rule

    domain = spec.domain.lower()
    return ("file", domain, spec.name.lower()), ("module", domain, snake(spec.name))


def load_specs(paths: Iterable[str]) -> tuple[list[OpSpec], list[Diagnostic]]:
    """Load many files; check that each (domain, op) is defined once, sits in its domain folder,
    and shares no file name with another op (see _file_keys)."""
    specs: list[OpSpec] = []
    diags: list[Diagnostic] = []
    seen: dict[tuple[str, str], OpSpec] = {}
    files: dict[tuple[str, ...], OpSpec] = {}
    paths = list(paths)
    roots = tuple(os.path.abspath(p) + os.sep for p in paths if os.path.isdir(p))
    for path in spec_files(paths):
        spec, file_diags = load_spec_file(path)
        diags.extend(file_diags)
        if spec is None or file_diags:
            continue
        parent = os.path.dirname(os.path.abspath(path))
        folder = os.path.basename(parent)
        key = (spec.domain, spec.name)
        # the layout is <spec folder>/<domain>/<Op>.yaml: checked below any folder given (whatever
        # its name), and for a file given on its own when its spec folder is called specs/
        in_domain_folder = (parent + os.sep).startswith(roots) and parent + os.sep not in roots
        if folder != spec.domain and (in_domain_folder or os.path.basename(os.path.dirname(parent)) == "specs"):
            diags.append(Diagnostic(spec.location, f"op {spec.name!r} of domain {spec.domain!r} is in folder "
                                                   f"{folder!r}; move it to "
                                                   f"{os.path.basename(os.path.dirname(parent))}/{spec.domain}/"))
        if key in seen:
            diags.append(Diagnostic(spec.location, f"{spec.domain}::{spec.name} is already defined in "
                                                   f"{seen[key].path}"))
            continue
        clash = next(((k, files[k]) for k in _file_keys(spec) if k in files), None)
        if clash is not None:
            (kind, _, shared), other = clash
            why = ("names that differ only in case are one file on case-insensitive file systems"
                   if kind == "file" else f"both generate the module {shared}.py")
            diags.append(Diagnostic(spec.location, f"{spec.domain}::{spec.name} clashes with "
                                                   f"{other.domain}::{other.name} ({other.path}): {why}; "
                                                   "rename one of them"))
            continue
        seen[key] = spec
        files.update(dict.fromkeys(_file_keys(spec), spec))
        specs.append(spec)
    return specs, diags


def load_specs_or_raise(paths: Iterable[str]) -> list[OpSpec]:
    specs, diags = load_specs(paths)
    if diags:
        raise SpecError(diags)
    return specs
