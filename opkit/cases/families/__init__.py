"""Family hooks: one function per family of ops, named by a spec version's ``family:``.

A hook is ``hook(draw, ctx: Context) -> Draft``: it draws, through hypothesis's ``draw``, the
attributes and inputs its family can build valid by construction (for the op version and type
binding in ``ctx``) and returns them; the generic steps draw whatever it leaves out. A hook never
filters: when an op of the family cannot be built it raises ``NotGeneratable``.
"""

from __future__ import annotations

import importlib
from typing import Callable

# the family names are one vocabulary, checked by the spec loader against `family:`; each family's
# hook is ``draw(draw, ctx) -> Draft`` in the module of its name in this package
from ...core.onnx_types import FAMILIES


def hook_for(family: str | None) -> Callable | None:
    if not family:
        return None
    if family not in FAMILIES:
        raise KeyError(family)
    module = importlib.import_module(f"{__name__}.{family}")
    return module.draw
