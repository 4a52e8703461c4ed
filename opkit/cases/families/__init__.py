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


def edge_check(family: str | None) -> Callable | None:
    """What a family hook keeps valid by construction beyond the spec's rules (pooling pads below
    the kernel, Pad's reflect below the axis size), as ``edge_holds(case, version) -> bool`` of the
    family's module, or None. The relational edges (``opkit.cases.relational_edges``) change a
    hook's shapes and integers and keep a variant only when the rules and this check hold."""
    if not family or family not in FAMILIES:
        return None
    module = importlib.import_module(f"{__name__}.{family}")
    return getattr(module, "edge_holds", None)


def hook_for(family: str | None) -> Callable | None:
    if not family:
        return None
    if family not in FAMILIES:
        raise KeyError(family)
    module = importlib.import_module(f"{__name__}.{family}")
    return module.draw
