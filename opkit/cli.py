"""The ``opkit`` command line.

Exit codes (every subcommand):
  0  success
  1  the command ran and found problems (spec diagnostics, generated files out of date,
     conformance failures)
  2  usage error (bad arguments, unknown backend or op, missing optional package)
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

from .core.errors import UsageError

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def _project(args: argparse.Namespace | None = None):
    """The project this command works on (activated in ``main``)."""
    from .core.project import active

    return getattr(args, "project", None) or active()


def _project_root(args: argparse.Namespace | None = None) -> str:
    return _project(args).root


def _specs_dir(args: argparse.Namespace) -> str:
    """The spec folder commands that write specs (import) write into."""
    project = _project(args)
    if not project.trees:
        raise UsageError("no spec folder of your own here: give --specs DIR, or add [tool.opkit] to "
                         "pyproject.toml (`opkit init` makes one)")
    return project.trees[0].specs


def _own_spec_dirs(args: argparse.Namespace) -> list[str]:
    """What validate checks by default: the project's spec folders, else opkit's built-in ones."""
    from .core.project import builtin_tree

    project = _project(args)
    return [t.specs for t in project.trees] or [builtin_tree().specs]


def _conflict_lines() -> list[str]:
    from .spec import catalog

    return [str(c) for c in catalog.conflicts()]


def _err(message: str) -> None:
    print(f"opkit: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# validate


def cmd_validate(args: argparse.Namespace) -> int:
    from .spec.load import load_specs, spec_files

    paths = args.paths or _own_spec_dirs(args)
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"no such file or folder: {path}")
    start = time.perf_counter()
    files = spec_files(paths)
    specs, diags = load_specs(paths)
    from .spec import catalog

    diags = list(diags) + catalog.unresolved_lowerings(specs)
    for diag in sorted(diags, key=lambda d: (d.location.file, d.location.line, d.location.col)):
        print(_relative(diag), flush=False)
    # a project op that silently shadows a built-in one is a spec error too
    conflicts = [c for c in catalog.conflicts() if not args.paths or any(
        os.path.abspath(c.mine.path).startswith(os.path.abspath(p)) for p in paths)]
    for conflict in conflicts:
        print(_relative(conflict))
    problems = len(diags) + len(conflicts)
    from .spec.lint import missing_rules

    warnings = missing_rules(specs)  # never an error: the spec loads, it only leaves users guessing
    if not args.quiet:
        for warning in warnings:
            print(_relative(warning))
    elapsed = time.perf_counter() - start
    versions = sum(len(s.versions) for s in specs)
    summary = (f"{len(files)} files, {len(specs)} ops, {versions} versions: "
               f"{problems} error{'s' if problems != 1 else ''}"
               + (f", {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "")
               + f" ({elapsed:.2f} s)")
    if not args.quiet or problems:
        print(summary, file=sys.stderr)
    return EXIT_PROBLEMS if problems else EXIT_OK


def _relative(diag) -> str:  # a Diagnostic or a line that starts with a path
    text = str(diag)
    cwd = os.getcwd() + os.sep
    return text[len(cwd):] if text.startswith(cwd) else text


# ---------------------------------------------------------------------------------------------
# import


def cmd_import(args: argparse.Namespace) -> int:
    from .commands.import_specs import IMPORTERS, import_specs, load_importer

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
    result, problems = import_specs(specs, _specs_dir(args), check=args.check, only=only)
    for diag in problems:
        print(_relative(diag))
    if problems:
        _err(f"{len({d.location.file for d in problems})} spec file(s) on disk do not load; they were left "
             "untouched so nothing hand-written is lost. Fix them and import again.")
    if args.check:
        _print_import_news(args, specs, only, {d.location.file for d in problems})
    verb = "would change" if args.check else "written"
    print(f"{len(specs)} ops from {args.source}: {len(result.written)} {verb}, {result.unchanged} unchanged",
          file=sys.stderr)
    if args.check and result.written:
        for path in result.written:
            print(f"out of date: {path}")
        return EXIT_PROBLEMS
    return EXIT_PROBLEMS if problems else EXIT_OK


def _import_examples(args: argparse.Namespace) -> int:
    from .commands.import_specs import import_examples

    if args.max_elements is not None and args.max_elements < 1:
        raise UsageError("--max-elements must be at least 1")
    try:
        result, found, problems = import_examples(_specs_dir(args), check=args.check,
                                                  only=set(args.op) if args.op else None,
                                                  max_elements=args.max_elements)
    except ImportError as exc:
        raise UsageError(f"importing onnx's node tests needs onnx: {exc}") from None
    for diag in problems:
        print(_relative(diag))
    if problems:
        _err(f"{len({d.location.file for d in problems})} spec file(s) on disk do not load; their examples were "
             "not imported. Fix them and import again.")
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
        return EXIT_PROBLEMS
    return EXIT_PROBLEMS if problems else EXIT_OK


def _print_import_news(args: argparse.Namespace, specs: list, only: set[str] | None, broken: set[str]) -> None:
    """What the installed registry adds, changes or removes, before the per-file lines."""
    from .importers.news import import_news, load_on_disk, render_news
    from .commands.import_specs import spec_path

    specs_dir = _specs_dir(args)
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


# ---------------------------------------------------------------------------------------------
# gen


def cmd_gen(args: argparse.Namespace) -> int:
    from .emit.write_generated import generate

    project = _project(args)
    require_own_specs(project, "generate")
    return generate(project, check=args.check, only=args.only, verbose=not args.quiet)


def require_own_specs(project, doing: str) -> None:
    """Commands that write generated files need specs of the project's own, never site-packages."""
    if not project.trees:
        raise UsageError(f"nothing to {doing}: no [tool.opkit] in a pyproject.toml here or above, and no --specs; "
                         "`opkit init` makes a project with one example spec")
    if not project.writable:
        raise UsageError(f"refusing to {doing} into opkit's installed package ({project.trees[0].specs}); "
                         "point --specs or [tool.opkit] at a folder of your own")
    conflicts = _conflict_lines()
    if conflicts:
        raise UsageError(conflicts[0] + (f" (and {len(conflicts) - 1} more; run `opkit validate`)"
                                         if len(conflicts) > 1 else ""))


