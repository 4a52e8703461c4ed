"""Every op the active project can see: its own spec trees, then opkit's built-in tree.

One lookup for the spec file and the generated kernel of ``domain::Op``, used by the kernel
registry, the conformance harness, ``show``, ``test`` and the generated tests, so an op a user
wrote in their own folder is found exactly like a built-in one.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from ..core.project import SpecTree, active


@dataclass(frozen=True)
class Entry:
    """One spec file and the tree it belongs to."""

    domain: str
    op: str
    path: str
    tree: SpecTree

    @property
    def key(self) -> str:
        return f"{self.domain}::{self.op}"

    @property
    def kernel_file(self) -> str:
        from ..core.naming import snake

        return os.path.join(self.tree.kernels, self.domain, f"{snake(self.op)}.py")


@dataclass(frozen=True)
class Conflict:
    """A project spec that redefines a built-in op without saying it overrides it."""

    mine: Entry
    builtin: Entry

    def __str__(self) -> str:
        return (f"{self.mine.path}:1:1: error: {self.mine.key} is already a built-in op ({self.builtin.path}); "
                f"rename it, or list \"{self.mine.key}\" under `overrides` in [tool.opkit] to replace it")


def _scan(tree: SpecTree) -> list[Entry]:
    if not os.path.isdir(tree.specs):
        return []
    found = []
    for domain in sorted(os.listdir(tree.specs)):
        folder = os.path.join(tree.specs, domain)
        if not os.path.isdir(folder) or domain.startswith((".", "_")):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                found.append(Entry(domain, name.rsplit(".", 1)[0], os.path.join(folder, name), tree))
    return found


@functools.lru_cache(maxsize=None)
def _index() -> tuple[dict[tuple[str, str], Entry], tuple[Conflict, ...]]:
    project = active()
    index: dict[tuple[str, str], Entry] = {}
    conflicts = []
    for tree in project.all_trees:  # the project's trees first: they win where they override
        for entry in _scan(tree):
            key = (entry.domain, entry.op)
            if key not in index:
                index[key] = entry
            elif tree.builtin and not index[key].tree.builtin and entry.key not in project.overrides:
                conflicts.append(Conflict(index[key], entry))
    return index, tuple(conflicts)


def clear_caches() -> None:
    _index.cache_clear()


def entries() -> list[Entry]:
    """Every visible op, sorted by (domain, op)."""
    index, _ = _index()
    return [index[k] for k in sorted(index)]


def conflicts() -> tuple[Conflict, ...]:
    return _index()[1]


def find(domain: str, op: str) -> Entry | None:
    from ..core.onnx_types import DEFAULT_DOMAIN

    return _index()[0].get((domain or DEFAULT_DOMAIN, op))


def project_entries() -> list[Entry]:
    """The ops of the project's own trees (what ``gen`` writes for)."""
    return [e for e in entries() if not e.tree.builtin or active().builtin]


def unresolved_lowerings(specs) -> list:
    """Diagnostics for lowerings whose ``to:`` names an op version no visible spec has (a typo, or a
    target that lives in neither the project nor opkit's built-in specs)."""
    from .diagnostics import Diagnostic
    from .load import load_spec_file

    problems = []
    for spec in specs:
        for version in spec.versions:
            for lowering in version.lowerings:
                domain, _, rest = lowering.to.partition("::")
                op, _, since = rest.rpartition("-")
                entry = find(domain, op) if op and since.isdigit() else None
                target = load_spec_file(entry.path)[0] if entry else None
                if target is None:
                    message = f"lowering {lowering.name}: no op {domain}::{op} in this project or opkit's built-in specs"
                elif target.version_at(int(since)) is None:
                    message = (f"lowering {lowering.name}: {domain}::{op} has no version in force at {since} "
                               f"(its versions: {', '.join(str(v.since) for v in target.versions)})")
                else:
                    continue
                if lowering.location is not None:
                    problems.append(Diagnostic(lowering.location, message))
    return problems
