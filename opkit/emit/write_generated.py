"""``opkit gen``: load the project's specs, run every emitter, write (or check) the results.

Emitters name their outputs relative to a project root with ``generated/`` as the generated
folder; here that folder is mapped onto the project's ``generated`` setting. A user project gets
the files of its own ops only (kernels, tests, pages, its operator index and changelog); the
files that describe opkit itself (the JSON Schema, the coverage and scoreboard pages) are written
only in opkit's own checkout.

Every emitter runs first (a broken committed report stops ``gen`` before anything is written, with
one line naming the file); then the files are written under a lock, ``<root>/.opkit/gen.lock``, so
two ``opkit gen`` in one project run one after the other. Paths resolving outside the generated
folder (or, in opkit's checkout, the project root) are refused. Problems in the project's files
(specs, reports, the disk) exit 1 with one line, never a traceback.
"""

from __future__ import annotations

import os
import sys
import time

from . import GenContext, emitters
from ..core.jsonfiles import JSONFileError
from ..core.project import Project
from ..spec.load import load_specs
from ..core.atomic_files import WriteError, check_paths, locked, write_files

GENERATED = "generated/"
# emitters that describe opkit itself (or reproduce ONNX's own changelog), not a project's ops
BUILTIN_ONLY = frozenset({"json-schema", "coverage", "scoreboard", "changelog"})
# the root page of a project's own site (opkit's site has a hand-written one)
PROJECT_ONLY = frozenset({"site_index"})


def emitters_for(project: Project) -> list:
    """The emitters that write files for ``project``."""
    skip = PROJECT_ONLY if project.builtin else BUILTIN_ONLY
    return [e for e in emitters() if e[0] not in skip]


def _target(project: Project, path: str) -> str | None:
    """Where an emitter's ``path`` goes in ``project`` (None: not this project's to write)."""
    if path.startswith(GENERATED):
        return os.path.join(project.generated, *path[len(GENERATED):].split("/"))
    return os.path.join(project.root, path) if project.builtin else None


def allowed_roots(project: Project) -> tuple[str, ...]:
    """The folders ``gen`` may write in: the generated folder; in opkit's own checkout also the
    project root (opkit/spec/schema.json). The writer refuses any path resolving elsewhere."""
    return (project.generated, project.root) if project.builtin else (project.generated,)


def lock_path(project: Project) -> str:
    """The lock file that serializes ``opkit gen`` runs in one project (``.opkit/`` holds what
    opkit keeps per checkout, like repro bundles)."""
    return os.path.join(project.root, ".opkit", "gen.lock")


def generate(project: Project, *, check: bool = False, only: list[str] | None = None,
             verbose: bool = True) -> int:
    start = time.perf_counter()
    specs, diags = load_specs([t.specs for t in project.trees])
    if diags:
        for diag in diags:
            print(diag)
        print(f"opkit gen: {len(diags)} spec error(s); nothing generated (run `opkit validate`)", file=sys.stderr)
        return 1
    ctx = GenContext(tuple(specs), project.root)
    selected = emitters_for(project)
    if only:
        known = {name for name, _, _ in selected}
        unknown = set(only) - known
        if unknown:
            print(f"opkit gen: unknown emitter(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}",
                  file=sys.stderr)
            return 2
        selected = [e for e in selected if e[0] in only]
    # 1. run the emitters: pure, they only read specs and committed reports. A broken input stops
    # here, before anything is written.
    roots = allowed_roots(project)
    planned = []
    for name, emit, owned in selected:
        t0 = time.perf_counter()
        try:
            out = emit(ctx)
        except JSONFileError as exc:  # PATH:LINE:COL: not valid JSON (...): run ... again or delete it
            print(exc, file=sys.stderr)
            return 1
        files = {}
        for path, text in out.items():
            target = _target(project, path)
            if target is not None:
                files[target] = text
        managed = tuple(t for t in (_target(project, d) for d in owned) if t is not None)
        try:  # defense in depth behind spec-name validation: nothing is written if any path escapes
            check_paths(files, roots, folders=managed)
        except WriteError as exc:
            print(f"opkit gen: {exc} (emitter {name}); nothing written", file=sys.stderr)
            return 1
        planned.append((name, files, managed, time.perf_counter() - t0))
    # 2. write (or compare), one gen at a time in a project: a second one waits for the first
    problems = 0
    try:
        with locked(lock_path(project), shared=check):
            for name, files, managed, took in planned:
                t0 = time.perf_counter()
                result = write_files(files, check=check, managed_dirs=managed, roots=roots)
                changed = list(result.written) + list(result.stale)
                if check and changed:
                    problems += len(changed)
                    for path in result.written:
                        print(f"out of date: {os.path.relpath(path, project.root)} (emitter {name})")
                    for path in result.stale:
                        print(f"stale: {os.path.relpath(path, project.root)} (no spec produces it any more)")
                if verbose:
                    verb = "out of date" if check else "written"
                    print(f"  {name:<14} {len(files):>5} files, {len(result.written):>4} {verb}, "
                          f"{len(result.stale)} stale  ({took + time.perf_counter() - t0:.2f} s)", file=sys.stderr)
    except WriteError as exc:
        print(f"opkit gen: {exc}", file=sys.stderr)
        return 1
    if verbose or problems:
        state = f"{problems} file(s) out of date; run `opkit gen`" if problems else "up to date" if check else "done"
        print(f"opkit gen: {len(specs)} specs, {state} ({time.perf_counter() - start:.2f} s)", file=sys.stderr)
    return 1 if problems else 0


def stale_kernels(project: Project, specs: list) -> list[str]:
    """Project ops among ``specs`` whose generated kernel file is missing or older than the spec:
    testing them would test yesterday's kernel (or none), so ``opkit test`` asks for ``opkit gen``."""
    from ..spec import catalog
    from . import kernels

    # the catalogue knows which tree each op comes from (opkit's checkout: all built-in, checked by gen --check)
    mine = [s for s in specs if (entry := catalog.find(s.domain, s.name)) is not None and not entry.tree.builtin]
    if not mine:
        return []
    files = {_target(project, path): text for path, text in kernels.emit(GenContext(tuple(mine), project.root)).items()}
    return [os.path.relpath(path, project.root) for path in write_files(files, check=True).written]
