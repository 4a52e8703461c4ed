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


# ---------------------------------------------------------------------------------------------
# foreign text on MyST pages
#
# Spec ``doc`` text (imported from onnx / onnxruntime, or written by whoever wrote a project's
# specs), names from specs and backend messages end up in MyST pages that Sphinx builds. MyST is
# more than markdown: a fence like ```{include} /etc/passwd, {eval-rst}, raw HTML, a role like
# {download}, a link or image to a local path (MyST makes it a download and copies the file into
# the site) all read files or emit raw HTML. The functions below keep the markdown ONNX's docs use
# (inline code, plain fenced and indented code blocks, links to web pages and to sibling .md
# pages, lists, emphasis, tables, <br> and <i>) and neutralise the rest with backslash escapes,
# which CommonMark renders as the character itself.
#
# They do not parse markdown completely. Where the line-by-line tracking below cannot be sure how
# MyST's parser (markdown-it) reads a line, it escapes (a stray backslash in a code block at
# worst) or rewrites the line into a form both read the same way, never the other way round:
#
# * lines are split as the page will be (str.splitlines; trailing \xa0 and the like stripped);
# * a fence is only taken as one where markdown-it certainly opens a fence (at most 3 spaces
#   in, or right after one bullet marker, and not a definition list's term); any other line that
#   could open a fence is escaped;
# * inside a fence, a line indented less than the fence (where markdown-it might end it along
#   with a list item) is indented like the fence, an ambiguous closing line is made a closing
#   line, and a fence still open at the end is closed, so a fence never swallows the page text
#   after the doc (which would turn the page's own code blocks into markdown);
# * an indented code block is only taken as one after a blank line and indented 4 columns past
#   every list item that may still be open;
# * code spans are paired per line; a paragraph with a backtick run left unpaired on its line
#   (markdown-it may pair it across lines), or a span holding a "|" (a table cell ends there), is
#   escaped as if it had no code spans at all;
# * the few kept HTML tags are kept inside a paragraph only (first on a line that may start a
#   block they would open an HTML block, whose lines MyST passes on raw).
#
# tests/test_doc_text_safety.py checks the result with MyST's own parser, also on random text.

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
#: roles kept in doc text: they format text or cross-reference labels, none reads a file
SAFE_ROLES = frozenset({"math", "eq", "sub", "sup", "abbr", "code", "kbd", "samp", "dfn", "ref", "numref",
                        "doc", "term"})
#: link schemes kept (links with other schemes, and local paths other than sibling .md pages,
#: are shown as text: MyST turns a link to a local file into a download and copies the file)
LINK_SCHEMES = frozenset({"http", "https", "mailto"})

# indentation and container markers (lists, block quotes, definition lists), and a bit more
_PREFIX = re.compile(r"(?:[ \t>*+\-0-9.)]|[:~](?=[ \t]))*")
_FENCE_RUN = re.compile(r"(`{3,}|~{3,})")
_LIST_OR_QUOTE = re.compile(r"(?:[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+|>[ \t]?))*[ \t]*(.*)", re.S)
_DEFINITION = re.compile(r"[:~][ \t]")  # a definition list's definition (its indentation is not checked)
_CERTAIN_OPENER_PREFIX = re.compile(r"( {0,3})([-*+] {1,4})?")
_MARKERS = re.compile(r"(?:[-*+]|\d{1,9}[.)]|[:~])(?: +|$)|> ?")
_ROLE = re.compile(r"\{([a-zA-Z0-9_\-+:]+)\}(`+)")
_TAG_START = re.compile(r"[A-Za-z/!?]")
#: inline HTML kept in doc text: what ONNX's docs use, no attributes
_KEPT_TAG = re.compile(r"<(?:br ?/?|/?(?:i|b|em|strong|sub|sup))>")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def safe_markdown(text: str, inline: bool = False, continues: bool = False) -> str:
    """Foreign markdown (a spec's ``doc``) made safe for a MyST page; see the notes above.

    Kept: inline code, plain fenced code (```` ```{name} ```` becomes a ``text`` block that shows
    the directive line), indented code, emphasis, lists, tables, headings, links to http(s)/mailto
    URLs, ``#anchors`` and sibling ``.md`` pages, and the roles in :data:`SAFE_ROLES`. Escaped
    (shown as text): HTML tags, comments and autolinks (``a < b`` stays as it is), other roles,
    other links and images, link reference definitions to anything else, footnotes, MyST targets
    ``(label)=``, substitutions ``{{ ... }}`` and colon fences ``:::{name}``.

    ``inline``: the text goes on one line of the page (its lines are joined), after other text
    (a table cell, a list item's line). ``continues``: only its first line goes on after other
    text (``- **name**: <doc>``), the others follow as lines of that paragraph (indented)."""
    if inline:
        text = " ".join(text.splitlines())
    return _Sanitizer(plain=False, inline_start=inline or continues, text_follows=inline).run(text)


