"""String ops: StringSplit, StringNormalizer, TfIdfVectorizer."""

from __future__ import annotations

import numpy as np


def string_split(x, delimiter, maxsplit):
    delim = delimiter if delimiter else None
    n = -1 if maxsplit is None else int(maxsplit)
    parts = [str(s).split(delim, n) if delim is not None else str(s).split(None, n) for s in x.reshape(-1)]
    width = max((len(p) for p in parts), default=0)
    y = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, :len(p)] = p
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    return y.reshape(x.shape + (width,)), counts


def string_normalizer(x, action, case_sensitive, stopwords, locale):
    words = list(x.reshape(-1))
    if stopwords:
        stop = set(stopwords) if case_sensitive else {w.lower() for w in stopwords}
        words = [w for w in words if (w if case_sensitive else w.lower()) not in stop]
    if action == "LOWER":
        words = [w.lower() for w in words]
    elif action == "UPPER":
        words = [w.upper() for w in words]
    if not words:
        words = [""]
    out = np.array(words, dtype=object)
    return out.reshape(1, -1) if x.ndim == 2 else out


def tfidf_vectorizer(X, *, max_gram_length, max_skip_count, min_gram_length, mode, ngram_counts, ngram_indexes,
                     pool_int64s=None, pool_strings=None, weights=None):
    pool = list(pool_strings) if pool_strings is not None else [int(v) for v in pool_int64s]
    counts_at = list(ngram_counts) + [len(pool)]
    ngrams = {}
    ordinal = 0
    for g in range(len(ngram_counts)):
        n = g + 1
        chunk = pool[counts_at[g]:counts_at[g + 1]]
        for s in range(0, len(chunk), n):
            ngrams[(n, tuple(chunk[s:s + n]))] = ngram_indexes[ordinal]
            ordinal += 1
    width = max(ngram_indexes) + 1 if len(ngram_indexes) else 0
    rows = X.reshape(1, -1) if X.ndim == 1 else X
    out = np.zeros((rows.shape[0], width), dtype=np.float32)
    for b, row in enumerate(rows):
        tokens = [t if isinstance(t, str) else int(t) for t in row]
        for n in range(min_gram_length, max_gram_length + 1):
            for skip in range(0, (max_skip_count if n > 1 else 0) + 1):
                step = skip + 1
                for s in range(len(tokens)):
                    last = s + (n - 1) * step
                    if last >= len(tokens):
                        break
                    key = (n, tuple(tokens[s:last + 1:step]))
                    if key in ngrams:
                        out[b, ngrams[key]] += 1
    w = np.ones(width, dtype=np.float32)
    if weights is not None and len(weights):
        w = np.zeros(width, dtype=np.float32)
        for j, col in enumerate(ngram_indexes):
            w[col] = weights[j]
    if mode == "IDF":
        out = (out > 0).astype(np.float32) * w
    elif mode == "TFIDF":
        out = out * w
    return out.reshape(width) if X.ndim == 1 else out
