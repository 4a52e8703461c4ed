"""The table of subcommands: name -> the module that registers it, in the order ``opkit --help``
lists them. Every module exposes ``register(subparsers)``, which adds its parser (with
``set_defaults(func=...)``) to the ``opkit`` subparsers."""

from __future__ import annotations

from types import MappingProxyType

from . import compare, diff, docs, fmt, gen, import_cmd, init, show, test, validate

COMMANDS = MappingProxyType({
    "validate": validate,
    "import": import_cmd,
    "gen": gen,
    "show": show,
    "diff": diff,
    "test": test,
    "compare": compare,
    "docs": docs,
    "init": init,
    "fmt": fmt,
})
