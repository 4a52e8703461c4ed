"""Family ``ml_tree``: placeholder while its hook is written (draws nothing: the generic steps build the case)."""

from __future__ import annotations

from ..context import Context, Draft


def draw(draw, ctx: Context) -> Draft:
    return Draft()
