"""Small markdown helpers shared by everything that writes MyST/CommonMark."""

from __future__ import annotations

import re

_BACKTICK_RUN = re.compile(r"`+")


def longest_backtick_run(text: str) -> int:
    return max((len(m.group()) for m in _BACKTICK_RUN.finditer(text)), default=0)


def fence_ticks(text: str) -> str:
    """A backtick fence longer than any backtick run inside ``text`` (ONNX docs hold ``` blocks,
    and a diff line may start with ' ```'), so the block can never close early."""
    return "`" * max(3, longest_backtick_run(text) + 1)


def fence(text: str, lang: str = "text") -> str:
    ticks = fence_ticks(text)
    return f"{ticks}{lang}\n{text}\n{ticks}"
