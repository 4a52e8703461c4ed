"""``opkit docs``: regenerate the docs pages from the specs, then build the Sphinx site.

    opkit docs [--output DIR] [--jobs N] [--no-gen] [--builder html]

Runs the documentation emitters (what ``opkit gen`` would write under generated/docs and the JSON
Schema they read), then ``sphinx-build -W`` (warnings are errors), and prints where the site is.
In opkit's checkout the site is docs/ (guides around the generated pages) built into
docs/_build/html; in a project of your own it is the project's generated pages, built into the
``docs`` folder of ``[tool.opkit]`` (default build/docs), with no conf.py needed. Exit 2 when Sphinx or the theme is missing (the
``docs`` extra), 1 when the build fails.
"""

from __future__ import annotations

from ..core.distribution import pip_install

import argparse
import importlib.util
import os
import subprocess
import sys
import time

from ..core.exit_codes import ExitCode

DOCS_EMITTERS = ("json-schema", "changelog", "operator_index", "docs_pages", "coverage", "scoreboard", "site_index")
NEEDED = (("sphinx", "sphinx"), ("myst_parser", "myst-parser"), ("furo", "furo"))


def missing_packages() -> list[str]:
    return [dist for module, dist in NEEDED if importlib.util.find_spec(module) is None]


def cmd_docs(args: argparse.Namespace) -> int:
    from .common import active_project, require_own_specs
    from ..core.errors import UsageError

    missing = missing_packages()
    if missing:
        raise UsageError(f"building the docs needs {', '.join(missing)}: {pip_install('docs')}")
    project = active_project(args)
    if project.builtin:
        # opkit's own site: the hand-written guides in docs/ around the generated pages
        source = os.path.join(project.root, "docs")
        if not os.path.exists(os.path.join(source, "conf.py")):
            raise UsageError(f"no Sphinx project at {source} (docs/conf.py is missing)")
        config = ["-d", os.path.join(source, "_build", "doctrees")]
        output = os.path.abspath(args.output or os.path.join(source, "_build", args.builder))
    else:
        # a project's site: its generated pages, with Sphinx settings given on the command line so
        # the project needs no conf.py of its own
        require_own_specs(project, "document")
        source = os.path.join(project.generated, "docs")
        title = f"{os.path.basename(project.root)} operators"
        config = ["-C", "-d", os.path.join(project.root, ".opkit", "doctrees"),
                  "-D", "extensions=myst_parser,opkit.core.sphinx_safe", "-D", "html_theme=furo", "-D", "root_doc=index",
                  "-D", f"project={title}", "-D", f"html_title={title}", "-D", "smartquotes=0",
                  "-D", "suppress_warnings=myst.header", "-D", "html_copy_source=0", "-D", "html_show_sourcelink=0"]
        output = os.path.abspath(args.output or project.docs)

    if not args.no_gen:
        from ..emit.write_generated import emitters_for, generate

        known = {name for name, _, _ in emitters_for(project)}
        only = [name for name in DOCS_EMITTERS if name in known]
        status = generate(project, only=only, verbose=not args.quiet)
        if status:
            return status

    jobs = str(args.jobs) if args.jobs else "auto"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-j", jobs, "-b", args.builder,
               *config, source, output]
    if args.quiet:
        command.insert(3, "-q")
    if args.fresh:
        command.insert(3, "-E")
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project.root)
    elapsed = time.perf_counter() - start
    if done.returncode:
        print(f"opkit docs: sphinx-build failed (exit {done.returncode}) after {elapsed:.1f} s", file=sys.stderr)
        return ExitCode.PROBLEMS
    index = os.path.join(output, "index.html")
    print(f"opkit docs: built in {elapsed:.1f} s: {index if os.path.exists(index) else output}")
    return ExitCode.OK


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "docs", help="regenerate the docs pages and build the HTML site (needs the docs extra)",
        description="Write the generated docs pages (as `opkit gen` does), then build the Sphinx site with "
                    "warnings as errors, and print where it is: in a project of your own, a site of its ops "
                    "(no conf.py needed) in the [tool.opkit] `docs` folder; in opkit's checkout, docs/. Exit 2 "
                    "if Sphinx, myst-parser or furo is missing (pip install 'opkit-onnx[docs]').")
    p.add_argument("--output", "-o", metavar="DIR",
                   help="where to write the site (default: [tool.opkit] docs; docs/_build/html in opkit's checkout)")
    p.add_argument("--jobs", "-j", metavar="N", type=int,
                   help="parallel Sphinx processes (default: one per CPU)")
    p.add_argument("--builder", "-b", default="html", metavar="NAME",
                   help="Sphinx builder, e.g. html, dirhtml, linkcheck")
    p.add_argument("--no-gen", action="store_true", help="build from generated/docs as it is, without regenerating")
    p.add_argument("--fresh", "-E", action="store_true", help="ignore Sphinx's cache and read every page again")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems and the site's path")
    p.set_defaults(func=cmd_docs)
