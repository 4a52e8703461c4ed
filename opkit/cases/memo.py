"""Memoizing on the identity of spec-model arguments (loaded specs are immutable, not hashable)."""

from __future__ import annotations

import functools


def cache_by_identity(fn):
    """Memoize on the identity of spec-model arguments. Loaded specs are immutable but not always
    hashable (attribute defaults can be lists or dicts: MeanVarianceNormalization's ``axes``), so
    functools.lru_cache cannot take them. The arguments are kept alive with the result, so an id
    is never reused while its entry exists."""
    cache: dict = {}

    def key_of(value):
        return value if isinstance(value, (str, int, float, bool, type(None))) or \
            (isinstance(value, tuple) and all(isinstance(v, (str, int, tuple)) for v in value)) else ("id", id(value))

    @functools.wraps(fn)
    def wrapper(*args):
        key = tuple(key_of(a) for a in args)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = (args, fn(*args))
        return hit[1]

    wrapper.cache_clear = cache.clear
    return wrapper
