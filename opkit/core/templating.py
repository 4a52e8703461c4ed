"""The Jinja2 environments every emitter renders with: one per template folder, built once.

StrictUndefined so a template naming a missing value fails loudly instead of writing ''; block
trimming so templates can be indented like the text they produce; no autoescape (we write
markdown and Python, not HTML).
"""

from __future__ import annotations

import functools
import os

import jinja2

TEMPLATE_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")


def template_dir(folder: str) -> str:
    return os.path.join(TEMPLATE_ROOT, folder)


@functools.lru_cache(maxsize=None)
def environment(folder: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir(folder)),
                             undefined=jinja2.StrictUndefined, autoescape=False,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["py"] = repr
    return env


