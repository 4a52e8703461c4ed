"""The einsum family hook draws valid Einsum cases (opkit.cases.families.einsum): an equation from
a grammar (explicit/implicit, shared and summed letters, diagonals, ellipsis, full reductions) and
operands shaped to fit it."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from opkit.conformance.validity import measure, spread
from opkit.conformance import harness
from opkit.cases.bindings import covering_bindings

from family_cases import draw_cases

SPEC = harness.load_op("ai.onnx", "Einsum")
VERSIONS = [v for v in SPEC.versions if v.kernel is not None]


def test_family_set():
    assert [v.since for v in VERSIONS] == [12, 28]
    assert all(v.family == "einsum" for v in VERSIONS)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"Einsum-{v.since}")
def test_valid_rate(version):
    bindings = covering_bindings(version)
    result = measure(SPEC, version, spread(bindings, 4), 15)
    assert result.drawn and result.rate >= 0.9, result


def _drawn(since, n=200, types=None):
    version = SPEC.version(since)
    out = draw_cases(SPEC, version, n, seed_value=4, types=types)
    return out


def _parts(case):
    eq = dict(case.attributes)["equation"].replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    return lhs.split(","), (rhs if "->" in eq else None), [a for _, a in case.inputs]


DRAWN = None


def _cases():
    global DRAWN
    if DRAWN is None:
        DRAWN = _drawn(12, types={"T": "tensor(float)"})
    return DRAWN


def test_equation_grammar_is_covered():
    parts = [_parts(c) for c in _cases()]
    assert {len(terms) for terms, _, _ in parts} == {1, 2, 3}
    assert any(rhs is None for _, rhs, _ in parts) and any(rhs is not None for _, rhs, _ in parts)
    assert any(rhs == "" for _, rhs, _ in parts)  # full reduction to a scalar
    assert any(any("..." in t for t in terms) for terms, _, _ in parts)  # ellipsis
    assert any(any(len(set(t.replace("...", ""))) < len(t.replace("...", "")) for t in terms)
               for terms, _, _ in parts)  # a repeated letter in one operand: a diagonal
    assert any(set(terms[0]) & set(terms[1]) - {"."} for terms, _, _ in parts if len(terms) > 1)  # shared letters
    assert any(rhs is not None and set("".join(terms)) - set(rhs) - {"."} for terms, rhs, _ in parts)  # summed away
    assert any(" " in dict(c.attributes)["equation"] for c in _cases())
    assert any(x.size == 0 for c in _cases() for _, x in c.inputs)


def test_shapes_fit_the_equation():
    for case in _cases():
        terms, rhs, xs = _parts(case)
        assert len(terms) == len(xs)
        sizes, ell = {}, set()
        for t, x in zip(terms, xs):
            letters = t.replace("...", "")
            n_ell = x.ndim - len(letters)
            assert n_ell == 0 or "..." in t
            ell.add(n_ell if "..." in t else None)
            at = t.find("...")
            dims = list(x.shape[:at] + x.shape[at + n_ell:]) if at >= 0 else list(x.shape)
            for c, d in zip(letters, dims):
                assert sizes.setdefault(c, d) == d, (case, c)  # one size per letter
        assert len(ell - {None}) <= 1  # every ellipsis stands for the same number of dims
        if rhs is not None and ell - {None, 0}:
            assert "..." in rhs


def test_onnx_inference_agrees_with_numpy():
    for case in _cases()[:80]:
        eq = dict(case.attributes)["equation"]
        xs = [a for _, a in case.inputs]
        ins = [helper.make_tensor_value_info(f"x{i}", onnx.TensorProto.FLOAT, list(x.shape)) for i, x in enumerate(xs)]
        node = helper.make_node("Einsum", [f"x{i}" for i in range(len(xs))], ["y"], equation=eq)
        graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
        model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)]),
                                                  strict_mode=True)
        inferred = tuple(d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim)
        assert inferred == np.einsum(eq.replace(" ", ""), *xs).shape, eq
