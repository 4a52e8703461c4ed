"""``opkit validate``: load spec files and print every problem as PATH:LINE:COL: error: ...."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..core.errors import UsageError
from ..core.exit_codes import ExitCode
from .common import own_spec_dirs, relative


def cmd_validate(args: argparse.Namespace) -> int:
    from ..spec.load import load_specs, spec_files

    paths = args.paths or own_spec_dirs(args)
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"no such file or folder: {path}")
    start = time.perf_counter()
    files = spec_files(paths)
    specs, diags = load_specs(paths)
    from ..spec import catalog

    diags = list(diags) + catalog.unresolved_lowerings(specs)
    for diag in sorted(diags, key=lambda d: (d.location.file, d.location.line, d.location.col)):
        print(relative(diag), flush=False)
    # a project op that silently shadows a built-in one is a spec error too
    conflicts = [c for c in catalog.conflicts() if not args.paths or any(
        os.path.abspath(c.mine.path).startswith(os.path.abspath(p)) for p in paths)]
    for conflict in conflicts:
        print(relative(conflict))
    problems = len(diags) + len(conflicts)
    from ..spec.lint import missing_rules

    warnings = missing_rules(specs)  # never an error: the spec loads, it only leaves users guessing
    if not args.quiet:
        for warning in warnings:
            print(relative(warning))
    elapsed = time.perf_counter() - start
    versions = sum(len(s.versions) for s in specs)
    summary = (f"{len(files)} files, {len(specs)} ops, {versions} versions: "
               f"{problems} error{'s' if problems != 1 else ''}"
               + (f", {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "")
               + f" ({elapsed:.2f} s)")
    if not args.quiet or problems:
        print(summary, file=sys.stderr)
    return ExitCode.PROBLEMS if problems else ExitCode.OK


def register(subparsers) -> None:
    p = subparsers.add_parser("validate", help="check spec files; print every diagnostic as PATH:LINE:COL: error: ...",
                              description="Load spec files and report every problem found, one per line, as "
                                          "PATH:LINE:COL: error: message. Exit 1 if there is any.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="spec files or folders (default: the specs/ tree)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing when there is no problem")
    p.set_defaults(func=cmd_validate)
