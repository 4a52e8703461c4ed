"""Text from specs as it goes on an operator page: docs, prose, names, inline code, table cells.

Spec text is foreign: every helper here makes it safe markdown (:mod:`opkit.core.markdown`).
"""

from __future__ import annotations

import textwrap
from typing import Any

from ..core.markdown import fence_ticks, longest_backtick_run, safe_inline, safe_markdown, safe_plain


def _dedent(text: str) -> str:
    """Doc strings as ONNX's gen_doc prints them: dedented, blank edges dropped."""
    if not text:
        return ""
    lines = textwrap.dedent(text).strip("\n").splitlines()
    return "\n".join(line.rstrip() for line in lines).strip()


def _indent(text: str, prefix: str = "  ") -> str:
    """Indent continuation lines so a multi-line text stays inside its list item."""
    lines = text.splitlines()
    if not lines:
        return ""
    return "\n".join([lines[0]] + [(prefix + line) if line.strip() else "" for line in lines[1:]])


def _block(text: str) -> str:
    """A block text (code), trailing blank lines dropped."""
    return "\n".join(line.rstrip() for line in textwrap.dedent(text).strip("\n").splitlines())


def _wrapped_fence(text: str, lang: str) -> str:
    """A code block whose long lines wrap instead of scrolling (formulas, one-line properties):
    MyST's code-block directive with the class styled in docs/_static/opkit.css."""
    ticks = fence_ticks(text)
    return f"{ticks}{{code-block}} {lang}\n:class: opkit-wrap\n\n{text}\n{ticks}"


def plain(text: str, inline: bool = False, continues: bool = False) -> str:
    """Prose from opkit's extension fields (change notes, rule, property, lowering and example
    docs) is text that quotes Python (``2**31``, ``x_i``, ``a < b``): escape what markdown would
    read as emphasis, HTML or links, outside backtick code spans and fenced code blocks; MyST
    directives, roles, targets ... are shown as text too (:func:`opkit.core.markdown.safe_plain`).

    ``inline``: the text goes on one line of the page (a table cell, a list item's line): its
    lines are joined and nothing in it starts a block. ``continues``: its first line goes on after
    other text, the others follow (indented) as lines of the same list item."""
    return safe_plain(text, inline=inline, continues=continues)


def doc_markdown(text: str) -> str:
    """A spec's ``doc`` (ONNX's markdown, or whatever a project's specs hold) as it goes on a
    page: the markdown ONNX's docs use is kept, MyST directives, raw HTML, file-reading roles and
    links to local files are shown as text (:func:`opkit.core.markdown.safe_markdown`)."""
    return safe_markdown(text)


def _text(text: Any) -> str:
    """A name or short value from a spec (an attribute, example, rule, property name, a value
    domain) in running text: one line, MyST markup that could embed or run something made text."""
    return safe_markdown(" ".join(str(text).split()), inline=True)


def _inline(text: str) -> str:
    """``text`` (one line) as inline code whatever backticks it holds: the span's fence is longer
    than any backtick run inside."""
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (longest_backtick_run(text) + 1)
    return f"{ticks} {text} {ticks}"


def _span(text: Any) -> str:
    """Text from a spec as inline code, as it is (newlines made spaces)."""
    return _inline(" ".join(str(text).splitlines()))


def _code(text: str) -> str:
    """Inline code with every run of white space made one space."""
    return _inline(" ".join(str(text).split()))


def _cell(text: str) -> str:
    """Foreign text (a report's backend, case, message) for a markdown table cell: one line, as
    literal text (pipes, backticks, HTML, roles ... escaped)."""
    return safe_inline(text)