def safe_plain(text: str, inline: bool = False, continues: bool = False) -> str:
    """Foreign prose shown as text (markdown emphasis, links and HTML escaped outside code spans
    and fenced code blocks), with the same protection as :func:`safe_markdown` (and its
    ``inline`` and ``continues``)."""
    if inline:
        text = " ".join(text.splitlines())
    return _Sanitizer(plain=True, inline_start=inline or continues, text_follows=inline).run(text)


def safe_inline(text: str) -> str:
    """Foreign text on one line as literal text (a backend's message in a table cell): what
    could embed, link, run a role or split the cell is escaped (backticks, HTML, brackets, braces,
    pipes, backslashes; ``*`` too)."""
    text = " ".join(str(text).split())
    return "".join("\\" + ch if ch in _INLINE_SPECIAL else ch for ch in text)


_INLINE_SPECIAL = frozenset("\\`*<>{}[]|")
_CELL_SPECIAL = _INLINE_SPECIAL | frozenset("_~$&!")


def safe_cell(text: str) -> str:
    """Foreign text (a runtime's message, name or version) in a table cell, shown exactly as it is
    and never as markup: ``safe_inline``, with emphasis, entities and the rest of CommonMark's
    inline punctuation escaped too (``_x_``, ``&lt;``)."""
    text = " ".join(str(text).split())
    return "".join("\\" + ch if ch in _CELL_SPECIAL else ch for ch in text)


