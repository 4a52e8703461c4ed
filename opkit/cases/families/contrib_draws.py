"""Case builders for com.microsoft contrib ops that join an ai.onnx family (shape, indices,
resample, signal): the family's hook hands an op of the com.microsoft domain to the builder here,
so the ai.onnx builders and their draws stay as they are.

Each builder draws what the contrib op's rules (taken from onnxruntime's contrib-op tests, see the
specs' ``source:``) need valid by construction, and leaves the rest to the generic steps.
"""

from __future__ import annotations

import numpy as np

from ...core.dtypes import np_dtype
from ..case import NotGeneratable
from ..context import ABSENT, Context, Draft, int_tensor, nan_to_zero, values
from .shape_draws import _BOOL, _dims, _int, _one, range_bounds

DOMAIN = "com.microsoft"


def _expand_dims(draw, ctx: Context) -> Draft:
    rank = _int(draw, 0, 4)
    shape = _dims(draw, rank)
    axis = _int(draw, -rank - 1, rank)  # a position of the rank + 1 output, negative from its end
    return Draft(inputs={"X": values(draw, ctx.elem("X"), shape), "axis": int_tensor("int32", axis, ())})


def _unfold_tensor(draw, ctx: Context) -> Draft:
    rank = _int(draw, 1, 4)
    shape = _dims(draw, rank)
    axis = _int(draw, -rank, rank - 1)
    shape[axis] = max(shape[axis], 1)  # a window of size >= 1 fits the axis
    size = _int(draw, 1, shape[axis])
    return Draft(attributes={"dim": ABSENT if axis == -1 and draw(_BOOL) else axis, "size": size,
                             "step": _one(draw, (ABSENT, 1, 2, 3))},
                 inputs={"input": values(draw, ctx.elem("input"), shape)})


def _range(draw, ctx: Context) -> Draft:
    elem = ctx.elem("start")
    start, limit, delta = range_bounds(draw, elem)
    dt = np_dtype(elem)

    def scalar(v):  # "Tensor(scalar, or dims=[1])": either form, drawn per input
        return np.asarray(v, dtype=dt).reshape(_one(draw, ((), (1,))))

    absent = delta == 1 and draw(_BOOL)  # delta defaults to 1
    return Draft(inputs={"start": scalar(start), "limit": scalar(limit), "delta": None if absent else scalar(delta)})


def _torch_embedding(draw, ctx: Context) -> Draft:
    n, m = _int(draw, 1, 4), _int(draw, 0, 3)
    shape = _dims(draw, _int(draw, 0, 3))
    count = int(np.prod(shape))
    idx = [_int(draw, 0, n - 1) for _ in range(count)]  # rows of weight: [0, N)
    draft = Draft(inputs={"weight": values(draw, ctx.elem("weight"), (n, m)),
                          "indices": int_tensor("int64", idx, tuple(shape))})
    # padding_idx and scale_grad_by_freq only shape the gradient: drawn given or left out
    draft.inputs["padding_idx"] = int_tensor("int64", _int(draw, -n, n - 1), ()) if draw(_BOOL) else None
    if draw(_BOOL):
        draft.inputs["scale_grad_by_freq"] = np.array(draw(_BOOL))
    else:
        draft.inputs["scale_grad_by_freq"] = None
    return draft


def _unique(draw, ctx: Context) -> Draft:
    elem = ctx.elem("x")
    pool = values(draw, elem, (_int(draw, 1, 4),))  # few distinct values: repeats occur
    if pool.dtype.kind == "f":  # rule C2: NaN equality is undefined
        pool = nan_to_zero(pool)
    elif pool.dtype.kind == "c":
        pool = np.where(np.isnan(pool), np.zeros_like(pool), pool)
    n = _int(draw, 0, 8)
    pick = np.array([_int(draw, 0, len(pool) - 1) for _ in range(n)], dtype=np.int64)
    return Draft(inputs={"x": pool[pick]})


