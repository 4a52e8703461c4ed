"""The tract adapter's input facts: a session types a model once per input rank with every dim a
symbol, and falls back to concrete shapes when tract cannot type the model on symbols. The facts
are the adapter's choice, so a refusal that follows from them must never reach a verdict.

tract itself is not needed: a stand-in engine refuses models whose inputs carry symbolic dims the
way tract 0.23.9 words it, and runs models with concrete dims."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from opkit.backends import tract_backend


class _FakeTractError(Exception):
    pass


def _model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _session(monkeypatch, refusal: str):
    """A tract session whose engine refuses symbolic input dims with ``refusal``."""
    typed = []

    def runnable(self, model):
        dims = [d for vi in model.graph.input for d in vi.type.tensor_type.shape.dim]
        if any(d.HasField("dim_param") for d in dims):
            raise tract_backend.TractError(refusal)
        typed.append(tuple(d.dim_value for d in dims))

        class Runnable:
            def run(self, inputs):
                return [np.asarray(inputs[0]) * 2]
        return Runnable()

    monkeypatch.setattr(tract_backend._Session, "_runnable", runnable)
    monkeypatch.setattr(tract_backend, "_to_tract", lambda tract, array: array)
    monkeypatch.setattr(tract_backend, "_from_tract", lambda tract, tensor: tensor)
    backend = object.__new__(tract_backend.TractBackend)
    backend._tract = type("tract", (), {"TractError": _FakeTractError})
    return tract_backend._Session(backend, _model()), typed


@pytest.mark.parametrize("refusal", [
    "0: Infering facts | 1: Applying rule inputs[2].shape[0] == Val(2) | 2: Impossible to unify Sym(values_0) with "
    "Val(2). (while Failed analyse for node #3 \"output\" OneHot)",
    "Impossible to unify Sym(X_0) with Sym(grid_0). (while Failed analyse for node #2 GridSample)",
    "Can not compute a shape with square of symbols",
    "Only constant input shape are supported in Multinomial (while Translating node #1 Multinomial)",
    "Can not compute output shape. inputs are [Sym(X_0), Sym(X_1)] and scale 0.5",
])
def test_a_model_tract_cannot_type_on_symbols_runs_on_concrete_shapes(monkeypatch, refusal):
    session, typed = _session(monkeypatch, refusal)
    out = session.run({"x": np.ones((2, 3), np.float32)})
    assert np.array_equal(out[0], np.full((2, 3), 2, np.float32))
    session.run({"x": np.ones((4, 1), np.float32)})
    assert typed == [(2, 3), (4, 1)]  # typed once per concrete shape


def test_a_refusal_that_stays_with_concrete_shapes_is_the_runtimes(monkeypatch):
    def refuse_always(self, model):
        raise tract_backend.TractError("Unsupported mode wrap (while Building node (Pad))")

    session, _ = _session(monkeypatch, "unused")
    monkeypatch.setattr(tract_backend._Session, "_runnable", refuse_always)
    with pytest.raises(tract_backend.TractError, match="Unsupported mode wrap"):
        session.run({"x": np.ones((2, 3), np.float32)})
