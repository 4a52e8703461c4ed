"""``opkit diff OP V1 V2``: what changed between two versions of an operator (old -> new).

The op is found as ``opkit show`` finds it (only the files named ``<OP>.yaml`` are loaded).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.exit_codes import ExitCode
from ..core.errors import UsageError
from .show import SpecProblem, find_spec, resolve_version, visible_spec_files


def cmd_diff(args: argparse.Namespace) -> int:
    from ..spec.diff import diff_versions, render_diff_markdown, render_diff_text

    try:
        spec = find_spec(visible_spec_files(), args.op, args.domain)
    except SpecProblem as exc:
        print(f"opkit: {exc}", file=sys.stderr)
        return ExitCode.PROBLEMS
    if len(spec.versions) < 2:
        raise UsageError(f"{spec.name} ({spec.domain}) has only one version ({spec.versions[0].since}); "
                           "nothing to diff")
    old, new = resolve_version(spec, args.v1), resolve_version(spec, args.v2)
    if old.since > new.since:
        print(f"opkit: showing old -> new: {old.since} is newer than {new.since}, swapped", file=sys.stderr)
        old, new = new, old
    diff = diff_versions(old, new, op=spec.name, domain=spec.domain)
    render = render_diff_markdown if args.format == "markdown" else render_diff_text
    sys.stdout.write(render(diff))
    return ExitCode.OK


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("diff", help="what changed between two versions of an operator (old -> new)",
                              description="Field-level diff between two versions of an operator: doc, "
                                          "attributes, inputs, outputs and type constraints. V1 and V2 are "
                                          "opset versions (the version in force at each is used).")
    p.add_argument("op", metavar="OP", help="operator name, e.g. Clip")
    p.add_argument("v1", type=int, metavar="V1", help="old version")
    p.add_argument("v2", type=int, metavar="V2", help="new version")
    p.add_argument("--domain", metavar="D", help="domain (default: ai.onnx, else the first holding the op)")
    p.add_argument("--format", choices=("text", "markdown"), default="text", help="output format")
    p.set_defaults(func=cmd_diff)
