"""Compute helpers of assorted com.microsoft contrib ops (ComplexMul, MurmurHash3, ...).

Their semantics come from onnxruntime's contrib-op docs and tests (each spec's ``source:`` says
which); the helpers compute in double where the op is arithmetic and round once to the output type.
"""

from __future__ import annotations

import numpy as np

__all__ = ["complex_mul", "murmur3_32", "murmur_hash3"]


def complex_mul(A, B, conj: bool = False) -> np.ndarray:
    """ComplexMul / ComplexMulConj: the last axis of A and B holds (real, imaginary) pairs, the
    leading axes broadcast; C = A * B, or A * conj(B) with ``conj``."""
    a = A.astype(np.float64)
    b = B.astype(np.float64)
    ar, ai = a[..., 0], a[..., 1]
    br, bi = b[..., 0], (-b[..., 1] if conj else b[..., 1])
    with np.errstate(all="ignore"):
        c = np.stack([ar * br - ai * bi, ar * bi + ai * br], axis=-1)
    return c.astype(A.dtype)


_C1, _C2 = 0xCC9E2D51, 0x1B873593
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def murmur3_32(key: bytes, seed: int) -> int:
    """MurmurHash3_x86_32 of ``key`` (Austin Appleby's reference algorithm): 4-byte little-endian
    blocks, then the 1-3 byte tail, then the length and the final mix; an unsigned 32-bit result."""
    h = seed & _M32
    n = len(key)
    whole = n - n % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (_rotl32((k * _C1) & _M32, 15) * _C2) & _M32
        h = (_rotl32(h ^ k, 13) * 5 + 0xE6546B64) & _M32
    tail = key[whole:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= (_rotl32((k * _C1) & _M32, 15) * _C2) & _M32
    return _fmix32(h ^ n)


def murmur_hash3(X, *, positive: int = 1, seed: int = 0) -> np.ndarray:
    """MurmurHash3 (com.microsoft): each element hashed on its own, a number by the bytes of its
    little-endian machine representation (4 bytes for 32-bit types, 8 for 64-bit ones), a string by
    its UTF-8 bytes; uint32 output when ``positive`` else the same bits as int32."""
    flat = X.reshape(-1)
    if X.dtype == object:
        keys = [(s.encode("utf-8") if isinstance(s, str) else bytes(s)) for s in flat]
    else:
        raw = np.ascontiguousarray(flat).astype(flat.dtype.newbyteorder("<"), copy=False)
        keys = [raw[i:i + 1].tobytes() for i in range(raw.size)]
    out = np.array([murmur3_32(k, int(seed)) for k in keys], dtype=np.uint32).reshape(X.shape)
    return out if positive else out.view(np.int32)
