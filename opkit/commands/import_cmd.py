"""``opkit import``: the command around the importing logic of ``import_specs``: arguments, the
per-file report, what the installed registry adds or removes (--check), and the exit code."""

from __future__ import annotations

import argparse
import os
import sys

from ..core.errors import UsageError
from ..core.exit_codes import ExitCode
from .common import own_specs_dir, print_error, relative


def cmd_import(args: argparse.Namespace) -> int:
    # imported here, not at the top: tests patch load_importer on import_specs
    from .import_specs import IMPORTERS, import_specs, load_importer

    if args.source == "onnx-examples":
        return _import_examples(args)
    if args.source not in IMPORTERS:
        raise UsageError(f"unknown import source {args.source!r}; choose from {', '.join(IMPORTERS)}")
    try:
        importer = load_importer(args.source)
        specs = importer()
    except ImportError as exc:
        raise UsageError(f"importing from {args.source} needs {IMPORTERS[args.source][1]}: {exc}") from None
    only = set(args.op) if args.op else None
    if only:
        missing = only - {s.name for s in specs}
        if missing:
            raise UsageError(f"{args.source} has no op named {', '.join(sorted(missing))}")
    result, problems = import_specs(specs, own_specs_dir(args), check=args.check, only=only)
    for diag in problems:
        print(relative(diag))
    if problems:
        print_error(f"{len({d.location.file for d in problems})} spec file(s) on disk do not load; they were left "
                    "untouched so nothing hand-written is lost. Fix them and import again.")
    if args.check:
        _print_import_news(args, specs, only, {d.location.file for d in problems})
    verb = "would change" if args.check else "written"
    print(f"{len(specs)} ops from {args.source}: {len(result.written)} {verb}, {result.unchanged} unchanged",
          file=sys.stderr)
    if args.check and result.written:
        for path in result.written:
            print(f"out of date: {path}")
        return ExitCode.PROBLEMS
    return ExitCode.PROBLEMS if problems else ExitCode.OK


def _import_examples(args: argparse.Namespace) -> int:
    from .import_specs import import_examples

    if args.max_elements is not None and args.max_elements < 1:
        raise UsageError("--max-elements must be at least 1")
    try:
        result, found, problems = import_examples(own_specs_dir(args), check=args.check,
                                                  only=set(args.op) if args.op else None,
                                                  max_elements=args.max_elements)
    except ImportError as exc:
        raise UsageError(f"importing onnx's node tests needs onnx: {exc}") from None
    for diag in problems:
        print(relative(diag))
    if problems:
        print_error(f"{len({d.location.file for d in problems})} spec file(s) on disk do not load; their examples "
                    "were not imported. Fix them and import again.")
    ops = len({(i.domain, i.op) for i in found.examples})
    print(f"{len(found.examples)} examples for {ops} ops from onnx {found.onnx_version}'s node tests; "
          f"{sum(found.skipped.values())} cases left out:", file=sys.stderr)
    for reason, count in found.skipped.most_common():
        print(f"  {count:5d}  {reason}", file=sys.stderr)
    verb = "would change" if args.check else "written"
    print(f"spec files: {len(result.written)} {verb}, {result.unchanged} unchanged", file=sys.stderr)
    if args.check and result.written:
        for path in result.written:
            print(f"out of date: {path}")
        return ExitCode.PROBLEMS
    return ExitCode.PROBLEMS if problems else ExitCode.OK


def _print_import_news(args: argparse.Namespace, specs: list, only: set[str] | None, broken: set[str]) -> None:
    """What the installed registry adds, changes or removes, before the per-file lines."""
    from ..importers.news import import_news, load_on_disk, render_news
    from .import_specs import spec_path

    specs_dir = own_specs_dir(args)
    # a spec whose file does not load is neither new nor changed: it is reported above
    specs = [s for s in specs if (not only or s.name in only) and spec_path(specs_dir, s) not in broken]
    on_disk = [s for s in load_on_disk(specs_dir, {s.domain for s in specs}) if not only or s.name in only]
    cwd = os.getcwd() + os.sep
    shown = specs_dir[len(cwd):] if specs_dir.startswith(cwd) else specs_dir
    command = " ".join([f"opkit import {args.source}"] + [f"--op {name}" for name in sorted(only or ())])
    news = import_news(args.source, specs, on_disk)
    # stdout stays empty when there is nothing to do, as it always was for a clean --check
    for line in render_news(news, shown, command):
        print(line, file=sys.stderr if news.up_to_date else sys.stdout)


def register(subparsers) -> None:
    p = subparsers.add_parser("import", help="import specs from onnx or onnxruntime schemas, or onnx's node tests "
                                             "as examples (merges, never clobbers)",
                              description="Write specs/<domain>/<Op>.yaml from a schema registry. Imported fields "
                                          "are refreshed; opkit extensions already in the files (semantics, "
                                          "kernels, examples, ...) are kept. `onnx-examples` writes onnx's node "
                                          "test cases into the `examples` of the specs already there, replacing "
                                          "what an earlier import wrote and keeping hand-written examples.")
    p.add_argument("source", choices=["onnx", "onnxruntime", "onnx-examples"],
                   help="onnx: onnx.defs (all domains); onnxruntime: the com.microsoft contrib schemas; "
                        "onnx-examples: onnx.backend.test.case.node")
    p.add_argument("--op", action="append", metavar="OP", help="import only this op (repeatable)")
    p.add_argument("--check", action="store_true", help="write nothing; print first what the installed "
                   "registry adds, changes or removes; exit 1 if specs/ would change")
    p.add_argument("--max-elements", type=int, default=None, metavar="N",
                   help="onnx-examples: leave out cases with more than N tensor elements in all (default 1024)")
    p.set_defaults(func=cmd_import)
