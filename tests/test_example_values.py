"""Example arguments beyond one tensor: variadic lists, sequences, optionals, stated precision;
how a nondeterministic op's example is judged; how large tensors are shown on a page."""

from __future__ import annotations

import textwrap

import numpy as np

from opkit.conformance import harness
from opkit.conformance.case_exec import example_exec
from opkit.conformance.worker_engine import Result
from opkit.emit.page_values import format_tensor
from opkit.spec.dump import dump_spec
from opkit.spec.load import load_spec_file
from opkit.spec.model import ContainerValue

HEAD = """\
op: X
domain: ai.onnx
versions:
- since: 1
  inputs:
  - {name: seq, type: S, option: optional}
  - {name: parts, type: T, option: variadic}
  outputs:
  - {name: out, type: T}
  - {name: opt, type: O, option: optional}
  type_constraints:
    T: {types: ['tensor(float)', 'tensor(int64)']}
    S: {types: ['seq(tensor(float))']}
    O: {types: ['optional(tensor(int64))']}
  shape_inference: false
  examples:
"""


def _load(examples: str):
    text = HEAD + textwrap.indent(textwrap.dedent(examples), "  ")
    return load_spec_file("X.yaml", text.encode())


def test_variadic_sequence_and_optional_values_load_and_round_trip():
    spec, diags = _load("""\
        - name: ok
          rtol: 0.001
          inputs:
            parts: [{dtype: float, value: [1]}, {value: [2, 3]}]
            seq: {type: seq(tensor(float)), sequence: [{value: [1.5]}, {value: [[2]]}]}
          outputs:
            out: {dtype: float, value: [1, 2, 3]}
            opt: {type: optional(tensor(int64)), optional: null}
        """)
    assert diags == []
    e = spec.versions[0].examples[0]
    parts = dict(e.inputs)["parts"]
    assert [t.value for t in parts] == [(1,), (2, 3)] and parts[1].dtype == "float"
    seq = dict(e.inputs)["seq"]
    assert isinstance(seq, ContainerValue) and [t.shape for t in seq.items] == [(1,), (1, 1)]
    assert dict(e.outputs)["opt"] == ContainerValue("optional(tensor(int64))", (), location=dict(e.outputs)["opt"].location)
    assert e.rtol == 0.001
    again, diags = load_spec_file("X.yaml", dump_spec(spec).encode())
    assert diags == [] and dump_spec(again) == dump_spec(spec)
    case, expected = harness.example_case(spec, spec.versions[0], e)
    names = [name for name, _ in case.inputs]
    assert names == ["seq", "parts", "parts_1"]  # the variadic arguments, named as the generator names them
    assert isinstance(dict(case.inputs)["seq"], list) and expected[1] is None  # None: the empty optional


def test_bad_arguments_are_one_line_errors_with_a_place():
    _, diags = _load("""\
        - name: bad
          rtol: -1
          inputs:
            parts: {dtype: float, value: [1]}
            seq: {type: seq(tensor(int64)), sequence: []}
          outputs:
            out: [[1]]
        """)
    messages = [f"{d.location.line}: {d.message}" for d in diags]
    assert any("'parts' is variadic: give a list of tensors" in m for m in messages), messages
    assert any("seq(tensor(int64)) is not allowed by type parameter S" in m for m in messages), messages
    assert any("rtol must be a number >= 0" in m for m in messages), messages
    assert all(d.location.line > 1 for d in diags)


def test_a_nondeterministic_examples_values_are_not_compared():
    spec, diags = load_spec_file("specs/ai.onnx/Bernoulli.yaml")
    assert diags == []
    version = spec.versions[-1]
    assert version.determinism == "nondeterministic"
    example = version.examples[0]
    case, expected = harness.example_case(spec, version, example)
    other_draw = [1.0 - np.asarray(expected[0])]  # every value differs, types and shapes agree
    assert example_exec(version, case, example, expected, Result("ok", other_draw)).outcome == "pass"
    wrong_shape = [np.zeros((1,), dtype=np.asarray(expected[0]).dtype)]
    assert example_exec(version, case, example, expected, Result("ok", wrong_shape)).outcome == "mismatch"


def test_a_stated_precision_passes_what_it_allows_and_no_more():
    spec, _ = load_spec_file("specs/ai.onnx/AveragePool.yaml")
    version = spec.versions[-1]
    example = next(e for e in version.examples if e.rtol)
    case, expected = harness.example_case(spec, version, example)
    close = [np.asarray(expected[0]) * np.float32(1 + 5e-4)]
    far = [np.asarray(expected[0]) * np.float32(1 + 5e-3)]
    assert example_exec(version, case, example, expected, Result("ok", close)).outcome == "pass"
    assert example_exec(version, case, example, expected, Result("ok", far)).outcome == "mismatch"


def test_large_tensors_are_shown_summarised():
    small = format_tensor(((1, 2), (3, 4)))
    assert small == "[[1, 2],\n [3, 4]]"
    big = format_tensor(tuple(tuple(range(r * 30, r * 30 + 30)) for r in range(10)))
    lines = big.splitlines()
    assert len(lines) == 7 and "..." in lines[0] and lines[3].strip() == "...,"
    assert lines[0].startswith("[[  0,   1,   2, ...,  27,")


def test_onnx_reference_optionals_are_read_as_opkit_holds_them():
    """onnx.reference's Optional returns [x] (or [] when empty); its adapter gives x (or None), as
    onnxruntime does, so the Optional example passes there instead of reading as a sequence."""
    from opkit.backends.onnx_reference import OnnxReferenceBackend
    from opkit.cases.onnx_model import build

    spec, _ = load_spec_file("specs/ai.onnx/Optional.yaml")
    version = spec.versions[-1]
    example = version.examples[0]
    case, expected = harness.example_case(spec, version, example)
    built = build(case, version)
    session = OnnxReferenceBackend().prepare(built.model.SerializeToString())
    (got,) = session.run(built.feeds)
    np.testing.assert_array_equal(got, expected[0])