def _pad(draw, ctx: Context, onnx_pad) -> Draft:
    """ai.onnx Pad's builder (pads within the axes, reflect below the axis size, a crop and a pad
    never on one axis outside constant mode), then the contrib forms: pads as [2r] or [1, 2r],
    the fill as the optional input ``value``, a scalar or a 1-element vector."""
    draft = onnx_pad(draw, ctx)
    pads = draft.inputs["pads"]
    if draw(_BOOL):
        draft.inputs["pads"] = pads.reshape(1, -1)
    if draw(_BOOL):
        fill = values(draw, ctx.elem("data"), ())
        draft.inputs["value"] = fill.reshape(_one(draw, ((), (1,))))
    else:
        draft.inputs["value"] = None
    return draft


def _murmur_hash3(draw, ctx: Context) -> Draft:
    """The output type follows ``positive`` (uint32 when 1, int32 when 0) and a node declares it:
    ``positive`` is set from the drawn binding of T2, the hashed X and the seed are drawn."""
    unsigned = ctx.binding.get("T2") == "tensor(uint32)"
    seed = _one(draw, (0, 0, 1, 42, 2 ** 31, 2 ** 32 - 1)) if draw(_BOOL) else _int(draw, 0, 2 ** 32 - 1)
    draft = Draft(attributes={"positive": (ABSENT if draw(_BOOL) else 1) if unsigned else 0,
                              "seed": ABSENT if seed == 0 and draw(_BOOL) else seed})
    draft.inputs["X"] = values(draw, ctx.elem("X"), _dims(draw, _int(draw, 0, 3)))
    return draft


def _ngram_repeat_block(draw, ctx: Context) -> Draft:
    """Token ids are vocabulary indices (rule: 0 <= id < vocab_size), drawn from a small alphabet so
    that n-grams repeat; ngram_size from 1 to a little past the sequence length."""
    batch, length, vocab = _int(draw, 0, 3), _int(draw, 0, 7), _int(draw, 1, 5)
    alphabet = _int(draw, 1, vocab)
    ids = [_int(draw, 0, alphabet - 1) for _ in range(batch * length)]
    return Draft(attributes={"ngram_size": _int(draw, 1, 4)},
                 inputs={"input_ids": int_tensor("int64", ids, (batch, length)),
                         "scores": values(draw, ctx.elem("scores"), (batch, vocab))})


def _grid_sample(draw, ctx: Context) -> Draft:
    """ai.onnx GridSample's builder (4-D: the doc says "only spatial (4-D)") with the input named
    Grid. Y is typed T2 but onnxruntime's schema gives it X's type (T1, a float type by rule T): a
    binding with T2 other than T1 would declare Y against that, and is declined."""
    from .resample import _grid_sample as onnx_grid_sample

    if ctx.output_elem("Y") != ctx.elem("X"):
        raise NotGeneratable("com.microsoft GridSample: Y has X's type (T2 must equal T1)")
    return onnx_grid_sample(draw, ctx, grid_name="Grid")


BUILDERS: dict[str, dict] = {
    "shape": {"ExpandDims": _expand_dims, "Range": _range, "UnfoldTensor": _unfold_tensor,
              "GridSample": _grid_sample},
    # MurmurHash3 maps values to 32-bit bucket indices (feature hashing, lookup tables)
    "indices": {"TorchEmbedding": _torch_embedding, "Unique": _unique, "MurmurHash3": _murmur_hash3,
                "NGramRepeatBlock": _ngram_repeat_block},
    "resample": {},
    "signal": {},
}


# contrib ops whose inputs the family's ai.onnx builder of the same op name already makes valid
# (com.microsoft GatherND-1 is ai.onnx GatherND-11 without negative indices: the builder reads
# that from the doc)
REUSED: dict[str, frozenset] = {"indices": frozenset({"GatherND"})}


def contrib_draw(family: str, draw, ctx: Context, onnx_builders: dict | None = None) -> Draft:
    """The com.microsoft builder of ``ctx.op`` in ``family`` (or the family's ai.onnx builder of
    the same op in ``onnx_builders``, for the ops listed in REUSED)."""
    builder = BUILDERS[family].get(ctx.op)
    if family == "shape" and ctx.op == "Pad":
        return _pad(draw, ctx, onnx_builders["Pad"])
    if builder is None and ctx.op in REUSED.get(family, ()):
        builder = (onnx_builders or {}).get(ctx.op)
    if builder is None:
        raise NotGeneratable(f"the {family} family has no com.microsoft builder for {ctx.op}-{ctx.since}")
    return builder(draw, ctx)
