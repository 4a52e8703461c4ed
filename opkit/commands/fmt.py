"""``opkit fmt``: rewrite spec files in the canonical form.

    opkit fmt [PATH ...] [--check] [-q]

The canonical form is what ``opkit.spec.dump`` writes for the loaded spec (block style, fixed key
order, one wrapping rule): a spec that validates but is written another way (flow style, other key
order, other quoting) is rewritten to it, so diffs between versions of a spec show content only.

Safety: a file that does not load (a spec error) is reported and left alone; a file with YAML
comments is reported and left alone too, since the canonical form has no place for them (move
their text into a ``doc`` field); the rewritten text must load back to the same spec, or the file
is left alone and the command fails. Files are replaced atomically.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from ..core.exit_codes import ExitCode


@dataclass(frozen=True)
class Formatted:
    """One file's outcome: its canonical text, or why it has none."""

    path: str
    text: str | None  # the canonical text; None when ``problem`` says why not
    changed: bool = False
    problem: str | None = None


def comment_position(text: str) -> tuple[int, int] | None:
    """(line, column), 1-based, of the first YAML comment in ``text``, or None. A ``#`` inside a
    scalar (quoted, plain or a block scalar) is content, not a comment: positions are checked
    against the scanner's scalar tokens."""
    import yaml

    if "#" not in text:
        return None
    spans = []
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken):
                spans.append((token.start_mark.index, token.end_mark.index))
    except yaml.YAMLError:
        return None  # the loader reports the syntax error with its location
    spans.sort()
    i = 0
    for pos, char in enumerate(text):
        if char != "#":
            continue
        while i < len(spans) and spans[i][1] <= pos:
            i += 1
        if i < len(spans) and spans[i][0] <= pos < spans[i][1]:
            continue
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return line, col
    return None


def format_file(path: str) -> Formatted:
    """The canonical form of one spec file (pure: reads ``path``, writes nothing)."""
    from ..spec.dump import dump_spec
    from ..spec.load import load_spec_file

    try:
        with open(path, encoding="utf-8") as f:
            original = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        return Formatted(path, None, problem=f"{path}:1:1: error: cannot read: {exc}")
    spec, diags = load_spec_file(path)
    errors = [d for d in diags if getattr(d, "severity", "error") == "error"]
    if spec is None or errors:
        first = errors[0] if errors else None
        return Formatted(path, None, problem=str(first) if first else f"{path}:1:1: error: not a spec")
    where = comment_position(original)
    if where is not None:
        return Formatted(path, None, problem=f"{path}:{where[0]}:{where[1]}: error: a YAML comment, which the "
                                             "canonical form cannot keep: move its text into a doc field or remove "
                                             "it, then run opkit fmt again")
    canonical = dump_spec(spec)
    again, _ = load_spec_file(path, canonical.encode("utf-8"))
    if again is None or dump_spec(again) != canonical:  # the rewrite must load back to the same spec
        return Formatted(path, None, problem=f"{path}:1:1: error: the canonical form would change this spec's "
                                             "content (an opkit bug): the file is left as it is")
    return Formatted(path, canonical, changed=canonical != original)


def cmd_fmt(args: argparse.Namespace) -> int:
    from .common import own_spec_dirs, relative
    from ..core.errors import UsageError
    from ..spec.load import spec_files
    from ..core.atomic_files import write_files

    paths = args.paths or own_spec_dirs(args)
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"no such file or folder: {path}")
    results = [format_file(p) for p in spec_files(paths)]
    problems = [r for r in results if r.problem]
    changed = [r for r in results if r.changed]
    for r in problems:
        print(relative(r.problem))
    if args.check:
        for r in changed:
            print(relative(f"{r.path}:1:1: error: not in the canonical form (run `opkit fmt {r.path}`)"))
    else:
        write_files({r.path: r.text for r in changed})
    if not args.quiet or problems or (args.check and changed):
        verb = "would rewrite" if args.check else "rewrote"
        print(f"opkit fmt: {len(results)} files, {verb} {len(changed)}, {len(problems)} left alone with a problem",
              file=sys.stderr)
    return ExitCode.PROBLEMS if problems or (args.check and changed) else ExitCode.OK


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fmt", help="rewrite spec files in the canonical form (--check: only report)",
        description="Rewrite spec files in the canonical form `opkit import` and the dumper write (block style, "
                    "fixed key order), atomically. Files that do not load, or that hold YAML comments (which the "
                    "canonical form cannot keep), are reported as PATH:LINE:COL: error: ... and left alone. "
                    "Exit 1 if any file has a problem or, with --check, is not canonical.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="spec files or folders (default: the project's specs)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file is not canonical")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    p.set_defaults(func=cmd_fmt)
