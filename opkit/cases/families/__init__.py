"""Family hooks: one function per family of ops, named by a spec version's ``family:``.

A hook is ``hook(draw, ctx: Context) -> Draft``: it draws, through hypothesis's ``draw``, the
attributes and inputs its family can build valid by construction (for the op version and type
binding in ``ctx``) and returns them; the generic steps draw whatever it leaves out. A hook never
filters: when an op of the family cannot be built it raises ``NotGeneratable``.
"""

from __future__ import annotations

import importlib
from typing import Callable

# family name -> module (in this package) defining ``draw(draw, ctx) -> Draft``
FAMILIES = {
    "window": "window",
    "indices": "indices",
    "shape": "shape",
    "einsum": "einsum",
    "quantization": "quantization",
    "strings": "strings",
    "rnn": "rnn",
    "normalization": "normalization",
    "matmul": "matmul",
    "elementwise": "elementwise",
    "signal": "signal",
    "loss": "loss",
    "attention": "attention",
    "constant": "constant",
    "detection": "detection",
    "reduction": "reduction",
    "cast": "cast",
    "sequence": "sequence",
    "shrink": "shrink",
}


def hook_for(family: str | None) -> Callable | None:
    if not family:
        return None
    module = importlib.import_module(f"{__name__}.{FAMILIES[family]}")
    return module.draw
