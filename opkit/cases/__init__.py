"""Cases built valid by construction: the one generator (``generator.cases``), the context and
draft family hooks work with (``context``), and the hooks (``families``)."""

from .context import Context, Draft
from .generator import cases, generatable

__all__ = ["Context", "Draft", "cases", "generatable"]
