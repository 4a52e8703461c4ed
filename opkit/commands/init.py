"""``opkit init``: make a folder an opkit project with one example spec.

    opkit init [DIR] [--domain my.ops] [--op ScaledTanh]

Writes (or adds to) ``DIR/pyproject.toml`` a ``[tool.opkit]`` table and ``DIR/specs/<domain>/<Op>.yaml``,
an example spec that validates, generates and passes ``opkit test --backend reference`` as written.
Never overwrites: an existing ``[tool.opkit]`` table or spec file is an error (exit 2).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from ..core.exit_codes import ExitCode

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
DOMAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*\Z")
TABLE = """\
# opkit: your operator specs live in `specs`, what `opkit gen` derives from them in `generated`.
# Every key is described in opkit's docs (install.md, "The [tool.opkit] table").
[tool.opkit]
specs = ["specs"]
generated = "generated"
"""


def render_example_spec(domain: str, op: str) -> str:
    """The example spec, for ``domain::op`` (pure: the template's text with the names filled in)."""
    import jinja2

    loader = jinja2.PackageLoader("opkit", "templates/init")
    env = jinja2.Environment(loader=loader, keep_trailing_newline=True, autoescape=False,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("ScaledTanh.yaml.j2").render(domain=domain, op=op)


def cmd_init(args: argparse.Namespace) -> int:
    from ..spec import catalog
    from ..core.errors import UsageError
    from ..core.project import read_config
    from ..core.atomic_files import write_files

    if not IDENTIFIER.match(args.op):
        raise UsageError(f"--op {args.op!r}: an op name is an identifier (letters, digits, _), e.g. ScaledTanh")
    if not DOMAIN.match(args.domain):
        raise UsageError(f"--domain {args.domain!r}: a domain is dotted names, e.g. my.ops or com.example")
    builtin = catalog.find(args.domain, args.op)
    if builtin is not None and builtin.tree.builtin:
        raise UsageError(f"{args.domain}::{args.op} is a built-in op ({builtin.path}); choose another --op or --domain")
    folder = os.path.abspath(args.dir)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"{args.dir} exists and is not a folder")
    config = os.path.join(folder, "pyproject.toml")
    spec = os.path.join(folder, "specs", args.domain, f"{args.op}.yaml")
    files = {}
    if os.path.exists(config):
        if read_config(config) is not None:
            raise UsageError(f"{config} already has a [tool.opkit] table: this folder is an opkit project")
        with open(config, encoding="utf-8") as fh:
            text = fh.read()
        files[config] = text + ("" if text.endswith("\n") or not text else "\n") + "\n" + TABLE
    else:
        files[config] = TABLE
    if os.path.exists(spec):
        raise UsageError(f"{spec} exists; not overwriting it")
    files[spec] = render_example_spec(args.domain, args.op)
    ignore = os.path.join(folder, ".gitignore")
    if not os.path.exists(ignore):  # opkit's caches and outputs that are not sources
        files[ignore] = "# opkit: caches, repro bundles, the gen lock; the built site\n.opkit/\nbuild/\n"
    write_files(files)
    shown = os.path.relpath(folder) if folder != os.getcwd() else "."
    print(f"opkit init: wrote {os.path.relpath(spec, folder)} and [tool.opkit] in {os.path.relpath(config, folder)}"
          f" ({shown})", file=sys.stderr)
    cd = f"cd {shown} && " if shown != "." else ""
    print("next:\n"
          f"  {cd}opkit validate                  # check the spec\n"
          "  opkit gen                       # kernel, tests and docs page into generated/\n"
          f"  opkit test --backend reference --op {args.domain}::{args.op}\n"
          f"  opkit show {args.domain}::{args.op}")
    return ExitCode.OK


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "init", help="make a folder an opkit project with one example spec",
        description="Add a [tool.opkit] table to DIR/pyproject.toml (creating it if needed) and write an example "
                    "spec, DIR/specs/<domain>/<Op>.yaml, that validates, generates and passes `opkit test "
                    "--backend reference` as written. Never overwrites anything (exit 2 instead).")
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the project folder (default: here)")
    p.add_argument("--domain", default="my.ops", help="the example op's domain (default my.ops)")
    p.add_argument("--op", default="ScaledTanh", help="the example op's name (default ScaledTanh)")
    p.set_defaults(func=cmd_init)