def good_destination(dest: str) -> bool:
    """Whether a link destination may stay a link: a URL with a scheme of :data:`LINK_SCHEMES`,
    an ``#anchor``, or a relative path to a ``.md`` page below the page's folder. Escapes, HTML
    entities and percent-encoding are decoded first, as MyST does."""
    import html
    from urllib.parse import unquote

    d = dest
    for _ in range(4):
        decoded = unquote(html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", d)))
        if decoded == d:
            break
        d = decoded
    d = d.strip()
    if not d or d.startswith("#"):
        return True
    m = _SCHEME.match(d)
    if m:
        return m.group(1).lower() in LINK_SCHEMES
    if d.startswith(("/", "\\", "~")) or any(ord(c) < 0x20 for c in d):
        return False
    path = re.split(r"[#?]", d, maxsplit=1)[0]
    if ".." in re.split(r"[/\\]", path):
        return False
    return path.lower().endswith(".md")


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _Sanitizer:
    """One pass over the lines: block structure first (fences, indented code, list items that
    may be open), then the inline escapes of each run of prose lines."""

    def __init__(self, plain: bool, inline_start: bool = False, text_follows: bool = False):
        self.plain = plain
        # the first line continues a line of the page (``- **name**: <doc>``): never a block start
        self.inline_start = inline_start
        # the page goes on after the text on the same line (a name in a list item's line)
        self.text_follows = text_follows

    def run(self, text: str) -> str:
        self._out: list[str] = []
        # prose lines of a paragraph: (line, positions to escape, whether it goes on a line of the
        # page after other text)
        self._group: list[tuple[str, set[int], bool]] = []
        self._fence = None  # (indent, char, length, right after a bullet marker) of the open fence
        self._items: list[int] = []  # content columns of list items (and the like) that may be open
        self._prev_blank = True
        self._prev_code = False

        # the lines as the page will have them: the page is split with str.splitlines (which
        # also breaks at \x0b, \x0c, \x1c-\x1e, \x85, \u2028, \u2029), and trailing whitespace
        # is stripped off lines outside fences (any whitespace, \xa0 too): a line ending in
        # "```\xa0" is made "```" here so that it reads the same whichever way it goes
        lines = [line.rstrip() if line.rstrip() != line.rstrip(" \t") else line for line in text.splitlines()]
        for number, line in enumerate(lines):
            head = _PREFIX.match(line).end()
            if "\t" in line[:head]:
                # tabs among the indentation and markers: markdown-it counts columns; make spaces
                line = line[:head].expandtabs(4) + line[head:]
            blank = not line.strip(" \t")  # markdown-it: only spaces and tabs are blank
            if self._fence is not None:
                self._fenced_line(line, blank)
            else:
                self._line(lines, number, line, blank)
        self._flush()
        if self._fence is not None:
            k, ch, n, _ = self._fence
            self._out.append(" " * k + ch * n)
        return "\n".join(self._out)

    def _flush(self) -> None:
        if self._group:
            self._out.extend(self._inline(self._group))
            self._group.clear()

    def _fenced_line(self, line: str, blank: bool) -> None:
        """A line inside the open fence: kept, or made the closer markdown-it will see."""
        k, ch, n, marker = self._fence
        if blank:
            self._out.append(line)
            return
        ind = _indentation(line)
        stripped = line.strip(" \t")
        closer = stripped == ch * len(stripped) and len(stripped) >= n
        if ind < k:
            # markdown-it keeps the line in the fence (top level) or ends a list item and
            # the fence with it: indent it like the fence, which keeps it in the fence and
            # shows the same text (the fence's indentation is stripped from its lines)
            line = " " * k + line.lstrip(" ")
            ind = k
        if closer and ind <= (k + 3 if marker else 3):
            self._out.append(line)
            self._fence = None
        elif closer and not marker and ind <= k + 3:
            # a closer in a list item, code text at top level: make it a closer for both
            self._out.append("   " + stripped)
            self._fence = None
        else:
            self._out.append(line)
        self._prev_blank = self._prev_code = False

    def _line(self, lines: list[str], number: int, line: str, blank: bool) -> None:
        """A line outside fences: blank, indented code, a fence that opens, or prose of a paragraph."""
        first = number == 0 and self.inline_start
        if blank:
            self._flush()
            self._out.append(line)
            self._prev_blank, self._prev_code = True, False
            return
        ind = _indentation(line)
        if (not self.plain and not first and (self._prev_blank or self._prev_code)
                and ind >= 4 + max(self._items, default=0) and not _DEFINITION.match(line, ind)):
            # an indented code block, whatever list item may still be open around it
            self._flush()
            self._out.append(line)
            self._prev_blank, self._prev_code = False, True
            return
        if self._prev_blank:
            self._items = [c for c in self._items if c <= ind]
        prefix_end = _PREFIX.match(line).end()
        prefix, rest = line[:prefix_end], line[prefix_end:]
        escapes: set[int] = set()
        run = _FENCE_RUN.match(rest)
        if run and not (run.group(1)[0] == "`" and "`" in rest[run.end():]):
            if self._opens_fence(lines, number, line, prefix, rest, run, first):
                self._prev_blank = self._prev_code = False
                return
            # a fence markdown-it might open (in a list item, a block quote ...): escape it
            escapes.add(prefix_end)
        self._push_items(line, ind, self._items)
        content = rest.strip()
        start = prefix_end + len(rest) - len(rest.lstrip())
        if content.startswith("(") and content.endswith(")="):
            escapes.add(start)  # a MyST target
        elif content.startswith(":::"):
            escapes.add(start)  # a colon fence (a directive, where that extension is on)
        self._group.append((line, escapes, first))
        self._prev_blank = self._prev_code = False

    def _opens_fence(self, lines: list[str], number: int, line: str, prefix: str, rest: str, run, first: bool) -> bool:
        """Open the fence ``run`` starts when markdown-it surely opens one there (False: it may not)."""
        certain = None if first else _CERTAIN_OPENER_PREFIX.fullmatch(prefix)
        if certain and _definition_follows(lines, number):
            certain = None  # in a definition list the line may be a term instead
        if not certain:
            return False
        self._flush()
        info = rest[run.end():]
        k = len(prefix)
        self._fence = (k, run.group(1)[0], len(run.group(1)), bool(certain.group(2)))
        if certain.group(2):
            self._items.append(k)
        if info.strip().startswith("{"):
            # a MyST directive: a plain block that shows the directive line instead
            self._out.append(prefix + run.group(1) + "text")
            self._out.append(" " * k + info.strip())
        else:
            self._out.append(line)
        return True

    @staticmethod
    def _push_items(line: str, ind: int, items: list[int]) -> None:
        """Note the content columns of the list items (definitions, footnotes) this line may open:
        at most where its content starts, plus one (an empty item's content column)."""
        pos = ind
        while True:
            m = _MARKERS.match(line, pos)
            if not m or m.end() == pos:
                break
            pos = m.end()
            if not line.startswith(">", m.start()):
                # content after the spaces: its column (or less, after 5+ spaces); none: one more
                items.append(pos if line[pos - 1: pos] == " " else pos + 1)
        if line.lstrip().startswith("[^"):
            items.append(ind + 4)

    def _inline(self, group: list[tuple[str, set[int], bool]]) -> list[str]:
        """The lines of a paragraph (and of the blocks that may interrupt it), escaped: with code
        spans where every backtick run finds its partner on its line, else without."""
        for code in (True, False):
            out: list[str] = []
            paired = True
            definitions = False  # a line starts with a link reference definition that is kept
            for j, (line, escapes, first) in enumerate(group):
                # whether the line surely continues the paragraph of the line before (then it
                # starts no block, not even an HTML block or a definition)
                cont = first or (j > 0 and not definitions and not escapes and _paragraph_text(out[-1])
                                 and not _PREFIX.match(line).group().strip())
                text, ok = self._scan(line, escapes, cont, code)
                paired = paired and ok
                if not cont:
                    pos = _PREFIX.match(text).end()
                    pos += len(text[pos:]) - len(text[pos:].lstrip())
                    if text.startswith("[", pos):
                        # checked on what markdown-it reads: escapes may have moved a label's end
                        if _bad_definition(text[pos:].rstrip()):
                            text = text[:pos] + "\\" + text[pos:]  # a definition, a footnote
                        elif _definition_like(text[pos:]):
                            definitions = True  # its title may go on over the next lines
                out.append(text)
            if paired or not code:
                return out
        raise AssertionError("unreachable")

    def _scan(self, line: str, escapes: set[int], cont: bool, code: bool) -> tuple[str, bool]:
        """Escape one line of prose; ``ok`` is False when a backtick run finds no partner on it.
        ``escapes``: positions of characters to escape whatever they are (block syntax); ``cont``:
        the line certainly continues a paragraph."""
        plain = self.plain
        out: list[str] = []
        ok = True
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if i in escapes:
                out.append("\\" + ch)
                i += 1
                continue
            if ch == "\\":
                if plain:
                    out.append("\\\\")
                    i += 1
                elif i + 1 < n and line[i + 1] in _PUNCT:
                    out.append(line[i: i + 2])
                    i += 2
                else:
                    out.append(ch)
                    i += 1
                continue
            if ch == "`":
                j = i
                while j < n and line[j] == "`":
                    j += 1
                if code:
                    close = _closing_run(line, j, j - i)
                    if close is not None and not _splits_table(line[j: close[0]]):
                        out.append(line[i: close[1]])
                        i = close[1]
                        continue
                    ok = False
                    out.append(line[i:j])
                elif self.text_follows:
                    # page text follows on the line: a run left as it is could pair with a run
                    # of that text, so escape it (the paragraph has no code spans anyway)
                    out.append("\\`" * (j - i))
                else:
                    out.append(line[i:j])
                i = j
                continue
            if ch == "{":
                m = _ROLE.match(line, i)
                if (m and not (code and m.group(1) in SAFE_ROLES and _role_closes_like_code(line, m))) \
                        or line.startswith("{{", i):
                    out.append("\\{")
                    i += 1
                    continue
            elif ch == "<":
                if plain or (i + 1 < n and _TAG_START.match(line[i + 1])
                             and not _kept_tag(line, i, cont)):
                    out.append("\\<")
                    i += 1
                    continue
            elif ch == "[" and not plain and line.startswith("[^", i):
                out.append("\\[")  # a footnote reference
                i += 1
                continue
            elif ch == "]" and not plain and line.startswith("](", i) and not _good_link(line, i + 2):
                out.append("\\]")
                i += 1
                continue
            elif plain and ch in "*_[]":
                out.append("\\" + ch)
                i += 1
                continue
            out.append(ch)
            i += 1
        return "".join(out), ok


def _definition_follows(lines: list[str], number: int) -> bool:
    """Whether the line after ``number`` (or after one blank line) starts a definition of a
    definition list (the myst ``deflist`` extension): then that line may be read as a term."""
    for following in lines[number + 1: number + 3]:
        if following.strip(" \t"):
            return bool(re.match(r"[ \t]*[:~](?:[ \t]|$)", following))
    return False


def _kept_tag(line: str, i: int, cont: bool) -> bool:
    """Whether the ``<`` at ``i`` opens one of the attribute-free tags ONNX's docs use (``<br>``,
    ``<i>`` ...) inside a paragraph: after other text on the line, or on a line that continues
    a paragraph (first on a line that may start a block, it could open an HTML block, which would
    pass the lines after it on raw)."""
    m = _KEPT_TAG.match(line, i)
    return bool(m) and (cont or not _PREFIX.fullmatch(line[:i]))


def _paragraph_text(line: str) -> bool:
    """Whether a prose line is surely paragraph text, so the next line continues the paragraph
    (unless it starts a block that interrupts one). Conservative: after list and quote markers
    the text must start with a letter (not a heading, table, break, target, comment, definition
    ...) and hold no ``|`` (a table's header row)."""
    content = _LIST_OR_QUOTE.match(line).group(1)
    return bool(content) and (content[0].isalpha() or content[0] in "`'\"") and "|" not in line


def _definition_like(content: str) -> bool:
    """A line starting ``[label]:`` (or ``[`` and a label going on over the next line)."""
    end = _label_end(content)
    return end is None or content[end + 1: end + 2] == ":"


def _label_end(content: str) -> int | None:
    j = 1
    while j < len(content):
        c = content[j]
        if c == "\\":
            j += 2
            continue
        if c == "]":
            return j
        j += 1
    return None


def _bad_definition(content: str) -> bool:
    """Whether a line starting with ``[`` may begin a link reference definition to something
    :func:`good_destination` refuses, or a footnote (escaping its ``[`` makes it text)."""
    j = _label_end(content)
    if j is None:
        return True  # the label may go on on the next line
    if content[1:2] == "^":
        return True
    if content[j + 1: j + 2] != ":":
        return False
    dest = content[j + 2:].split()
    if not dest or dest[0].startswith("<"):
        return True
    return not good_destination(dest[0])


def _closing_run(line: str, start: int, length: int) -> tuple[int, int] | None:
    """The next backtick run of exactly ``length`` from ``start`` (a code span's end), as markdown-it
    pairs them."""
    pos = start
    while True:
        begin = line.find("`", pos)
        if begin < 0:
            return None
        end = begin
        while end < len(line) and line[end] == "`":
            end += 1
        if end - begin == length:
            return begin, end
        pos = end


def _splits_table(code: str) -> bool:
    """A ``|`` in a code span splits a table row's cell even so (GFM): do not trust such a span."""
    return any(c == "|" and (i == 0 or code[i - 1] != "\\") for i, c in enumerate(code))


def _role_closes_like_code(line: str, m: re.Match) -> bool:
    """MyST's role parser finds a role's closing backticks its own way; keep a role only where it
    ends where the code span would (so both read the rest of the line alike)."""
    ticks = len(m.group(2))
    pos = m.end()
    role_end = line.find("`" * ticks, pos + 1)
    code_end = _closing_run(line, pos, ticks)
    return role_end >= 0 and code_end is not None and code_end[0] == role_end


def _good_link(line: str, start: int) -> bool:
    """Whether the inline link destination starting at ``start`` (after ``](``) may stay a link:
    on this line, without a title, not in <...>, no backticks, and :func:`good_destination`."""
    n = len(line)
    j = start
    while j < n and line[j] in " \t":
        j += 1
    if j >= n or line[j] == "<":
        return False
    k, depth = j, 0
    while k < n:
        c = line[k]
        if c == "\\" and k + 1 < n and line[k + 1] in _PUNCT:
            k += 2
            continue
        if c in " \t" or ord(c) < 0x20:
            break
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        k += 1
    dest = line[j:k]
    while k < n and line[k] in " \t":
        k += 1
    if k >= n or line[k] != ")" or "`" in dest:
        return False
    return good_destination(dest)
