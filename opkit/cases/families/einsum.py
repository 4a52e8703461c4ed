"""Family hook for Einsum: an equation drawn from a small grammar, then operands shaped to fit it.

The grammar: 1..3 operands, each a term of 0..3 letters drawn from a shared pool (so letters are
shared between operands and summed away, and a letter repeated within one term takes a diagonal),
now and then an upper-case letter (distinct from its lower-case one) and an ellipsis ``...`` at any
position of a term; the equation is implicit (no ``->``: the output is the letters that occur once,
sorted by ASCII value) or explicit (``->`` and a subset of the letters in any order, possibly none:
a full reduction). Spaces may surround the separators (ONNX allows U+0020 anywhere).

Shapes follow: one size per letter; every ellipsis stands for the same number of dims (ONNX requires
it) whose sizes broadcast (some operands have 1 where others have the size); an explicit output keeps
the ellipsis whenever an operand has one.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..context import Context, Draft, values

_LOWER = "abcdefgh"
_UPPER = "ABC"
_SIZE = st.sampled_from((2, 3, 1, 2, 3, 4, 2, 3, 1, 0))  # letter / ellipsis dim sizes, shrinks to 2
_TERM_LEN = st.sampled_from((2, 1, 3, 2, 1, 3, 0))  # letters in a term (0: a scalar operand)
_BOOL = st.booleans()


def _equation(draw) -> tuple[list[list[str]], list[str] | None, dict[str, int], list[int]]:
    """Terms (lists of letters and '...'), the explicit output (None: implicit), letter sizes and the
    ellipsis dims."""
    n_ops = draw(st.integers(1, 3))
    alphabet = _LOWER + (_UPPER if draw(st.integers(0, 4)) == 4 else "")
    k = draw(st.sampled_from((3, 2, 4, 1)))
    pool = draw(st.lists(st.sampled_from(alphabet), min_size=k, max_size=k, unique=True))
    ellipsis = draw(st.integers(0, 2)) == 2
    ell_rank = draw(st.integers(0, 2)) if ellipsis else 0
    terms: list[list[str]] = []
    for _ in range(n_ops):
        n = min(draw(_TERM_LEN), len(pool))
        term = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n, unique=True))
        if term and draw(st.integers(0, 3)) == 3:  # a repeated letter: a diagonal
            term.insert(draw(st.integers(0, len(term))), draw(st.sampled_from(term)))
        if ellipsis and draw(_BOOL):
            term.insert(draw(st.integers(0, len(term))), "...")
        terms.append(term)
    used = sorted({c for t in terms for c in t if c != "..."})
    has_ell = any("..." in t for t in terms)
    sizes = {c: draw(_SIZE) for c in used}
    ell_dims = [draw(_SIZE) for _ in range(ell_rank)] if has_ell else []
    output = None
    if draw(st.integers(0, 2)):  # explicit (two in three)
        output = draw(st.permutations(used))[:draw(st.integers(0, len(used)))] if used else []
        if has_ell:
            output.insert(draw(st.integers(0, len(output))), "...")
    return terms, output, sizes, ell_dims


def _text(draw, terms, output) -> str:
    spaced = draw(st.integers(0, 5)) == 5
    comma, arrow = (", ", " -> ") if spaced else (",", "->")
    lhs = comma.join("".join(t) for t in terms)
    return lhs if output is None else lhs + arrow + "".join(output)


def draw(draw, ctx: Context) -> Draft:
    terms, output, sizes, ell_dims = _equation(draw)
    elem = ctx.elem("Inputs")
    operands = []
    for term in terms:
        shape: list[int] = []
        for c in term:
            if c == "...":  # same rank everywhere; a dim may be 1 here and broadcast
                shape += [1 if draw(st.integers(0, 3)) == 0 else d for d in ell_dims]
            else:
                shape.append(sizes[c])
        operands.append(values(draw, elem, shape))
    draft = Draft()
    draft.attributes["equation"] = _text(draw, terms, output)
    draft.inputs["Inputs"] = operands  # a variadic input: the list of its values
    return draft

