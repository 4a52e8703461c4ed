"""What the subcommands share about the project they work on: its spec folders, the refusal to
write into opkit's installed package, and how paths and errors are printed."""

from __future__ import annotations

import argparse
import os
import sys

from ..core.errors import UsageError


def active_project(args: argparse.Namespace | None = None):
    """The project this command works on (activated in ``opkit.cli.main``)."""
    from ..core.project import active

    return getattr(args, "project", None) or active()


def own_specs_dir(args: argparse.Namespace) -> str:
    """The spec folder commands that write specs (import) write into."""
    project = active_project(args)
    if not project.trees:
        raise UsageError("no spec folder of your own here: give --specs DIR, or add [tool.opkit] to "
                         "pyproject.toml (`opkit init` makes one)")
    return project.trees[0].specs


def own_spec_dirs(args: argparse.Namespace) -> list[str]:
    """What validate checks by default: the project's spec folders, else opkit's built-in ones."""
    from ..core.project import builtin_tree

    project = active_project(args)
    return [t.specs for t in project.trees] or [builtin_tree().specs]


def require_own_specs(project, doing: str) -> None:
    """Commands that write generated files need specs of the project's own, never site-packages."""
    if not project.trees:
        raise UsageError(f"nothing to {doing}: no [tool.opkit] in a pyproject.toml here or above, and no --specs; "
                         "`opkit init` makes a project with one example spec")
    if not project.writable:
        raise UsageError(f"refusing to {doing} into opkit's installed package ({project.trees[0].specs}); "
                         "point --specs or [tool.opkit] at a folder of your own")
    conflicts = conflict_lines()
    if conflicts:
        raise UsageError(conflicts[0] + (f" (and {len(conflicts) - 1} more; run `opkit validate`)"
                                         if len(conflicts) > 1 else ""))


def conflict_lines() -> list[str]:
    from ..spec import catalog

    return [str(c) for c in catalog.conflicts()]


def relative(diag) -> str:  # a Diagnostic or a line that starts with a path
    text = str(diag)
    cwd = os.getcwd() + os.sep
    return text[len(cwd):] if text.startswith(cwd) else text


def print_error(message: str) -> None:
    print(f"opkit: {message}", file=sys.stderr)
