"""``opkit gen``: run every emitter and write the generated files of the project."""

from __future__ import annotations

import argparse

from .common import active_project, require_own_specs


def cmd_gen(args: argparse.Namespace) -> int:
    from ..emit.write_generated import generate

    project = active_project(args)
    require_own_specs(project, "generate")
    return generate(project, check=args.check, only=args.only, verbose=not args.quiet)


def register(subparsers) -> None:
    p = subparsers.add_parser("gen", help="generate kernels, tests, docs and the JSON Schema from the specs",
                              description="Run every emitter and write generated/ (and opkit/spec/schema.json). "
                                          "Files are only written when their content changes.")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if any generated file is missing, stale or out of date")
    p.add_argument("--only", action="append", metavar="EMITTER", help="run only this emitter (repeatable)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    p.set_defaults(func=cmd_gen)
