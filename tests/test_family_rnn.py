"""The rnn family hook draws valid cases (opkit.cases.families.rnn)."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.cases.families.rnn import TAKES_ALPHA, TAKES_BETA
from opkit.conformance import harness
from opkit.kernels.lib import rnn_core

from family_cases import kernel_versions, op_cases, assert_mostly_valid

FAMILY = "rnn"
OPS = ["RNN", "GRU", "LSTM"]
FUNCS = {"RNN": 1, "GRU": 2, "LSTM": 3}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=100):
    return [(dict(case.attributes), dict(case.inputs)) for case in op_cases(op, since, n, seed_value=1)]


@pytest.mark.parametrize("op,since", [("RNN", 22), ("GRU", 14), ("LSTM", 22), ("LSTM", 7)])
def test_shapes_and_attributes(op, since):
    drawn = _drawn(op, since)
    g = GATES[op]
    for a, i in drawn:
        dirs = 2 if a.get("direction") == "bidirectional" else 1
        layout = a.get("layout") or 0
        seq, batch = (i["X"].shape[1], i["X"].shape[0]) if layout else i["X"].shape[:2]
        h = a["hidden_size"]
        assert i["W"].shape == (dirs, g * h, i["X"].shape[2]) and i["R"].shape == (dirs, g * h, h)
        assert i["B"] is None or i["B"].shape == (dirs, 2 * g * h)
        state = (batch, dirs, h) if layout else (dirs, batch, h)
        assert i["initial_h"] is None or i["initial_h"].shape == state
        if i["sequence_lens"] is not None:
            assert i["sequence_lens"].shape == (batch,)
            assert 1 <= i["sequence_lens"].min() and i["sequence_lens"].max() <= seq
        acts = a.get("activations")
        if acts:
            assert len(acts) == FUNCS[op] * dirs
            alphas, betas = a.get("activation_alpha"), a.get("activation_beta")
            assert alphas is None or len(alphas) == sum(x in TAKES_ALPHA for x in acts)
            assert betas is None or len(betas) == sum(x in TAKES_BETA for x in acts)
        assert a.get("clip") is None or a["clip"] > 0
    directions = {a.get("direction") for a, _ in drawn}
    assert {"reverse", "bidirectional"} <= directions
    assert any(i["sequence_lens"] is not None for _, i in drawn)
    assert any(a.get("activations") for a, _ in drawn) and any(a.get("activation_alpha") for a, _ in drawn)
    if since >= 14:
        assert any(a.get("layout") == 1 for a, _ in drawn)
    if op == "LSTM":
        assert any(i["P"] is not None for _, i in drawn) and any(i["initial_c"] is not None for _, i in drawn)
        assert any(a.get("input_forget") == 1 for a, _ in drawn)


def test_alphas_are_consumed_by_the_functions_that_take_one():
    # bidirectional RNN: forward Relu (takes no alpha), reverse LeakyRelu: the one alpha is LeakyRelu's
    x = np.full((1, 1, 1), -4.0, np.float32)
    w = np.ones((2, 1, 1), np.float32)
    r = np.zeros((2, 1, 1), np.float32)
    y, _ = rnn_core("RNN", x, w, r, activations=["Relu", "LeakyRelu"], activation_alpha=[0.25],
                    direction="bidirectional", hidden_size=1)
    assert y[0, 0, 0, 0] == 0.0 and y[0, 1, 0, 0] == -1.0


def test_direction_values():
    for op in OPS:
        for v in harness.load_op("ai.onnx", op).versions:
            if not (op == "GRU" and v.since == 1):  # GRU-1's schema default is the typo 'foward'
                assert v.attribute("direction").domain.values == ("forward", "reverse", "bidirectional")
