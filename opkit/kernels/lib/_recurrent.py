"""Recurrent networks: RNN, GRU and LSTM over a whole sequence, their activation functions and the
perturbation opkit's accumulation allowance runs them with."""

from __future__ import annotations

import contextvars

import numpy as np


def _activation(name, alpha, beta):
    name = name.lower()
    table = {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.logaddexp(0, x),  # ln(exp(x) + 1) without overflowing exp(x)
    }
    return table[name]


# A relative error given to every activation's output in rnn_core (0: the exact recurrence). opkit's
# allowance for RNN, GRU and LSTM (opkit.conformance.accumulation) runs the kernel with it to see
# how far the recurrence carries one step's rounding: an update gate of 8000 turns a tanh 4 ULPs off
# into 35 ULPs three steps later.
RECURRENCE_PERTURBATION: contextvars.ContextVar[float] = contextvars.ContextVar("recurrence_perturbation",
                                                                                default=0.0)


def _perturbed(fn, bump: float):
    return fn if bump == 1.0 else (lambda x: fn(x) * bump)


_DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "hardsigmoid": 0.2, "elu": 1.0, "affine": 1.0,
                  "scaledtanh": 1.0}
_DEFAULT_BETA = {"hardsigmoid": 0.5, "affine": 0.0, "scaledtanh": 1.0}


def _rnn_activations(acts, activation_alpha, activation_beta):
    """The activation functions of ``acts`` (names) with their alphas and betas, each perturbed by
    RECURRENCE_PERTURBATION."""
    # alphas (betas) are consumed in the order of the functions, one by each function that takes
    # one (the keys of _DEFAULT_ALPHA / _DEFAULT_BETA); a function left without one takes its default
    alphas = iter(activation_alpha or [])
    betas = iter(activation_beta or [])
    funcs = []
    bump = 1.0 + RECURRENCE_PERTURBATION.get()
    for a in acts:
        key = a.lower()
        al = next(alphas, _DEFAULT_ALPHA[key]) if key in _DEFAULT_ALPHA else 0.0
        be = next(betas, _DEFAULT_BETA[key]) if key in _DEFAULT_BETA else 0.0
        funcs.append(_perturbed(_activation(a, al, be), bump))
    return funcs


def _rnn_cell(kind, f, cl, gx, h, c, r, rb, peep, hidden, linear_before_reset, input_forget):
    """One time step of one direction: the new (h, c) from the input's gate terms ``gx``."""
    if kind == "RNN":
        hn = f[0](cl(gx + h @ r.T + rb))
        cn = c
    elif kind == "GRU":
        H = hidden
        gh = h @ r.T
        z = f[0](cl(gx[:, :H] + gh[:, :H] + rb[:H]))
        rr = f[0](cl(gx[:, H:2 * H] + gh[:, H:2 * H] + rb[H:2 * H]))
        if linear_before_reset:
            hh = f[1](cl(gx[:, 2 * H:] + rr * (gh[:, 2 * H:] + rb[2 * H:])))
        else:
            hh = f[1](cl(gx[:, 2 * H:] + (rr * h) @ r[2 * H:].T + rb[2 * H:]))
        hn = (1 - z) * hh + z * h
        cn = c
    else:
        H = hidden
        g = gx + h @ r.T + rb
        pi, po, pf = peep[:H], peep[H:2 * H], peep[2 * H:]
        i_g = f[0](cl(g[:, :H] + pi * c))
        f_g = f[0](cl(g[:, 2 * H:3 * H] + pf * c))
        if input_forget:
            f_g = 1 - i_g
        c_g = f[1](cl(g[:, 3 * H:]))
        cn = f_g * c + i_g * c_g
        o_g = f[0](cl(g[:, H:2 * H] + po * cn))
        hn = o_g * f[2](cn)
    return hn, cn


def rnn_core(kind, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *,
             activations=None, activation_alpha=None, activation_beta=None, clip=None,
             direction="forward", hidden_size=None, layout=0, linear_before_reset=0, input_forget=0):
    """RNN / GRU / LSTM over the whole sequence; returns (Y, Y_h) or (Y, Y_h, Y_c)."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    n_act = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
    default_acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    x = np.swapaxes(X, 0, 1) if layout else X  # [seq, batch, input]
    seq, batch = x.shape[0], x.shape[1]
    hidden = R.shape[-1]
    acts = list(activations) if activations else default_acts * dirs
    if len(acts) == n_act and dirs == 2:
        acts = acts * 2
    funcs = _rnn_activations(acts, activation_alpha, activation_beta)
    h0 = np.zeros((dirs, batch, hidden), dtype=X.dtype) if initial_h is None else \
        (np.swapaxes(initial_h, 0, 1) if layout else initial_h)
    c0 = np.zeros((dirs, batch, hidden), dtype=X.dtype) if initial_c is None else \
        (np.swapaxes(initial_c, 0, 1) if layout else initial_c)
    bias = np.zeros((dirs, 2 * gates * hidden), dtype=X.dtype) if B is None else B
    peep = np.zeros((dirs, 3 * hidden), dtype=X.dtype) if P is None else P
    lens = np.full(batch, seq, dtype=np.int64) if sequence_lens is None else np.asarray(sequence_lens).astype(np.int64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    Y = np.zeros((seq, dirs, batch, hidden), dtype=X.dtype)
    Yh = np.zeros((dirs, batch, hidden), dtype=X.dtype)
    Yc = np.zeros((dirs, batch, hidden), dtype=X.dtype)
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        f = funcs[d * n_act:(d + 1) * n_act]
        w, r = W[d], R[d]
        wb, rb = bias[d][:gates * hidden], bias[d][gates * hidden:]
        h, c = h0[d].astype(np.float64), c0[d].astype(np.float64)
        for step in range(seq):
            t = seq - 1 - step if reverse else step
            active = (t < lens)[:, None] if not reverse else (t < lens)[:, None]
            xt = x[t].astype(np.float64)
            gx = xt @ w.T + wb
            hn, cn = _rnn_cell(kind, f, cl, gx, h, c, r, rb, peep[d], hidden, linear_before_reset, input_forget)
            h = np.where(active, hn, h)
            c = np.where(active, cn, c)
            Y[t, d] = np.where(active, hn, 0)
        Yh[d], Yc[d] = h, c
    if layout:
        Y = np.transpose(Y, (2, 0, 1, 3))
        Yh, Yc = np.swapaxes(Yh, 0, 1), np.swapaxes(Yc, 0, 1)
    if kind == "LSTM":
        return Y, Yh, Yc
    return Y, Yh
