"""Compute helpers: placeholder module (filled by the kernels of its family)."""

from __future__ import annotations

__all__: list[str] = []
