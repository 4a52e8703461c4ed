"""Signal family: DFT, STFT, the window generators (Hann, Hamming, Blackman) and MelWeightMatrix.

Lengths, steps and sizes are scalars that must be positive (or non-negative for a window size) and
agree with the signal's shape; the signal's last dimension is 1 (real) or 2 (complex), and which one
is allowed depends on ``onesided``/``inverse``. Sizes stay small: the kernels are O(n^2) or loop.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..case import ABSENT, NotGeneratable
from ..draws import cast
from ..context import Context, Draft, int_tensor, values

_BOOL = st.booleans()


def _signal_dims(draw, rank: int, axis: int, axis_len: int) -> list[int]:
    """Dimensions of a rank-``rank`` signal (without its last real/complex dimension); the DFT axis
    gets ``axis_len``, the others 1..3 (sometimes 0: an empty batch)."""
    out = []
    for d in range(rank - 1):
        if d == axis:
            out.append(axis_len)
        else:
            out.append(draw(st.integers(0, 3)) if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, 3)))
    return out


def _dft(draw, ctx: Context) -> Draft:
    inverse = int(draw(_BOOL))
    onesided = int(draw(_BOOL))
    rank = draw(st.integers(2, 4))  # signal dims + the last (real/complex) dim
    # the DFT axis: [-r, -2] u [0, r-2]
    axis = draw(st.integers(0, rank - 2))
    axis_written = axis - rank if draw(_BOOL) else axis
    irfft = bool(onesided and inverse)
    # IRFFT's default length is 2 * (n - 1): n >= 2 keeps it positive
    n = draw(st.integers(2 if irfft else 1, 5))
    # forward onesided (RFFT) takes a real signal, IRFFT a complex one; otherwise either
    if onesided:
        last = 2 if inverse else 1
    else:
        last = draw(st.sampled_from((1, 2)))
    shape = _signal_dims(draw, rank, axis, n) + [last]
    attrs = {"inverse": inverse, "onesided": onesided}
    inputs = {"input": values(draw, ctx.elem("input"), shape)}
    if draw(_BOOL):
        inputs["dft_length"] = int_tensor(ctx.elem("dft_length"), draw(st.integers(1, 6)))
    else:
        inputs["dft_length"] = None
    if ctx.has_attribute("axis"):
        attrs["axis"] = ABSENT if axis_written == 1 and draw(_BOOL) else axis_written  # default 1
    if ctx.has_input("axis"):
        if axis == rank - 2 and not axis_written >= 0 and draw(_BOOL):
            inputs["axis"] = None  # the default, -2
        else:
            inputs["axis"] = int_tensor("int64", axis_written)
    return Draft(attributes=attrs, inputs=inputs)


def _stft(draw, ctx: Context) -> Draft:
    onesided = int(draw(_BOOL))
    length = draw(st.integers(1, 4))  # frame length
    signal_len = length + draw(st.integers(0, 5))
    batch = draw(st.integers(1, 2))
    # onesided output is for real signals; the two-sided one takes either
    last = 1 if onesided else draw(st.sampled_from((1, 2)))
    step = draw(st.integers(1, 3))
    inputs = {
        "signal": values(draw, ctx.elem("signal"), (batch, signal_len, last)),
        "frame_step": int_tensor(ctx.elem("frame_step"), step),
    }
    how = draw(st.sampled_from(("window", "length", "both")))
    inputs["window"] = values(draw, ctx.elem("window"), (length,)) if how != "length" else None
    inputs["frame_length"] = int_tensor(ctx.elem("frame_length"), length) if how != "window" else None
    return Draft(attributes={"onesided": onesided}, inputs=inputs)


def _window(draw, ctx: Context) -> Draft:
    size = draw(st.integers(0, 6))
    return Draft(attributes={"periodic": int(draw(_BOOL))}, inputs={"size": int_tensor(ctx.elem("size"), size)})


def _mel(draw, ctx: Context) -> Draft:
    bins = draw(st.integers(1, 4))
    dft_length = draw(st.integers(1, 16))
    sample_rate = draw(st.sampled_from((8, 16, 100, 8000, 16000)))
    nyquist = sample_rate / 2
    # 0 <= lower < upper <= sample_rate / 2, on a grid of eighths of the Nyquist frequency (exact in
    # every float type)
    lo_step = draw(st.integers(0, 7))
    hi_step = draw(st.integers(lo_step + 1, 8))
    elem = ctx.elem("lower_edge_hertz")
    inputs = {
        "num_mel_bins": int_tensor(ctx.elem("num_mel_bins"), bins),
        "dft_length": int_tensor(ctx.elem("dft_length"), dft_length),
        "sample_rate": int_tensor(ctx.elem("sample_rate"), sample_rate),
        "lower_edge_hertz": cast([nyquist * lo_step / 8], elem).reshape(()),
        "upper_edge_hertz": cast([nyquist * hi_step / 8], ctx.elem("upper_edge_hertz")).reshape(()),
    }
    return Draft(inputs=inputs)


def draw(draw, ctx: Context) -> Draft:
    if ctx.op == "DFT":
        return _dft(draw, ctx)
    if ctx.op == "STFT":
        return _stft(draw, ctx)
    if ctx.op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        return _window(draw, ctx)
    if ctx.op == "MelWeightMatrix":
        return _mel(draw, ctx)
    raise NotGeneratable(f"the signal family has no builder for {ctx.op}")
