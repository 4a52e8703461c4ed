"""The ``opkit`` command line: the top-level parser, the subcommands of ``commands.table``, and
``main`` with the error handling every command shares.

Exit codes (every subcommand):
  0  success
  1  the command ran and found problems (spec diagnostics, generated files out of date,
     conformance failures)
  2  usage error (bad arguments, unknown backend or op, missing optional package)
"""

from __future__ import annotations

import argparse
import functools
import sys

from .commands.common import print_error
from .commands.table import COMMANDS
from .core.errors import UsageError
from .core.exit_codes import ExitCode


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
    for command in COMMANDS.values():
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE
    from .core.project import ConfigError, discover, using
    from .core.atomic_files import WriteError

    try:
        with using(discover(specs=args.specs or ())) as project:
            args.project = project
            return args.func(args)
    except (UsageError, ConfigError) as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    except WriteError as exc:  # a full or read-only disk: nothing half-written was left behind
        print_error(str(exc))
        return ExitCode.PROBLEMS
    except KeyboardInterrupt:
        print_error("interrupted")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
