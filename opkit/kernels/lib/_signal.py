"""Signal processing: DFT, STFT, MelWeightMatrix and the Hann / Hamming / Blackman windows."""

from __future__ import annotations

import numpy as np

from ..runtime import onnx_dtype


def dft(input, dft_length=None, axis=None, *, inverse=0, onesided=0, attr_axis=1):
    """DFT along ``axis`` of a real ([..., 1]) or complex ([..., 2]) signal, computed in the
    input's precision (complex64 for float32 inputs); onesided + inverse is the IRFFT."""
    a = attr_axis if axis is None else int(np.asarray(axis).reshape(-1)[0])
    x = input
    a = a + x.ndim if a < 0 else a
    ctype = np.complex64 if x.dtype in (np.float32, np.float16) or x.dtype.kind == "V" else np.complex128
    ftype = np.float32 if ctype == np.complex64 else np.float64
    if x.shape[-1] == 1:
        sig = x[..., 0].astype(ftype).astype(ctype)
    else:
        sig = (x[..., 0].astype(ftype) + 1j * x[..., 1].astype(ftype)).astype(ctype)
    if onesided and inverse:
        n = 2 * (sig.shape[a] - 1) if dft_length is None else int(np.asarray(dft_length).reshape(-1)[0])
        res = np.fft.irfft(sig, n=n, axis=a)
        return res[..., None].astype(input.dtype)
    n = sig.shape[a] if dft_length is None else int(np.asarray(dft_length).reshape(-1)[0])
    res = np.fft.ifft(sig, n=n, axis=a) if inverse else np.fft.fft(sig, n=n, axis=a)
    if onesided:
        res = np.take(res, np.arange(n // 2 + 1), axis=a)
    return np.stack([res.real, res.imag], axis=-1).astype(input.dtype)


def stft(signal, frame_step, window=None, frame_length=None, *, onesided=1):
    step = int(np.asarray(frame_step).reshape(-1)[0])
    if frame_length is not None:
        length = int(np.asarray(frame_length).reshape(-1)[0])
    else:
        length = window.shape[0]
    sig = signal[..., 0].astype(np.float64) if signal.shape[-1] == 1 else \
        signal[..., 0].astype(np.float64) + 1j * signal[..., 1].astype(np.float64)
    n_frames = 1 + (sig.shape[1] - length) // step
    frames = np.stack([sig[:, f * step:f * step + length] for f in range(n_frames)], axis=1)
    if window is not None:
        frames = frames * window.astype(np.float64)
    res = np.fft.fft(frames, n=length, axis=-1)
    if onesided:
        res = res[..., :length // 2 + 1]
    return np.stack([res.real, res.imag], axis=-1).astype(signal.dtype)


def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *,
                      output_datatype=1):
    from ..runtime import onnx_dtype

    bins = int(np.asarray(num_mel_bins).reshape(-1)[0])
    n_fft = int(np.asarray(dft_length).reshape(-1)[0])
    rate = float(np.asarray(sample_rate).reshape(-1)[0])
    lo = float(np.asarray(lower_edge_hertz).reshape(-1)[0])
    hi = float(np.asarray(upper_edge_hertz).reshape(-1)[0])
    n_spec = n_fft // 2 + 1
    to_mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    to_hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    # bins + 2 points spaced (high - low) / (bins + 2) apart from low, as ONNX defines them
    step = (to_mel(hi) - to_mel(lo)) / (bins + 2)
    hz_points = to_hz(to_mel(lo) + np.arange(bins + 2) * step)
    freq_bins = np.floor((n_fft + 1) * hz_points / rate).astype(np.int64)
    out = np.zeros((n_spec, bins), dtype=np.float64)
    for i in range(bins):
        low, center, high = freq_bins[i], freq_bins[i + 1], freq_bins[i + 2]
        if center == low:
            out[center, i] = 1
        else:
            for j in range(low, center + 1):
                out[j, i] = (j - low) / (center - low)
        if high > center:
            for j in range(center, high):
                out[j, i] = (high - j) / (high - center)
    return out.astype(onnx_dtype(output_datatype))


def window(size, periodic, output_datatype, coefficients):
    """Hann / Hamming / Blackman windows: w[k] = A0 - A1 cos(2 pi k / N) + A2 cos(4 pi k / N) (N =
    size, or size - 1 for a symmetric window), the window "as described in the paper" with its
    exact coefficients (``coefficients``: strings or Fractions, 0.42 is 21/50), rounded once to
    float32 -- the functions bodies compute in float ("Cast <to: int = 1> (size)") and end with
    one "Cast <to: int = @output_datatype>" -- then cast to output_datatype with Cast's rules.

    The coefficients are exact rationals and each term is summed exactly, so the window is exactly
    0 and 1 where the formula is (cos 0 = 1, cos pi = -1 in float64): the symmetric Blackman window
    of size 3 peaks at 21/50 + 1/2 + 2/25 = 1 (an integer Cast gives 1). Summed in float64,
    0.42 + 0.5 + 0.08 is 0.9999999999999999; in the body's float32 steps 0.99999994; both Cast to
    0. IR.md: a function body "serves as a default or fallback implementation"."""
    from fractions import Fraction

    from ..runtime import cast_to, element_type

    n = int(np.asarray(size).reshape(-1)[0])
    denominator = n if periodic else n - 1
    a0, a1, a2 = (Fraction(c) for c in coefficients)
    with np.errstate(divide="ignore", invalid="ignore"):  # size 1, symmetric: 0 / 0, NaN as in the body
        angle = 2 * np.pi * np.arange(n, dtype=np.float64) / (denominator if denominator else np.nan)
    c1, c2 = np.cos(angle), np.cos(2 * angle)
    w = np.array([float(a0 - a1 * Fraction(x) + a2 * Fraction(y)) if np.isfinite(x) else np.nan
                  for x, y in zip(c1.tolist(), c2.tolist())], dtype=np.float64)
    target = onnx_dtype(output_datatype)
    return cast_to(w.astype(np.float32), element_type(np.zeros(0, dtype=target)))
