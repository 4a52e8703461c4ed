"""Window ops: convolutions, pooling, unpooling, Col2Im and RoI pooling.

Every case starts from its geometry: the number of spatial axes (mostly 2, also 1 and 3), the
kernel, strides, dilations and the padding mode (explicit ``pads`` or ``auto_pad`` NOTSET /
SAME_UPPER / SAME_LOWER / VALID, ``ceil_mode``), drawn first; the input's spatial sizes are then
derived so that every output size is at least 1 (the smallest valid sizes included). Channels
follow ``group`` (which divides C and M), weights get the kernel's shape, biases one value per
output channel, quantization parameters are per tensor or per output channel, MaxUnpool's indices
come from a real max pooling, Col2Im's column count L from the block geometry, and RoIs stay
inside (or around) the image with batch indices in range.

Sizes stay small (spatial <= ~7, channels <= 4, batch <= 2): the reference kernels are NumPy
loops and a case must run well within the oracle's time limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from ...core.dtypes import np_dtype
from ...kernels.lib import conv_transpose_in_range, pool, sampling_abs_max, sampling_type_max, window_geometry
from ...core.onnx_types import INT_RANGES
from ..context import ABSENT, Context, Draft, by_op, clip_finite, finite_values, int_tensor, nan_to_zero, values

_BOOL = st.booleans()
_SPATIAL = st.sampled_from((2, 1, 3))  # shrinks towards 2-D
_EXPLICIT = st.sampled_from((ABSENT, "NOTSET"))
_AUTO = st.sampled_from(("SAME_UPPER", "SAME_LOWER", "VALID"))
_TRI = st.sampled_from((ABSENT, 0, 1))
_TRI_MOSTLY_ONE = st.sampled_from((ABSENT, 0, 1, 1))  # a flag whose 1 is the case worth asking
_SEED = st.integers(0, 2**32 - 1)


def _batch(draw) -> int:
    """1 or 2, and now and then 0 (an empty batch is a valid input of every window op)."""
    r = draw(st.integers(0, 11))
    return 0 if r == 11 else 1 + r % 2


@dataclass
class Geometry:
    """A drawn window geometry; ``attrs`` holds what goes on the node (``ABSENT``: not given)."""

    n: int
    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[int]  # explicit pads (begin..., end...), zeros unless auto_pad is NOTSET
    auto_pad: str
    ceil_mode: int
    sizes: list[int] = field(default_factory=list)  # the input's spatial sizes
    attrs: dict = field(default_factory=dict)

    def span(self, i: int) -> int:
        return (self.kernel[i] - 1) * self.dilations[i] + 1


def _auto_pad(draw, ctx: Context):
    """auto_pad absent or NOTSET (explicit padding) about half the time, else SAME_UPPER,
    SAME_LOWER or VALID."""
    if not ctx.has_attribute("auto_pad"):
        return ABSENT
    return draw(_EXPLICIT) if draw(_BOOL) is False else draw(_AUTO)


def _ints_attr(draw, ctx: Context, name: str, n: int, lo: int, hi: int, default: int) -> tuple[list[int], object]:
    """(effective values, node attribute) for a per-axis ints attribute: absent (the default) or
    a list of ``n`` values in [lo, hi]."""
    if not ctx.has_attribute(name) or not draw(_BOOL):
        return [default] * n, ABSENT
    vals = [draw(st.integers(lo, hi)) for _ in range(n)]
    return vals, vals


def geometry(draw, ctx: Context, *, n: int | None = None, pool: bool = False, extra: int = 3) -> Geometry:
    """Kernel, strides, dilations, padding mode and the smallest-first input sizes that give every
    output axis a size >= 1 (``extra`` more at most). ``pool``: pads stay below the kernel size
    (what pooling runtimes require) and no window covers padding only; convolutions take pads up
    to 2 whatever the kernel."""
    n = n if n is not None else draw(_SPATIAL)
    # about one pooling draw in four is a corner: windows reaching into the padding and past the
    # input's end (kernel >= 2, stride 2, explicit pads, ceil_mode 1), where a pooling's divisor
    # and its empty windows are decided; drawn freely, such a window was one draw in a hundred
    # (onnxruntime 1.16 averaged AveragePool's partial last window over 2 with count_include_pad)
    corner = pool and ctx.has_attribute("ceil_mode") and ctx.has_attribute("pads") and draw(st.integers(0, 3)) == 3
    kmax = 3 if n < 3 else 2
    kernel = [draw(st.integers(2 if corner else 1, kmax)) for _ in range(n)]
    strides, s_attr = _ints_attr(draw, ctx, "strides", n, 1, 3, 1)
    if corner:
        strides = s_attr = [2] * n
    dilations, d_attr = _ints_attr(draw, ctx, "dilations", n, 1, 2, 1)
    mode = draw(_EXPLICIT) if corner and ctx.has_attribute("auto_pad") else _auto_pad(draw, ctx)
    explicit = mode in (ABSENT, "NOTSET")
    pads, p_attr = [0] * (2 * n), ABSENT
    if explicit and ctx.has_attribute("pads") and (corner or draw(st.integers(0, 3)) > 0):
        pads = [draw(st.integers(0, (kernel[i % n] - 1) if pool else 2)) for i in range(2 * n)]
        p_attr = pads
    # ceil_mode with auto_pad: the texts' formulas and ONNX's inference disagree (VALID, 5 wide,
    # kernel 3, stride 3: 1 by the text, 2 by inference and onnxruntime; onnx's reference
    # evaluator refuses it), so ceil_mode 1 goes with explicit padding only
    ceil = ABSENT
    if corner:
        ceil = 1
    elif ctx.has_attribute("ceil_mode"):
        ceil = draw(_TRI_MOSTLY_ONE) if explicit else draw(st.sampled_from((ABSENT, 0)))
    g = Geometry(n, kernel, strides, dilations, pads, mode or "NOTSET", int(ceil or 0))
    g.attrs = {"strides": s_attr, "dilations": d_attr, "pads": p_attr}
    if ctx.has_attribute("auto_pad"):
        g.attrs["auto_pad"] = mode
    if ctx.has_attribute("ceil_mode"):
        g.attrs["ceil_mode"] = ceil
    for i in range(n):
        if g.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            lo = 1
        elif g.auto_pad == "VALID":
            lo = g.span(i)
        else:
            lo = max(1, g.span(i) - pads[i] - pads[i + n])
        g.sizes.append(lo + draw(st.integers(0, extra if n < 3 else min(extra, 2))))
    _settle(g, ctx, pool)
    return g


def _settle(g: Geometry, ctx: Context, pool: bool) -> None:
    """Grow input sizes (by at most two, deterministically) out of the corners the texts leave
    undefined or contradict: a pooling window that covers padding only (its maximum, average and
    index are undefined), pooling SAME padding the texts' formula makes negative (no padding, or
    a crop? onnxruntime refuses it), and, for versions whose text predates the rule "sliding
    windows that would start in the right padded region are ignored" (opset 22), a ceil_mode
    window that starts past the input (ONNX's inference for them counts it; onnxruntime and the
    kernel drop it)."""
    rule = "right padded region" in (ctx.version.doc or "")
    for i in range(g.n):
        for _ in range(8):
            if _settled(g, i, pool, rule):
                break
            g.sizes[i] += 1


def _settled(g: Geometry, i: int, pool: bool, rule: bool) -> bool:
    """Whether spatial axis ``i`` of ``g`` is out of the corners ``_settle`` avoids."""
    size, s, d, k = g.sizes[i], g.strides[i], g.dilations[i], g.kernel[i]
    (o,), (b,), _, _, _ = window_geometry([size], [k], [s], [g.pads[i], g.pads[i + g.n]], [d],
                                          g.auto_pad, g.ceil_mode)
    ok = True
    if g.ceil_mode and not rule and g.auto_pad == "NOTSET":
        num = size + g.pads[i] + g.pads[i + g.n] - g.span(i)
        ok = (-(-num // s)) * s < size + g.pads[i]  # the formula's last window starts inside
    if pool and ok and g.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        ok = (o - 1) * s + g.span(i) - size >= 0
    if pool and ok:
        ok = all(any(0 <= t * s - b + j * d < size for j in range(k)) for t in range(o))
    return ok


def edge_holds(case, version) -> bool:
    """What ``geometry`` keeps by construction, for a case an edge changed (see
    ``families.edge_check``): every output axis at least 1 wide, and for pooling pads below the
    kernel and none of ``_settle``'s corners (a window over padding only, negative SAME padding, a
    ceil_mode window starting past the input where the text predates the rule on it)."""
    if case.op not in ("AveragePool", "MaxPool", "LpPool", "Conv", "ConvInteger"):
        # what the other builders keep consistent (ConvTranspose's output_shape and output_padding,
        # MaxUnpool's output_shape, DeformConv's offsets, Col2Im's blocks, RoI boxes) is stated
        # nowhere else: no relational variant for them
        return False
    attrs = case.kernel_attributes()
    inputs = dict(case.inputs)
    x = inputs.get("X", inputs.get("x"))
    if not isinstance(x, np.ndarray) or x.ndim < 3:
        return True
    n = x.ndim - 2
    kernel = attrs.get("kernel_shape")
    if kernel is None:
        w = inputs.get("W", inputs.get("w"))
        kernel = list(w.shape[2:]) if isinstance(w, np.ndarray) and w.ndim == x.ndim else None
    if kernel is None or len(kernel) != n:
        return True
    auto_pad = attrs.get("auto_pad") or "NOTSET"
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    pads = list(attrs.get("pads") or [0] * (2 * n))
    g = Geometry(n, [int(k) for k in kernel], list(attrs.get("strides") or [1] * n),
                 list(attrs.get("dilations") or [1] * n), [int(p) for p in pads], auto_pad,
                 int(attrs.get("ceil_mode") or 0), sizes=list(x.shape[2:]))
    pool = case.op.endswith("Pool")
    if pool and any(p >= g.kernel[i % n] for i, p in enumerate(g.pads)):
        return False
    if any(o < 1 for o in output_sizes(g)):
        return False
    rule = "right padded region" in (version.doc or "")
    return all(_settled(g, i, pool, rule) for i in range(n))


def output_sizes(g: Geometry) -> list[int]:
    """The output spatial sizes of the geometry (ONNX's formulas, as the kernels compute them)."""
    return window_geometry(g.sizes, g.kernel, g.strides, g.pads, g.dilations, g.auto_pad, g.ceil_mode)[0]


def _group_channels(draw, ctx: Context, cap: int = 4) -> tuple[int, int, int]:
    """(group, C, M): group divides both channel counts, which stay small."""
    group = draw(st.integers(1, 3)) if ctx.has_attribute("group") else 1
    per = max(1, cap // group)
    return group, group * draw(st.integers(1, per)), group * draw(st.integers(1, per))


def _group_attr(draw, group: int):
    return ABSENT if group == 1 and draw(_BOOL) else group


def _kernel_shape_attr(draw, ctx: Context, kernel: list[int]):
    """Conv ops infer the kernel from W when ``kernel_shape`` is absent: leave it out now and then."""
    if not ctx.has_attribute("kernel_shape") or draw(_BOOL):
        return ABSENT
    return list(kernel)


def _zero_point(draw, elem: str, per_channel: int | None):
    """A zero point of ``elem``: a scalar (rank 0, now and then shape [1]) or, with
    ``per_channel``, a 1-D tensor of that many values; small values around 0, now and then the
    type's middle or ends."""
    lo, hi = INT_RANGES[elem]
    one = st.integers(max(lo, -3), min(hi, 3)) | st.sampled_from(sorted({lo, hi, (lo + hi + 1) // 2}))
    if per_channel:
        return int_tensor(elem, [draw(one) for _ in range(per_channel)])
    v = draw(one)
    return int_tensor(elem, [v], (1,)) if draw(st.integers(0, 4)) == 4 else int_tensor(elem, v)


def _scale(draw, count: int | None = None) -> np.ndarray:
    """Positive float32 scale(s): a scalar, or a 1-D tensor of ``count`` values."""
    pick = st.sampled_from((1.0, 0.5, 0.25, 2.0, 0.1, 0.003921568859368563, 3.0))
    if count:
        return np.asarray([draw(pick) for _ in range(count)], dtype=np.float32)
    return np.asarray(draw(pick), dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# convolutions


def _conv(draw, ctx: Context) -> Draft:
    g = geometry(draw, ctx)
    group, C, M = _group_channels(draw, ctx)
    N = _batch(draw)
    elem = ctx.elem("X")
    attrs = dict(g.attrs, group=_group_attr(draw, group), kernel_shape=_kernel_shape_attr(draw, ctx, g.kernel))
    inputs = {
        "X": values(draw, elem, (N, C, *g.sizes)),
        "W": finite_values(draw, elem, (M, C // group, *g.kernel)),
        "B": values(draw, elem, (M,)) if draw(_BOOL) else None,
    }
    _conv_sums_in_range(inputs, (C // group) * int(np.prod(g.kernel)))
    return Draft(attrs, inputs)


def _conv_sums_in_range(inputs: dict, terms: int) -> None:
    """Clip the finite X and B values (in place) where Conv's rule RANGE could fail (see
    ``_clip_sum_terms``)."""
    X, W, B = inputs["X"], inputs["W"], inputs["B"]
    if X.dtype.kind not in "fV" or not X.size or not W.size:
        return
    top = sampling_type_max(X)
    wmax = max(1.0, sampling_abs_max(W))
    if sampling_abs_max(X) * wmax * terms + (sampling_abs_max(B) if B is not None else 0.0) <= top / 2:
        return
    _clip_sum_terms(inputs, terms)


def _clip_sum_terms(inputs: dict, terms: int) -> None:
    """Clip the finite X and B values (in place) to |x| <= max / (4 * terms * max|W|) and |B| <=
    max / 4: then no product or partial sum of a convolution's finite terms overflows, in any
    summation order (infinities and NaN stay: alone they give the same result in every order)."""
    X, W, B = inputs["X"], inputs["W"], inputs["B"]
    top = sampling_type_max(X)
    wmax = max(1.0, sampling_abs_max(W))
    inputs["X"] = clip_finite(X, top / (4.0 * terms * wmax))
    if B is not None:
        inputs["B"] = clip_finite(B, top / 4.0)


def _conv_integer(draw, ctx: Context) -> Draft:
    g = geometry(draw, ctx)
    group, C, M = _group_channels(draw, ctx)
    N = _batch(draw)
    xe, we = ctx.elem("x"), ctx.elem("w")
    attrs = dict(g.attrs, group=_group_attr(draw, group), kernel_shape=_kernel_shape_attr(draw, ctx, g.kernel))
    inputs = {"x": values(draw, xe, (N, C, *g.sizes)), "w": values(draw, we, (M, C // group, *g.kernel))}
    inputs["x_zero_point"] = _zero_point(draw, xe, None) if draw(_BOOL) else None
    inputs["w_zero_point"] = (_zero_point(draw, we, M if draw(_BOOL) else None) if draw(_BOOL) else None)
    return Draft(attrs, inputs)


def _qlinear_conv(draw, ctx: Context) -> Draft:
    g = geometry(draw, ctx)
    group, C, M = _group_channels(draw, ctx)
    N = _batch(draw)
    xe, we, ye = ctx.elem("x"), ctx.elem("w"), ctx.elem("y_zero_point")
    attrs = dict(g.attrs, group=_group_attr(draw, group), kernel_shape=_kernel_shape_attr(draw, ctx, g.kernel))
    per_channel = draw(_BOOL)
    inputs = {
        "x": values(draw, xe, (N, C, *g.sizes)),
        "x_scale": _scale(draw),
        "x_zero_point": _zero_point(draw, xe, None),
        "w": values(draw, we, (M, C // group, *g.kernel)),
        "w_scale": _scale(draw, M if per_channel else None),
        "w_zero_point": _zero_point(draw, we, M if per_channel and draw(_BOOL) else None),
        "y_scale": _scale(draw),
        "y_zero_point": _zero_point(draw, ye, None),
        # the bias is quantized with scale x_scale * w_scale: moderate values
        "B": int_tensor("int32", [draw(st.integers(-300, 300)) for _ in range(M)]) if draw(_BOOL) else None,
    }
    return Draft(attrs, inputs)


def _conv_transpose(draw, ctx: Context) -> Draft:
    n = draw(_SPATIAL)
    kmax = 3 if n < 3 else 2
    kernel = [draw(st.integers(1, kmax)) for _ in range(n)]
    strides, s_attr = _ints_attr(draw, ctx, "strides", n, 1, 3, 1)
    dilations, d_attr = _ints_attr(draw, ctx, "dilations", n, 1, 2, 1)
    span = [(kernel[i] - 1) * dilations[i] + 1 for i in range(n)]
    mode = _auto_pad(draw, ctx)
    same = mode in ("SAME_UPPER", "SAME_LOWER")
    if same:
        # output = input * stride, by a non-negative total padding span - stride: stride <= span
        # (ONNX's inference clamps a negative one to 0 and gets another size)
        strides = [min(strides[i], span[i]) for i in range(n)]
        if s_attr is not ABSENT:
            s_attr = strides
    out_pad, op_attr = [0] * n, ABSENT
    if draw(_BOOL):
        # output_padding < stride (the text's "stride/dilation" reads either way; onnxruntime
        # wants it below the stride); with SAME padding zeros: ONNX's inference adds it to
        # input * stride, the text and runtimes do not
        out_pad = [0 if same else draw(st.integers(0, strides[i] - 1)) for i in range(n)]
        op_attr = out_pad
    pads, p_attr = [0] * (2 * n), ABSENT
    explicit = mode in (ABSENT, "NOTSET")
    # explicit padding: pads, or an output_shape (the pads are then derived, split by auto_pad:
    # the SAME modes take one too), or neither
    which = draw(st.sampled_from(("none", "pads", "output_shape", "pads"))) if explicit else \
        draw(st.sampled_from(("none", "none", "output_shape"))) if same else "none"
    if which == "pads":
        pads = [draw(st.integers(0, 2)) for _ in range(2 * n)]
        p_attr = pads
    sizes = []
    for i in range(n):
        # full = s*(in-1) + out_pad + span; the output full - pads must be >= 1
        need = pads[i] + pads[i + n] + 1 - out_pad[i] - span[i]
        lo = 1 + max(0, -(-need // strides[i]))
        sizes.append(lo + draw(st.integers(0, 2 if n < 3 else 1)))
    os_attr = ABSENT
    if which == "output_shape":
        # an explicit output_shape no larger than the full result (pads are then derived) and no
        # smaller than the input (ONNX's inference gives up on a smaller one, leaving a rank-2 shape)
        full = [strides[i] * (sizes[i] - 1) + out_pad[i] + span[i] for i in range(n)]
        os_attr = [draw(st.integers(max(sizes[i], full[i] - 3), full[i])) for i in range(n)]
    group, C, M = _group_channels(draw, ctx)
    N = _batch(draw)
    elem = ctx.elem("X")
    attrs = {"strides": s_attr, "dilations": d_attr, "pads": p_attr, "auto_pad": mode,
             "output_padding": op_attr, "output_shape": os_attr, "group": _group_attr(draw, group),
             "kernel_shape": _kernel_shape_attr(draw, ctx, kernel)}
    inputs = {
        "X": values(draw, elem, (N, C, *sizes)),
        "W": finite_values(draw, elem, (C, M // group, *kernel)),
        "B": values(draw, elem, (M,)) if draw(_BOOL) else None,
    }
    _conv_transpose_in_range(inputs, kernel, strides, dilations, out_pad, group, n)
    return Draft(attrs, inputs)


def _conv_transpose_in_range(inputs: dict, kernel, strides, dilations, out_pad, group, n) -> None:
    """Clip the finite X and B values (in place) where ConvTranspose's rule RANGE fails (see
    ``_clip_sum_terms``)."""
    X, W, B = inputs["X"], inputs["W"], inputs["B"]
    if not X.size or not W.size:
        return
    # the full output (no padding, no output_shape): padding only crops it, so this bounds every case
    args = (list(kernel), list(strides), [0] * (2 * n), list(dilations), "NOTSET", group, list(out_pad), None)
    if conv_transpose_in_range(X, W, B, *args):
        return
    _clip_sum_terms(inputs, (X.shape[1] // group) * int(np.prod(kernel)))


def _deform_conv(draw, ctx: Context) -> Draft:
    # the reference kernel is 2-D (the common case the spec names)
    g = geometry(draw, ctx, n=2, extra=2)
    group, offset_group = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    C = max(group, offset_group) * draw(st.integers(1, 2))  # divisible by both
    M = group * draw(st.integers(1, 2))
    N = _batch(draw)
    oh, ow = output_sizes(g)
    kh, kw = g.kernel
    elem = ctx.elem("X")
    attrs = dict(g.attrs, group=_group_attr(draw, group), kernel_shape=_kernel_shape_attr(draw, ctx, g.kernel),
                 offset_group=ABSENT if offset_group == 1 and draw(_BOOL) else offset_group)
    offset = finite_values(draw, elem, (N, offset_group * kh * kw * 2, oh, ow))
    offset = np.clip(offset, -4, 4).astype(offset.dtype)  # sample near the image, not far outside
    inputs = {
        "X": values(draw, elem, (N, C, *g.sizes)),
        "W": finite_values(draw, elem, (M, C // group, kh, kw)),
        "offset": offset,
        "B": values(draw, elem, (M,)) if draw(_BOOL) else None,
        "mask": finite_values(draw, elem, (N, offset_group * kh * kw, oh, ow)) if draw(_BOOL) else None,
    }
    return Draft(attrs, inputs)


# ---------------------------------------------------------------------------------------------
# pooling


def _pool(draw, ctx: Context) -> Draft:
    g = geometry(draw, ctx, pool=True)
    C = draw(st.integers(1, 3))
    N = _batch(draw)
    attrs = dict(g.attrs, kernel_shape=list(g.kernel))
    for name in ("count_include_pad", "storage_order"):
        if ctx.has_attribute(name):
            # counting the padding in the divisor matters only where a window reaches into it
            reaches = name == "count_include_pad" and (g.ceil_mode or any(g.pads))
            attrs[name] = draw(_TRI_MOSTLY_ONE) if reaches else draw(_TRI)
    if ctx.has_attribute("p"):
        p = draw(st.sampled_from((ABSENT, 2, 1, 3)))
        attrs["p"] = p if p is ABSENT or ctx.attribute("p").type == "int" else float(p)
    x = values(draw, ctx.elem("X"), (N, C, *g.sizes))
    # MaxPool's rule NAN: the max of a window holding NaN is undefined
    return Draft(attrs, {"X": nan_to_zero(x) if ctx.op == "MaxPool" else x})


def _max_unpool(draw, ctx: Context) -> Draft:
    """Indices of a real MaxPool (same kernel, strides, pads) over an input of the unpooled size the
    attributes give, or distinct flat positions of that size; X holds the values at those
    positions, so positions a pooling window shares receive one value whatever the write order.

    An ``output_shape`` input is that size or up to stride - 1 larger per axis (an input that
    pools to the same size). The indices stay flat positions of the attributes' size: onnx's
    reference and its node test (test_maxunpool_export_with_output_shape) scatter there and pad
    the end with zeros, which the reference kernel follows; onnxruntime reads them as flat
    positions of output_shape instead."""
    n = draw(_SPATIAL)
    kmax = 3 if n < 3 else 2
    kernel = [draw(st.integers(1, kmax)) for _ in range(n)]
    strides, s_attr = _ints_attr(draw, ctx, "strides", n, 1, 3, 1)
    pads, p_attr = [0] * (2 * n), ABSENT
    if draw(_BOOL):
        pads = [draw(st.integers(0, kernel[i % n] - 1)) for i in range(2 * n)]
        p_attr = pads
    # pooled sizes P; the default unpooled size D = (P-1)*s + k - pads must be >= 1
    pooled, default = [], []
    for i in range(n):
        lo = 1 + max(0, -(-(pads[i] + pads[i + n] + 1 - kernel[i]) // strides[i]))
        p = lo + draw(st.integers(0, 2 if n < 3 else 1))
        pooled.append(p)
        default.append((p - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n])
    C = draw(st.integers(1, 3))
    N = _batch(draw)
    give_shape = draw(_BOOL)
    target = [d + (draw(st.integers(0, strides[i] - 1)) if give_shape else 0) for i, d in enumerate(default)]
    elem = ctx.elem("X")
    full = (N, C, *default)
    src = values(draw, elem, full)
    total = int(np.prod(full))
    count = N * C * int(np.prod(pooled))
    if draw(st.integers(0, 3)) < 3 or count > total:
        # the positions of the maxima (NaN and -inf, which tie with padding, made ordinary first)
        ranked = np.nan_to_num(src.astype(np.float64), nan=0.0, posinf=1e300, neginf=-1e300)
        _, index = pool(ranked, "max", kernel, strides, pads, None, "NOTSET", 0, with_indices=True)
        index = np.asarray(index, dtype=np.int64).reshape((N, C, *pooled))
    else:  # distinct positions anywhere in the unpooled tensor
        rng = np.random.default_rng(draw(_SEED))
        index = rng.permutation(total)[:count].astype(np.int64).reshape((N, C, *pooled))
    X = src.reshape(-1)[index.reshape(-1)].reshape(index.shape) if index.size else \
        values(draw, elem, (N, C, *pooled))
    inputs = {"X": X, "I": index,
              "output_shape": int_tensor("int64", [N, C, *target]) if give_shape else None}
    return Draft({"kernel_shape": list(kernel), "strides": s_attr, "pads": p_attr}, inputs)


def _col2im(draw, ctx: Context) -> Draft:
    n = draw(st.sampled_from((2, 3)))
    block = [draw(st.integers(1, 3 if n == 2 else 2)) for _ in range(n)]
    strides, s_attr = _ints_attr(draw, ctx, "strides", n, 1, 3, 1)
    dilations, d_attr = _ints_attr(draw, ctx, "dilations", n, 1, 2, 1)
    elem = ctx.elem("input")
    if elem == "string":  # strings do not add up: blocks that never overlap (stride >= dilated block)
        strides = [max(strides[i], (block[i] - 1) * dilations[i] + 1) for i in range(n)]
        s_attr = strides
    pads, p_attr = [0] * (2 * n), ABSENT
    if draw(_BOOL):
        pads = [draw(st.integers(0, 2)) for _ in range(2 * n)]
        p_attr = pads
    image, blocks = [], []
    for i in range(n):
        span = (block[i] - 1) * dilations[i] + 1
        lo = max(1, span - pads[i] - pads[i + n])
        size = lo + draw(st.integers(0, 3 if n == 2 else 1))
        image.append(size)
        blocks.append((size + pads[i] + pads[i + n] - span) // strides[i] + 1)
    C = draw(st.integers(1, 2))
    N = _batch(draw)
    L = int(np.prod(blocks))
    inputs = {"input": values(draw, elem, (N, C * int(np.prod(block)), L)),
              "image_shape": int_tensor("int64", image), "block_shape": int_tensor("int64", block)}
    return Draft({"strides": s_attr, "dilations": d_attr, "pads": p_attr}, inputs)


# ---------------------------------------------------------------------------------------------
# RoI pooling


def _coord(draw, hi: float, scale: float) -> float:
    """An image coordinate (in half pixels) over [-0.5, hi + 0.5] of the feature map, at ``scale``."""
    return draw(st.integers(-1, int(2 * hi) + 1)) / 2.0 / scale


def _box(draw, H: int, W: int, scale: float) -> list[float]:
    x1, x2 = sorted((_coord(draw, W - 1, scale), _coord(draw, W - 1, scale)))
    y1, y2 = sorted((_coord(draw, H - 1, scale), _coord(draw, H - 1, scale)))
    return [x1, y1, x2, y2]


def _roi_frame(draw) -> tuple:
    """What both RoI ops draw first: the feature map (N, C, H, W), spatial_scale (ABSENT or a value)
    and the number of regions R (0 about one draw in ten)."""
    N, C = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    H, W = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    scale = draw(st.sampled_from((ABSENT, 1.0, 0.5, 2.0, 0.25)))
    R = draw(st.integers(1, 3)) if draw(st.integers(0, 9)) else 0
    return N, C, H, W, scale, R


def _roi_align(draw, ctx: Context) -> Draft:
    N, C, H, W, scale, R = _roi_frame(draw)
    s = 1.0 if scale is ABSENT else scale
    elem = ctx.elem("X")
    rois = np.asarray([_box(draw, H, W, s) for _ in range(R)], dtype=np.float64).reshape(R, 4)
    attrs = {"spatial_scale": scale,
             "output_height": draw(st.sampled_from((ABSENT, 1, 2, 3))),
             "output_width": draw(st.sampled_from((ABSENT, 1, 2, 3))),
             "sampling_ratio": draw(st.sampled_from((ABSENT, 0, 1, 2))),
             "mode": draw(st.sampled_from((ABSENT, "avg", "max")))}
    if ctx.has_attribute("coordinate_transformation_mode"):
        attrs["coordinate_transformation_mode"] = draw(st.sampled_from((ABSENT, "half_pixel", "output_half_pixel")))
    # rule FINITE (a sample on a pixel reads its neighbours with weight 0, inf * 0), and rule RANGE
    # (mode avg sums up to 25 samples a bin here: H, W <= 5, so |X| <= max / 64)
    x = values(draw, elem, (N, C, H, W))
    x = clip_finite(np.where(np.isfinite(x.astype(np.float64)), x, 0).astype(x.dtype),
                     sampling_type_max(x) / (1.0 if attrs["mode"] == "max" else 64.0))
    inputs = {"X": x,
              "rois": rois.astype(np_dtype(elem)),
              "batch_indices": int_tensor("int64", [draw(st.integers(0, N - 1)) for _ in range(R)], (R,))}
    return Draft(attrs, inputs)


def _pixel(draw, hi: int, scale: float) -> float:
    """A MaxRoiPool coordinate: on the feature map (after ``scale``) a quarter step over [-1, hi + 1]
    that is never a half: the op rounds it, and round-half-even (Python, onnx's reference) and
    round-half-away (C, onnxruntime) disagree on halves."""
    q = draw(st.integers(-2, 2 * hi + 2))
    return (q // 2 + (0.25 if q % 2 else 0.0) + (0.5 if q % 4 == 3 else 0.0)) / scale


def _max_roi_pool(draw, ctx: Context) -> Draft:
    N, C, H, W, scale, R = _roi_frame(draw)
    s = 1.0 if scale is ABSENT else scale
    elem = ctx.elem("X")
    rows = []
    for _ in range(R):
        x1, x2 = sorted((_pixel(draw, W - 1, s), _pixel(draw, W - 1, s)))
        y1, y2 = sorted((_pixel(draw, H - 1, s), _pixel(draw, H - 1, s)))
        rows.append([draw(st.integers(0, N - 1)), x1, y1, x2, y2])
    rois = np.asarray(rows, dtype=np.float64).reshape(R, 5)
    attrs = {"spatial_scale": scale,
             "pooled_shape": [draw(st.integers(1, 3)), draw(st.integers(1, 3))]}
    inputs = {"X": nan_to_zero(values(draw, elem, (N, C, H, W))), "rois": rois.astype(np_dtype(elem))}
    return Draft(attrs, inputs)


_BUILDERS = {
    "Conv": _conv,
    "ConvInteger": _conv_integer,
    "QLinearConv": _qlinear_conv,
    "ConvTranspose": _conv_transpose,
    "DeformConv": _deform_conv,
    "AveragePool": _pool,
    "MaxPool": _pool,
    "LpPool": _pool,
    "MaxUnpool": _max_unpool,
    "Col2Im": _col2im,
    "RoiAlign": _roi_align,
    "MaxRoiPool": _max_roi_pool,
}


draw = by_op("window", _BUILDERS)
