"""Family hook: recurrent ops (RNN, GRU, LSTM).

A case picks the sizes first -- seq_length, batch_size, input_size, hidden_size -- and the
direction (forward / reverse / bidirectional: num_directions 1 or 2) and layout (0: X is
[seq, batch, input], 1: [batch, seq, input]) where the version has it, then builds every input
from them as the spec states: W [num_directions, G*hidden, input], R [num_directions, G*hidden,
hidden], B [num_directions, 2*G*hidden], sequence_lens [batch] with lengths in [1, seq_length],
initial_h / initial_c [num_directions, batch, hidden] ([batch, num_directions, hidden] for
layout 1), P [num_directions, 3*hidden]; G is the number of gates (RNN 1, GRU 3, LSTM 4).

``hidden_size`` is always set (runtimes need it). ``activations`` is the default or a list of
(gates-functions x num_directions) valid names; ``activation_alpha`` / ``activation_beta`` give
one value per function that takes one, in order (they are consumed in the order of the
functions). ``clip`` is absent or positive.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..case import NotGeneratable
from ..context import ABSENT, Context, Draft, finite_values, int_tensor, values

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
_FUNCS = {"RNN": 1, "GRU": 2, "LSTM": 3}
ACTIVATIONS = ("Tanh", "Sigmoid", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid",
               "Elu", "Softsign", "Softplus")
# the functions that take an alpha / a beta (the others ignore them)
TAKES_ALPHA = frozenset({"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"})
TAKES_BETA = frozenset({"Affine", "ScaledTanh", "HardSigmoid"})
# exact in float32, so the attribute means the same to every runtime
_COEF = st.sampled_from((0.5, 1.0, 0.25, 2.0, 0.125, 1.5))
_CLIP = st.sampled_from((1.0, 0.5, 2.0, 4.0, 10.0))
_BOOL = st.booleans()


def _present(draw) -> bool:
    return draw(_BOOL)


def draw(draw, ctx: Context) -> Draft:
    if ctx.op not in _GATES:
        raise NotGeneratable(f"the rnn family has no builder for {ctx.op}")
    gates, n_funcs = _GATES[ctx.op], _FUNCS[ctx.op]
    elem = ctx.elem("X")
    seq = draw(st.integers(1, 4))
    batch = draw(st.integers(1, 3))
    size = draw(st.integers(1, 4))
    hidden = draw(st.integers(1, 4))
    direction = draw(st.sampled_from(("forward", "reverse", "bidirectional")))
    dirs = 2 if direction == "bidirectional" else 1
    layout = draw(st.sampled_from((0, 1))) if ctx.has_attribute("layout") else 0

    attrs: dict = {"hidden_size": hidden}
    # forward is the default: sometimes left out (GRU-1's schema spells its default 'foward')
    attrs["direction"] = ABSENT if direction == "forward" and draw(_BOOL) else direction
    if ctx.has_attribute("layout"):
        attrs["layout"] = ABSENT if layout == 0 and draw(_BOOL) else layout
    if ctx.has_attribute("linear_before_reset"):
        attrs["linear_before_reset"] = draw(st.sampled_from((ABSENT, 0, 1)))
    if ctx.has_attribute("input_forget"):
        attrs["input_forget"] = draw(st.sampled_from((ABSENT, 0, 1)))
    if ctx.has_attribute("output_sequence"):
        attrs["output_sequence"] = draw(st.sampled_from((ABSENT, 0, 1)))
    attrs["clip"] = draw(_CLIP) if draw(st.integers(0, 3)) == 0 else ABSENT
    acts, alphas, betas = ABSENT, ABSENT, ABSENT
    if draw(_BOOL):
        acts = [draw(st.sampled_from(ACTIVATIONS)) for _ in range(n_funcs * dirs)]
        n_alpha = sum(a in TAKES_ALPHA for a in acts)
        n_beta = sum(a in TAKES_BETA for a in acts)
        if n_alpha and draw(st.integers(0, 3)):
            alphas = [draw(_COEF) for _ in range(n_alpha)]
        if n_beta and draw(st.integers(0, 3)):
            betas = [draw(_COEF) for _ in range(n_beta)]
    attrs["activations"] = acts
    attrs["activation_alpha"] = alphas
    attrs["activation_beta"] = betas

    x_shape = (batch, seq, size) if layout else (seq, batch, size)
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs = {
        "X": values(draw, elem, x_shape),
        "W": finite_values(draw, elem, (dirs, gates * hidden, size)),
        "R": finite_values(draw, elem, (dirs, gates * hidden, hidden)),
        "B": finite_values(draw, elem, (dirs, 2 * gates * hidden)) if _present(draw) else None,
        "sequence_lens": None,
        "initial_h": finite_values(draw, elem, state_shape) if _present(draw) else None,
    }
    if _present(draw):
        lens = [draw(st.integers(1, seq)) for _ in range(batch)]
        inputs["sequence_lens"] = int_tensor(ctx.elem("sequence_lens"), lens)
    if ctx.has_input("initial_c"):
        inputs["initial_c"] = finite_values(draw, elem, state_shape) if _present(draw) else None
    if ctx.has_input("P"):
        inputs["P"] = finite_values(draw, elem, (dirs, 3 * hidden)) if _present(draw) else None
    return Draft(attrs, inputs)


__all__ = ["draw", "ACTIVATIONS", "TAKES_ALPHA", "TAKES_BETA"]
