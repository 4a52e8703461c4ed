"""Normalization family: BatchNormalization, InstanceNormalization, GroupNormalization, LRN,
MeanVarianceNormalization, LayerNormalization, RMSNormalization, the Global*Pool ops, and
com.microsoft SkipLayerNormalization, SkipSimplifiedLayerNormalization and EmbedLayerNormalization.

The hook draws the data tensor's shape (rank >= 2 where the op reads a channel axis, N x C x D1..Dn)
and derives every parameter tensor's shape from it: per-channel (C,) for BatchNormalization and
InstanceNormalization, (num_groups,) or (C,) for GroupNormalization (num_groups divides C), the
normalized shape X.shape[axis:] (or a broadcastable suffix of it) for LayerNormalization and
RMSNormalization. Variances are drawn non-negative; the data keeps its edge values.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ...core.onnx_types import ELEMENT_TYPE_CODES
from ..context import ABSENT, Context, Draft, by_domain_and_op, clip_finite, distinct_axes, finite_values, nan_to_zero, values

_EPSILON = st.sampled_from([ABSENT, 1e-5, 1e-3, 0.1, 0.0])
_MOMENTUM = st.sampled_from([ABSENT, 0.9, 0.0, 0.5, 1.0])


def _shape(draw, lo_rank: int, hi_rank: int, lo_dim: int = 0, hi_dim: int = 3, channel_lo: int = 1) -> list[int]:
    """N x C x D1..Dn: a rank in [lo_rank, hi_rank]; the channel axis (index 1) at least
    ``channel_lo``, the other dims in [lo_dim, hi_dim] (1 first, 0 possible)."""
    rank = draw(st.integers(lo_rank, hi_rank))
    shape = [draw(st.integers(lo_dim, hi_dim)) if draw(st.integers(0, 4)) == 0 else draw(st.integers(1, hi_dim))
             for _ in range(rank)]
    if rank >= 2:
        shape[1] = max(shape[1], channel_lo)
    return shape


def _nonneg(draw, elem: str, shape):
    import numpy as np

    arr = finite_values(draw, elem, shape)
    with np.errstate(all="ignore"):
        return np.abs(arr).astype(arr.dtype)


def _batch_norm(draw, ctx: Context) -> Draft:
    attrs: dict = {"epsilon": draw(_EPSILON), "momentum": draw(_MOMENTUM)}
    n_outputs = 0
    if ctx.has_attribute("training_mode"):
        # ONNX allows the running statistics outputs only in training mode: an inference case
        # declares Y alone
        training = draw(st.booleans())
        attrs["training_mode"] = 1 if training else draw(st.sampled_from([ABSENT, 0]))
        n_outputs = 0 if training else 1
    else:
        # opset 1-9 have no training_mode: the outputs declared choose the mode ("Output case #1:
        # Y, mean, var, saved_mean, saved_var (training mode); Output case #2: Y (test mode)"). The
        # kernel computes test mode (saved_var is not defined beyond its name), so Y alone is declared
        n_outputs = 1
    spatial_free = False
    if ctx.has_attribute("spatial"):
        # spatial = 0 gives scale/B/mean/var the shape C x D1 .. Dn; drawn only for N x C inputs,
        # where both readings coincide
        spatial_free = True
    x_shape = _shape(draw, 2, 5)
    if spatial_free:
        if len(x_shape) == 2:
            attrs["spatial"] = draw(st.sampled_from([ABSENT, 0, 1]))
        else:
            attrs["spatial"] = draw(st.sampled_from([ABSENT, 1]))
    if ctx.has_attribute("is_test"):
        # is_test = 0 (the default) asks opset 1/6 for training statistics, which the reference
        # kernel does not compute: test mode only
        attrs["is_test"] = 1
    if ctx.has_attribute("consumed_inputs"):  # legacy in-place hint, required in opset 1: mean and var
        attrs["consumed_inputs"] = [0, 0, 0, 1, 1] if ctx.attribute("consumed_inputs").required else ABSENT
    c = x_shape[1]
    names = [p.name for p in ctx.version.inputs]  # X, scale, B, mean|input_mean, var|input_var
    x, scale, bias, mean, var = names
    inputs = {x: values(draw, ctx.elem(x), x_shape),
              scale: finite_values(draw, ctx.elem(scale), (c,)),
              bias: finite_values(draw, ctx.elem(bias), (c,)),
              mean: finite_values(draw, ctx.elem(mean), (c,)),
              var: _nonneg(draw, ctx.elem(var), (c,))}
    return Draft(attrs, inputs, n_outputs)


def _instance_norm(draw, ctx: Context) -> Draft:
    x_shape = _shape(draw, 3, 5)
    c = x_shape[1]
    attrs = {"epsilon": draw(_EPSILON)}
    if ctx.has_attribute("consumed_inputs"):
        attrs["consumed_inputs"] = ABSENT
    elem = ctx.elem("input")
    return Draft(attrs, {"input": _squares_in_range(values(draw, elem, x_shape)),
                         "scale": finite_values(draw, elem, (c,)), "B": finite_values(draw, elem, (c,))})


def _squares_in_range(x):
    """x with its finite values clipped so that their squares sum within the type's range (rule
    SQUARES of InstanceNormalization and MeanVarianceNormalization: a variance computed in the type
    overflows otherwise, and the result depends on the precision); infinities and NaN stay."""
    import numpy as np

    from ...kernels.lib import sampling_type_max

    wide = x.astype(np.float64)
    top = sampling_type_max(x)
    if float(np.sum(np.square(np.where(np.isfinite(wide), wide, 0.0)))) <= top:
        return x
    return clip_finite(x, np.sqrt(top / (2.0 * max(1, x.size))))


def _group_norm(draw, ctx: Context) -> Draft:
    groups = draw(st.integers(1, 3))
    per_group = draw(st.integers(1, 2))
    x_shape = _shape(draw, 2, 5)
    # the function body reshapes X to [N, num_groups, -1], which Reshape cannot infer for N = 0
    # (rule BATCH): an empty batch is undefined
    x_shape[0] = max(x_shape[0], 1)
    c = groups * per_group
    x_shape[1] = c
    attrs = {"num_groups": groups, "epsilon": draw(_EPSILON)}
    if ctx.has_attribute("stash_type"):
        attrs["stash_type"] = draw(st.sampled_from([ABSENT, 1]))
    # opset 18: scale and bias hold one value per group; opset 21: one per channel
    n_affine = groups if ctx.since < 21 else c
    elem = ctx.elem("X")
    return Draft(attrs, {"X": values(draw, elem, x_shape), "scale": finite_values(draw, elem, (n_affine,)),
                         "bias": finite_values(draw, elem, (n_affine,))})


def _lrn(draw, ctx: Context) -> Draft:
    x_shape = _shape(draw, 3, 5) if draw(st.integers(0, 2)) else _shape(draw, 4, 4)
    size = draw(st.sampled_from([1, 3, 5, 2, 4]))
    attrs = {"size": size,
             "alpha": draw(st.sampled_from([ABSENT, 1e-4, 0.5, 1.0])),
             "beta": draw(st.sampled_from([ABSENT, 0.75, 0.5, 1.0])),
             "bias": draw(st.sampled_from([ABSENT, 1.0, 2.0, 0.5]))}
    return Draft(attrs, {"X": values(draw, ctx.elem("X"), x_shape)})


def _mvn(draw, ctx: Context) -> Draft:
    if draw(st.booleans()):
        x_shape = _shape(draw, 4, 5)  # the default axes [0, 2, 3] need rank >= 4
        # opset 13's function body reads the attribute without its default: ONNX infers nothing
        # when axes is left out, so the default is written explicitly there
        axes = ABSENT if ctx.since < 13 else [0, 2, 3]
    else:
        x_shape = _shape(draw, 1, 5)
        axes = distinct_axes(draw, len(x_shape), min_size=1, allow_negative=True)
    return Draft({"axes": axes}, {"X": _squares_in_range(values(draw, ctx.elem("X"), x_shape))})


def _affine_shape(draw, norm_shape: list[int]) -> list[int]:
    """A shape unidirectionally broadcastable to ``norm_shape``: the whole shape, a suffix, or
    with some dims replaced by 1."""
    k = draw(st.integers(0, len(norm_shape))) if draw(st.integers(0, 2)) == 0 else len(norm_shape)
    out = list(norm_shape[len(norm_shape) - k:])
    if out and draw(st.integers(0, 3)) == 0:
        out = [1 if draw(st.booleans()) else d for d in out]
    return out


def _stash_type(draw, ctx: Context):
    """LayerNormalization's ``stash_type`` is the element type of its Mean and InvStdDev outputs
    (type parameter U): it must name U's binding, or ONNX's inference refuses the model. Ops whose
    outputs do not carry it (RMSNormalization) take the default float or say so explicitly."""
    stashed = [p for p in ctx.version.outputs[1:] if p.type in ctx.binding]
    code = ELEMENT_TYPE_CODES[ctx.output_elem(stashed[0].name)] if stashed else 1
    return ABSENT if code == 1 and draw(st.booleans()) else code


def _layer_norm(draw, ctx: Context) -> Draft:
    x_shape = _shape(draw, 1, 5)
    rank = len(x_shape)
    axis = draw(st.integers(-rank, rank - 1))
    a = axis + rank if axis < 0 else axis
    if 0 in x_shape[a:] and 0 not in x_shape[:a]:  # LayerNormalization and RMSNormalization
        # statistics of an empty normalized slice are undefined (rule EMPTY): its zeros made 1;
        # a 0 before the axis (no slice at all) is kept
        x_shape[a:] = [max(d, 1) for d in x_shape[a:]]
    attrs = {"axis": ABSENT if axis == -1 and draw(st.booleans()) else axis, "epsilon": draw(_EPSILON)}
    if ctx.has_attribute("stash_type"):
        attrs["stash_type"] = _stash_type(draw, ctx)
    names = [p.name for p in ctx.version.inputs]
    scale_name = names[1]
    inputs = {"X": values(draw, ctx.elem("X"), x_shape),
              scale_name: finite_values(draw, ctx.elem(scale_name), _affine_shape(draw, x_shape[a:]))}
    if len(names) > 2:  # LayerNormalization's optional bias
        b = names[2]
        inputs[b] = finite_values(draw, ctx.elem(b), _affine_shape(draw, x_shape[a:])) if draw(st.booleans()) else None
    return Draft(attrs, inputs)


def _global_pool(draw, ctx: Context) -> Draft:
    x_shape = _shape(draw, 3, 5)
    if ctx.op != "GlobalLpPool":
        # the max and the average of a window of no element are undefined (rule EMPTY): spatial
        # axes of 1 or more; N and C may still be 0. GlobalLpPool's norm of nothing is 0: kept.
        x_shape[2:] = [max(d, 1) for d in x_shape[2:]]
    attrs = {}
    if ctx.has_attribute("p"):
        p = draw(st.sampled_from([ABSENT, 1, 2, 3]))
        if p is not ABSENT and ctx.attribute("p").type == "float":
            p = float(p)
        attrs["p"] = p
    x = values(draw, ctx.elem("X"), x_shape)
    if ctx.op == "GlobalMaxPool":  # the max of a window holding NaN is undefined (rule NAN)
        x = nan_to_zero(x)
    if ctx.op == "GlobalAveragePool" and x.size:
        x = _average_in_range(x)
    return Draft(attrs, {"X": x})


def _average_in_range(x):
    """GlobalAveragePool's X with its finite values clipped to max / (2 * window size) when a window's
    sum of |finite values| would pass the type's max (rule RANGE: whether a partial sum overflows
    depends on the summation order); infinities and NaN stay."""
    import numpy as np

    from ...kernels.lib import sampling_type_max

    wide = x.astype(np.float64)
    top = sampling_type_max(x)
    if np.all(np.sum(np.where(np.isfinite(wide), np.abs(wide), 0.0), axis=tuple(range(2, x.ndim))) <= top):
        return x
    return clip_finite(x, top / (2.0 * int(np.prod(x.shape[2:]))))


def _skip_layer_norm(draw, ctx: Context) -> Draft:
    """com.microsoft SkipLayerNormalization / SkipSimplifiedLayerNormalization: input (B, S, H) (or
    (T, H) where the version's text allows 2-D), skip of input's shape, (1, S, H) or (S, H), and
    gamma / beta / bias of (H,), H >= 1 (the statistics of an empty row are undefined)."""
    two_d = "2D" in (ctx.input("input").doc or "") and draw(st.integers(0, 2)) == 0
    h = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 3)), h] if two_d else [draw(st.integers(0, 2)), draw(st.integers(1, 3)), h]
    skip = shape if two_d else draw(st.sampled_from([shape, [1] + shape[1:], shape[1:]]))
    elem = ctx.elem("input")
    inputs = {"input": values(draw, elem, shape), "skip": values(draw, elem, skip),
              "gamma": finite_values(draw, elem, (h,))}
    for name in ("beta", "bias"):
        if ctx.has_input(name):
            inputs[name] = finite_values(draw, elem, (h,)) if draw(st.booleans()) else None
    return Draft({"epsilon": draw(st.sampled_from([ABSENT, 1e-5, 1e-3, 0.1]))}, inputs)


def _embed_layer_norm(draw, ctx: Context) -> Draft:
    """com.microsoft EmbedLayerNormalization: ids (B, S) within the embedding tables, segment ids and
    table together or neither, position ids (B, S) or (1, S) or none (then S positions in the table), a
    mask of ones then zeros per row (where the text's two readings of mask_index agree)."""
    import numpy as np

    from ..draws import _SEED

    rng = np.random.default_rng(draw(_SEED))
    b, s, h = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    vocab, n_pos, n_seg = draw(st.integers(1, 5)), s + draw(st.integers(0, 2)), draw(st.integers(1, 3))
    elem, ids = ctx.elem("word_embedding"), ctx.elem("input_ids")

    def table(n):
        return finite_values(draw, elem, (n, h))

    inputs = {"input_ids": rng.integers(0, vocab, (b, s)).astype(ids), "word_embedding": table(vocab),
              "position_embedding": table(n_pos), "gamma": finite_values(draw, elem, (h,)),
              "beta": finite_values(draw, elem, (h,))}
    segmented = draw(st.booleans())
    inputs["segment_ids"] = rng.integers(0, n_seg, (b, s)).astype(ids) if segmented else None
    inputs["segment_embedding"] = table(n_seg) if segmented else None
    if draw(st.booleans()):
        lengths = rng.integers(0, s + 1, b)
        inputs["mask"] = (np.arange(s)[None, :] < lengths[:, None]).astype(ids)
    else:
        inputs["mask"] = None
    form = draw(st.sampled_from(["none", "full", "one"]))
    inputs["position_ids"] = (None if form == "none"
                              else rng.integers(0, n_pos, (b if form == "full" else 1, s)).astype(ids))
    attrs = {"epsilon": draw(st.sampled_from([ABSENT, 1e-5, 1e-3])),
             "mask_index_type": draw(st.sampled_from([ABSENT, 1]))}
    return Draft(attrs, inputs)


_CONTRIB = {"EmbedLayerNormalization": _embed_layer_norm, "SkipLayerNormalization": _skip_layer_norm,
            "SkipSimplifiedLayerNormalization": _skip_layer_norm}


_BUILDERS = {
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm,
    "GroupNormalization": _group_norm,
    "LRN": _lrn,
    "MeanVarianceNormalization": _mvn,
    "LayerNormalization": _layer_norm,
    "RMSNormalization": _layer_norm,
    "GlobalLpPool": _global_pool,
    "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool,
}


draw = by_domain_and_op("normalization", _BUILDERS, _CONTRIB)