# ---------------------------------------------------------------------------------------------


SPECS_HELP = ("a spec folder of your own (<domain>/<Op>.yaml inside; repeatable); replaces the [tool.opkit] "
              "`specs` of pyproject.toml. opkit's built-in specs are always seen too")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="opkit",
        description="Operator specs (specs/<domain>/<Op>.yaml) -> reference kernels, conformance tests, docs.",
        epilog="Exit codes: 0 ok, 1 problems found, 2 usage error. Run `opkit COMMAND --help` for details.",
    )
    parser.add_argument("--version", action="version", version=f"opkit {__version__}")
    parser.add_argument("--specs", action="append", metavar="DIR", help=SPECS_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # every subcommand takes --specs too (after its name), like the global option
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--specs", action="append", metavar="DIR", default=argparse.SUPPRESS, help=SPECS_HELP)
    sub.add_parser = functools.partial(sub.add_parser, parents=[common])

    p = sub.add_parser("validate", help="check spec files; print every diagnostic as PATH:LINE:COL: error: ...",
                       description="Load spec files and report every problem found, one per line, as "
                                   "PATH:LINE:COL: error: message. Exit 1 if there is any.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="spec files or folders (default: the specs/ tree)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing when there is no problem")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("import", help="import specs from onnx or onnxruntime schemas, or onnx's node tests as "
                                      "examples (merges, never clobbers)",
                       description="Write specs/<domain>/<Op>.yaml from a schema registry. Imported fields are "
                                   "refreshed; opkit extensions already in the files (semantics, kernels, "
                                   "examples, ...) are kept. `onnx-examples` writes onnx's node test cases into "
                                   "the `examples` of the specs already there, replacing what an earlier import "
                                   "wrote and keeping hand-written examples.")
    p.add_argument("source", choices=["onnx", "onnxruntime", "onnx-examples"],
                   help="onnx: onnx.defs (all domains); onnxruntime: the com.microsoft contrib schemas; "
                        "onnx-examples: onnx.backend.test.case.node")
    p.add_argument("--op", action="append", metavar="OP", help="import only this op (repeatable)")
    p.add_argument("--check", action="store_true", help="write nothing; print first what the installed "
                   "registry adds, changes or removes; exit 1 if specs/ would change")
    p.add_argument("--max-elements", type=int, default=None, metavar="N",
                   help="onnx-examples: leave out cases with more than N tensor elements in all (default 1024)")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("gen", help="generate kernels, tests, docs and the JSON Schema from the specs",
                       description="Run every emitter and write generated/ (and opkit/spec/schema.json). "
                                   "Files are only written when their content changes.")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if any generated file is missing, stale or out of date")
    p.add_argument("--only", action="append", metavar="EMITTER", help="run only this emitter (repeatable)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    p.set_defaults(func=cmd_gen)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Subcommands that live in their own modules (show/diff, test, docs), when present."""
    import importlib

    for module in ("opkit.commands.show", "opkit.commands.test", "opkit.commands.compare", "opkit.commands.docs",
                   "opkit.commands.init", "opkit.commands.fmt"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            continue
        yield mod.register


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    from .core.project import ConfigError, discover, using
    from .core.atomic_files import WriteError

    try:
        with using(discover(specs=args.specs or ())) as project:
            args.project = project
            return args.func(args)
    except (UsageError, ConfigError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except WriteError as exc:  # a full or read-only disk: nothing half-written was left behind
        _err(str(exc))
        return EXIT_PROBLEMS
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
