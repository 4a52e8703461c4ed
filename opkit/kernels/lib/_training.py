"""Compute helpers of the ai.onnx.preview.training optimizers: Adagrad, Adam and Momentum.

Each op updates n tensors at once: its variadic input is the n tensors X, then their n gradients
G, then one or two groups of n state tensors (H for Adagrad, V for Momentum, V then H for Adam),
and its variadic output is the new X values followed by the new states in the same order. Every
tensor is updated on its own by the op's pseudo code. The arithmetic runs in float64 and each
output is rounded once to its input's type: the pseudo code names no intermediate precision, and
the scalar factors (``alpha ** T``, ``1 + T * decay_factor``) of an int64 count need more than
float32 to be exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["adagrad", "adam", "momentum", "optimizer_groups"]


def optimizer_groups(inputs, n_groups: int) -> list[list[np.ndarray]]:
    """``inputs`` (X_1..X_n, G_1..G_n, then the state groups) cut into ``n_groups`` lists of n."""
    n = len(inputs) // n_groups
    return [list(inputs[g * n:(g + 1) * n]) for g in range(n_groups)]


def _wide(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _scalars(R, T) -> tuple[float, int]:
    # R and T are 0-D (rules); T is an exact Python int so T * decay_factor and alpha ** T are
    # computed once, in double
    return float(np.asarray(R, dtype=np.float64)), int(np.asarray(T))


def adagrad(R, T, inputs, *, norm_coefficient: float = 0.0, decay_factor: float = 0.0,
            epsilon: float = 1e-6) -> tuple[np.ndarray, ...]:
    """Adagrad-1: outputs X_new_1..n then H_new_1..n."""
    r0, t = _scalars(R, T)
    xs, gs, hs = optimizer_groups(inputs, 3)
    with np.errstate(all="ignore"):
        r = r0 / (1.0 + t * float(decay_factor))
        new_x, new_h = [], []
        for x, g, h in zip(xs, gs, hs):
            g_reg = float(norm_coefficient) * _wide(x) + _wide(g)
            h_new = _wide(h) + g_reg * g_reg
            x_new = _wide(x) - r * g_reg / (np.sqrt(h_new) + float(epsilon))
            new_x.append(x_new.astype(x.dtype))
            new_h.append(h_new.astype(h.dtype))
    return tuple(new_x + new_h)


def adam(R, T, inputs, *, alpha: float = 0.9, beta: float = 0.999, epsilon: float = 1e-6,
         norm_coefficient: float = 0.0, norm_coefficient_post: float = 0.0) -> tuple[np.ndarray, ...]:
    """Adam-1: outputs X_final_1..n, then V_new_1..n, then H_new_1..n."""
    r0, t = _scalars(R, T)
    a, b = float(alpha), float(beta)
    xs, gs, vs, hs = optimizer_groups(inputs, 4)
    with np.errstate(all="ignore"):
        # "R_adjusted = T > 0 ? R * Sqrt(1 - beta**T) / (1 - alpha**T) : R"
        r = r0 * np.sqrt(1.0 - np.float64(b) ** t) / (1.0 - np.float64(a) ** t) if t > 0 else r0
        new_x, new_v, new_h = [], [], []
        for x, g, v, h in zip(xs, gs, vs, hs):
            g_reg = float(norm_coefficient) * _wide(x) + _wide(g)
            v_new = a * _wide(v) + (1.0 - a) * g_reg
            h_new = b * _wide(h) + (1.0 - b) * g_reg * g_reg
            x_new = _wide(x) - r * v_new / (np.sqrt(h_new) + float(epsilon))
            x_final = (1.0 - float(norm_coefficient_post)) * x_new
            new_x.append(x_final.astype(x.dtype))
            new_v.append(v_new.astype(v.dtype))
            new_h.append(h_new.astype(h.dtype))
    return tuple(new_x + new_v + new_h)


def momentum(R, T, inputs, *, alpha: float, beta: float, mode: str, norm_coefficient: float) -> tuple[np.ndarray, ...]:
    """Momentum-1 (mode standard or nesterov): outputs X_new_1..n then V_new_1..n."""
    r, t = _scalars(R, T)
    a = float(alpha)
    beta_adjusted = float(beta) if t > 0 else 1.0  # "In the first training iteration, beta should always be 1"
    xs, gs, vs = optimizer_groups(inputs, 3)
    with np.errstate(all="ignore"):
        new_x, new_v = [], []
        for x, g, v in zip(xs, gs, vs):
            g_reg = float(norm_coefficient) * _wide(x) + _wide(g)
            v_new = a * _wide(v) + beta_adjusted * g_reg
            step = g_reg + a * v_new if mode == "nesterov" else v_new
            new_x.append((_wide(x) - r * step).astype(x.dtype))
            new_v.append(v_new.astype(v.dtype))
    return tuple(new_x + new_v)
