"""Family hook: string ops (StringNormalizer, StringSplit, StringConcat, RegexFullMatch,
TfIdfVectorizer) and BitShift.

- StringNormalizer: X is [C] (C >= 1; see ``_normalizer`` on [1, C]), words of mixed case (letters whose upper/lower
  case is one character, so case mapping means the same everywhere), stopwords drawn partly from
  the input's words with their case changed, every ``case_change_action`` and
  ``is_case_sensitive``. ``locale`` stays absent: its values are environment dependent (a runtime
  rejects a locale its platform lacks) and the reference kernel does not use it.
- StringSplit: strings built from words joined by the delimiter (with empty fields: doubled,
  leading and trailing delimiters) or by runs of spaces when the delimiter is absent or empty;
  ``maxsplit`` absent or in [0, 3].
- StringConcat: two broadcastable string tensors.
- RegexFullMatch: ``pattern`` from a set of valid RE2 patterns whose meaning is the same in RE2
  and Python's ``re`` (no \\w, \\d, \\s, which are Unicode-aware in Python only), inputs that match
  and inputs that do not.
- BitShift (not a string op: its ``direction`` string attribute is what generic draws could not
  set): broadcastable X and Y, shift amounts below the bit width of T. For BitShift-11 a shift
  >= the bit width is undefined (C++ shifts are), so it never occurs; BitShift-28 defines negative
  and too-large shifts (the result is the sign extension alone), so a few occur there.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...core.onnx_types import INT_RANGES
from ..draws import cast
from ..context import ABSENT, Context, Draft, by_op, values

_BOOL = st.booleans()
_WORDS = ("Hello", "hello", "WORLD", "world", "abc", "ABC", "MiXeD", "x1", "", " ", "caf\u00e9", "CAF\u00c9",
          "\u00c4pfel", "\u0416\u0443\u043a", "42", "a b")


def _object_array(items, shape) -> np.ndarray:
    arr = np.empty(len(items), dtype=object)
    arr[:] = list(items)
    return arr.reshape(tuple(shape))


def _broadcast_shapes(draw, n: int = 2) -> list[tuple[int, ...]]:
    """``n`` shapes that broadcast together: suffixes of one shape, some dims set to 1."""
    rank = draw(st.integers(0, 4))
    base = [draw(st.one_of(st.integers(1, 3), st.integers(0, 3))) for _ in range(rank)]
    shapes = []
    for _ in range(n):
        r = draw(st.integers(0, rank)) if draw(st.integers(0, 2)) == 0 else rank
        shapes.append(tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in base[rank - r:]))
    return shapes


# ---------------------------------------------------------------------------------------------


def _normalizer(draw, ctx: Context) -> Draft:
    # [C] only: the [1, C] form ONNX also allows is refused by ONNX inference whenever X is a graph
    # input with symbolic dims (it cannot see that the first dim is 1), so such cases never pass the
    # final check
    c = draw(st.integers(1, 5))
    shape = (c,)
    words = [draw(st.sampled_from(_WORDS)) for _ in range(c)]
    attrs = {
        "case_change_action": draw(st.sampled_from((ABSENT, "LOWER", "UPPER", "NONE"))),
        "is_case_sensitive": draw(st.sampled_from((ABSENT, 0, 1))),
        "locale": ABSENT,
    }
    if draw(_BOOL):
        stop = []
        for _ in range(draw(st.integers(1, 3))):
            w = draw(st.sampled_from(words + ["absent", "Hello"]))
            stop.append(draw(st.sampled_from((w, w.upper(), w.lower()))))
        attrs["stopwords"] = stop
    else:
        attrs["stopwords"] = ABSENT
    return Draft(attrs, {"X": _object_array(words, shape)})


_DELIMS = (",", " ", "-", "ab", "::")
_TOKENS = ("a", "bc", "Hello", "x y", "", "12", "\u00e9t\u00e9")


def _split(draw, ctx: Context) -> Draft:
    rank = draw(st.integers(0, 3))
    shape = [draw(st.one_of(st.integers(1, 3), st.integers(0, 3))) for _ in range(rank)]
    mode = draw(st.sampled_from(("delim", "absent", "empty")))
    delim = draw(st.sampled_from(_DELIMS)) if mode == "delim" else ""
    n = int(np.prod(shape)) if shape else 1
    items = []
    for _ in range(n):
        toks = [draw(st.sampled_from(_TOKENS)) for _ in range(draw(st.integers(0, 4)))]
        if mode == "delim":
            toks = [t.replace(delim, "") for t in toks]
            s = delim.join(toks)
            if draw(st.integers(0, 3)) == 0:  # leading / trailing delimiter: empty fields
                s = delim + s if draw(_BOOL) else s + delim
        else:  # split on runs of whitespace; leading and trailing whitespace is dropped
            s = "".join(t.replace(" ", "") + " " * draw(st.integers(1, 2)) for t in toks)
            if draw(_BOOL):
                s = " " + s
            s = s.rstrip() if draw(_BOOL) else s
        items.append(s)
    attrs = {
        "delimiter": delim if mode == "delim" else (ABSENT if mode == "absent" else ""),
        "maxsplit": draw(st.sampled_from((ABSENT, 0, 1, 2, 3))),
    }
    return Draft(attrs, {"X": _object_array(items, shape)})


def _concat(draw, ctx: Context) -> Draft:
    sx, sy = _broadcast_shapes(draw)
    return Draft({}, {"X": values(draw, "string", sx), "Y": values(draw, "string", sy)})


# valid RE2 that Python's re reads the same way (ASCII classes only)
PATTERNS = ("[a-z]+", "[0-9]+", ".*", "a|b", "(ab)*", "[A-Z][a-z]*", "x{2,3}", "", "[^ ]*",
            "(?i)hello", "[A-Za-z0-9_]+@[a-z]+\\.com", "a.c", "\\.", "(a|b)+c?")
_SUBJECTS = ("abc", "ABC", "123", "", "a", "b", "ab", "abab", "xx", "xxx", "user@example.com", "Hello", "hello",
             "hello world", "\u00e9", "a.c", ".", "abbc", "HeLLo")


def _regex(draw, ctx: Context) -> Draft:
    pattern = draw(st.sampled_from(PATTERNS))
    rank = draw(st.integers(0, 3))
    shape = [draw(st.one_of(st.integers(1, 3), st.integers(0, 3))) for _ in range(rank)]
    n = int(np.prod(shape)) if shape else 1
    items = [draw(st.sampled_from(_SUBJECTS)) for _ in range(n)]
    return Draft({"pattern": pattern}, {"X": _object_array(items, shape)})


def _bitshift(draw, ctx: Context) -> Draft:
    elem = ctx.elem("X")
    bits = np.dtype(elem).itemsize * 8
    sx, sy = _broadcast_shapes(draw)
    # the version that defines negative and too-large shifts is the one that added signed types
    defined_out_of_range = any(t.startswith("tensor(int") for t in ctx.version.type_constraint("T").types)
    rng_seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(rng_seed)
    n = int(np.prod(sy)) if sy else 1
    shifts = rng.integers(0, bits, n)
    if defined_out_of_range and draw(st.integers(0, 2)) == 0:
        beyond = [bits, bits + 1, 2 * bits + 3] + ([-1, -bits] if INT_RANGES[elem][0] < 0 else [])
        shifts = np.where(rng.random(n) < 0.5, rng.choice(beyond, n), shifts)
    y = cast(shifts.tolist(), elem).reshape(sy)
    return Draft({"direction": draw(st.sampled_from(("LEFT", "RIGHT")))},
                 {"X": values(draw, elem, sx), "Y": y})


def _tfidf(draw, ctx: Context) -> Draft:
    """TfIdfVectorizer: gram lengths and skips first, then a pool of distinct n-grams per length
    (``ngram_counts`` holds where each length starts, one entry per length up to
    ``max_gram_length``), distinct output coordinates for them, weights of the pool's size, and an
    input made of pool tokens and one token the pool lacks, so both hits and misses occur."""
    elem = ctx.elem("X")
    vocab = ["a", "bb", "C", "\u00e9"] if elem == "string" else [7, -3, 0, 1000]
    max_n = draw(st.integers(1, 3))
    min_n = draw(st.integers(1, max_n))
    token = st.sampled_from(vocab)
    pool, starts, n_grams = [], [], 0
    for n in range(1, max_n + 1):
        starts.append(len(pool))
        grams = draw(st.lists(st.tuples(*[token] * n), max_size=3, unique=True))
        for gram in grams:
            pool.extend(gram)
        n_grams += len(grams)
    if n_grams == 0:  # ONNX requires a non-empty ngram_indexes: one 1-gram at the front
        pool.insert(0, vocab[0])
        starts = [0] + [s + 1 for s in starts[1:]]
        n_grams = 1
    indexes = draw(st.lists(st.integers(0, n_grams + 1), min_size=n_grams, max_size=n_grams, unique=True))
    mode = draw(st.sampled_from(["TF", "IDF", "TFIDF"]))
    weights = ABSENT if draw(_BOOL) else [float(w) for w in draw(st.lists(
        st.sampled_from([0.5, 1.0, 2.0, 0.0, 3.25]), min_size=n_grams, max_size=n_grams))]
    attrs = {"mode": mode, "min_gram_length": min_n, "max_gram_length": max_n,
             "max_skip_count": draw(st.integers(0, 2)), "ngram_counts": starts, "ngram_indexes": indexes,
             "weights": weights, "pool_strings": pool if elem == "string" else ABSENT,
             "pool_int64s": ABSENT if elem == "string" else [int(t) for t in pool]}
    shape = [draw(st.integers(0, 6))] if draw(_BOOL) else [draw(st.integers(1, 3)), draw(st.integers(0, 6))]
    tokens = draw(st.lists(st.sampled_from(vocab + (["zz"] if elem == "string" else [5])),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    X = _object_array(tokens, shape) if elem == "string" else cast(tokens, elem).reshape(shape)
    return Draft(attrs, {"X": X})


_OPS = {
    "TfIdfVectorizer": _tfidf,
    "StringNormalizer": _normalizer,
    "StringSplit": _split,
    "StringConcat": _concat,
    "RegexFullMatch": _regex,
    "BitShift": _bitshift,
}


draw = by_op("strings", _OPS)
