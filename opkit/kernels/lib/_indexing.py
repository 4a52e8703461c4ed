"""Indexing ops: GatherND, ScatterElements, ScatterND, TensorScatter, TopK, Unique."""

from __future__ import annotations

import numpy as np

from ._reduction import REDUCERS


def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    b = int(batch_dims)
    batch_shape = data.shape[:b]
    n_batch = int(np.prod(batch_shape, dtype=np.int64))
    q = indices.shape[-1]
    d = data.reshape((n_batch,) + data.shape[b:])
    n_tuples = int(np.prod(indices.shape[b:-1], dtype=np.int64))  # not -1: ambiguous for an empty batch
    idx = indices.reshape((n_batch, n_tuples, q)).astype(np.int64)
    dims = np.array(data.shape[b:b + q], dtype=np.int64)
    idx = np.where(idx < 0, idx + dims, idx)
    out = np.stack([d[i][tuple(idx[i].T)] for i in range(n_batch)]) if n_batch else \
        np.zeros((0,) + idx.shape[1:2] + data.shape[b + q:], dtype=data.dtype)
    return out.reshape(indices.shape[:-1] + data.shape[b + q:])


def scatter_elements(data, indices, updates, axis, reduction) -> np.ndarray:
    axis = axis + data.ndim if axis < 0 else axis
    out = data.copy()
    idx = np.where(indices < 0, indices + data.shape[axis], indices).astype(np.int64)
    grids = list(np.indices(idx.shape, sparse=False))
    grids[axis] = idx
    key = tuple(grids)
    if reduction in (None, "none"):
        out[key] = updates
    else:
        REDUCERS[reduction].at(out, key, updates)
    return out


def scatter_nd(data, indices, updates, reduction) -> np.ndarray:
    out = data.copy()
    q = indices.shape[-1]
    idx = indices.reshape(-1, q).astype(np.int64)
    upd = updates.reshape((idx.shape[0],) + data.shape[q:])
    fn = None if reduction in (None, "none") else REDUCERS[reduction]
    for i in range(idx.shape[0]):
        key = tuple(idx[i])
        out[key] = upd[i] if fn is None else fn(out[key], upd[i])
    return out


def topk_core(x, k, axis, largest, sorted_) -> tuple[np.ndarray, np.ndarray]:
    """Top k along ``axis``; among equal values the lower index comes first."""
    k = int(np.asarray(k).reshape(-1)[0])
    axis = axis + x.ndim if axis < 0 else axis
    if largest:
        # descending with ties in ascending index: stable ascending sort of the reversed axis,
        # read backwards, mapped back to original positions
        n = x.shape[axis]
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, idx, axis=axis)
    return values, idx.astype(np.int64)


def _unique_object_slices(x, axis):
    """``np.unique(x, axis=axis, return_index=True, return_inverse=True, return_counts=True)`` for an
    object (string) array: the distinct slices along ``axis``, sorted lexicographically by their
    flattened values as NumPy sorts them."""
    moved = np.moveaxis(x, axis, 0)
    rows = [tuple(np.asarray(moved[i], dtype=object).reshape(-1).tolist()) for i in range(moved.shape[0])]
    keys = sorted(set(rows))
    pos = {k: i for i, k in enumerate(keys)}
    inverse = np.array([pos[r] for r in rows], dtype=np.int64)
    first = np.array([rows.index(k) for k in keys], dtype=np.int64)
    counts = np.bincount(inverse, minlength=len(keys))
    return np.moveaxis(moved[first], 0, axis), first, inverse, counts


def unique_core(x, axis, sorted_):
    if axis is None:
        flat = x.reshape(-1)
        values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                                   return_counts=True)
    elif x.dtype == object:  # strings: np.unique takes no axis for object arrays
        axis = axis + x.ndim if axis < 0 else axis
        values, first, inverse, counts = _unique_object_slices(x, axis)
    else:
        axis = axis + x.ndim if axis < 0 else axis
        values, first, inverse, counts = np.unique(x, axis=axis, return_index=True, return_inverse=True,
                                                   return_counts=True)
    inverse = inverse.reshape(-1)
    if not sorted_:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values = values[order] if axis is None else np.take(values, order, axis=axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    i64 = np.int64
    return values, first.astype(i64), inverse.astype(i64), counts.astype(i64)


def tensor_scatter(past_cache, update, write_indices=None, mode="linear", axis=-2):
    out = past_cache.copy()
    axis = axis + out.ndim if axis < 0 else axis
    batch = out.shape[0]
    idx = np.zeros(batch, dtype=np.int64) if write_indices is None else np.asarray(write_indices).astype(np.int64)
    n = update.shape[axis]
    length = out.shape[axis]
    for b in range(batch):
        pos = idx[b] + np.arange(n)
        if mode == "circular":
            pos = pos % length
        key = [slice(None)] * (out.ndim - 1)
        key[axis - 1] = pos
        out[b][tuple(key)] = update[b]
    return out
