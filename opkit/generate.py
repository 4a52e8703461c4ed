"""``opkit gen``: load specs, run every emitter, write (or check) the results."""

from __future__ import annotations

import os
import sys
import time

from .emit import GenContext, emitters
from .spec.load import load_specs
from .writer import write_files


def generate(root: str, specs_dir: str, *, check: bool = False, only: list[str] | None = None,
             verbose: bool = True) -> int:
    start = time.perf_counter()
    specs, diags = load_specs([specs_dir])
    if diags:
        for diag in diags:
            print(diag)
        print(f"opkit gen: {len(diags)} spec error(s); nothing generated (run `opkit validate`)", file=sys.stderr)
        return 1
    ctx = GenContext(tuple(specs), root)
    selected = emitters()
    if only:
        known = {name for name, _, _ in selected}
        unknown = set(only) - known
        if unknown:
            print(f"opkit gen: unknown emitter(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}",
                  file=sys.stderr)
            return 2
        selected = [e for e in selected if e[0] in only]
    problems = 0
    for name, emit, owned in selected:
        t0 = time.perf_counter()
        files = {os.path.join(root, path): text for path, text in emit(ctx).items()}
        result = write_files(files, check=check, managed_dirs=tuple(os.path.join(root, d) for d in owned))
        changed = list(result.written) + list(result.stale)
        if check and changed:
            problems += len(changed)
            for path in result.written:
                print(f"out of date: {os.path.relpath(path, root)} (emitter {name})")
            for path in result.stale:
                print(f"stale: {os.path.relpath(path, root)} (no spec produces it any more)")
        if verbose:
            verb = "out of date" if check else "written"
            print(f"  {name:<14} {len(files):>5} files, {len(result.written):>4} {verb}, "
                  f"{len(result.stale)} stale  ({time.perf_counter() - t0:.2f} s)", file=sys.stderr)
    if verbose or problems:
        state = f"{problems} file(s) out of date; run `opkit gen`" if problems else "up to date" if check else "done"
        print(f"opkit gen: {len(specs)} specs, {state} ({time.perf_counter() - start:.2f} s)", file=sys.stderr)
    return 1 if problems else 0
