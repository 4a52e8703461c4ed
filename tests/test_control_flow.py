"""Control-flow kernels (If, Loop, Scan, SequenceMap): the Body interface, the compute helpers
against hand-computed values, graph attributes given as ONNX text, the reference backend's Bodies
(outer scope), and the control_flow family hook (every drawn case valid by construction)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest
from hypothesis import HealthCheck, given, settings
from onnx import helper

from opkit.backends.reference import ReferenceBackend
from opkit.cases import cases
from opkit.cases.onnx_model import build
from opkit.conformance import harness
from opkit.kernels import KernelValidationError
from opkit.kernels.lib import Body, if_core, loop_core, scan8_core, scan_core, sequence_map_core
from opkit.kernels.registry import get_kernel


def body(fn, n_in, n_out, types=(), shapes=()):
    return Body(lambda *v: fn(*v), n_in, n_out, tuple(types), tuple(shapes), "test body")


def _fails():
    raise AssertionError("the branch not taken must not run")


# -- Body and the helpers ------------------------------------------------------------------------

def test_body_checks_its_arity():
    b = body(lambda x: (x,), 1, 1)
    assert b(np.float32(2)) == (np.float32(2),)
    with pytest.raises(ValueError, match="takes 1 input"):
        b()
    with pytest.raises(ValueError, match="declares 2 output"):
        body(lambda x: (x,), 1, 2)(1)


def test_if_runs_only_the_chosen_branch():
    then = body(lambda: (np.array([1.0, 2.0]),), 0, 1)
    other = body(lambda: _fails(), 0, 1)
    (out,) = if_core(np.array([True]), then, other)
    np.testing.assert_array_equal(out, [1.0, 2.0])
    (out,) = if_core(np.array(False), other.__class__(lambda: (np.array(3),), 0, 1), then)
    np.testing.assert_array_equal(out, [1.0, 2.0])


def test_loop_trip_count_carried_and_scan_outputs():
    # i, cond, x -> cond, x + i, x * 10 (scan of the value before the update): M = 3 gives
    # x = 0+0+1+2 = 3 and scans [0*10, 0*10, 1*10]
    b = body(lambda i, c, x: (c, x + i, x * 10), 3, 3)
    x, scan = loop_core(np.array(3), None, [np.array(0)], b)
    assert int(x) == 3
    np.testing.assert_array_equal(scan, [0, 0, 10])


def test_loop_condition_from_the_body_and_ignored_without_cond():
    stop_at_2 = body(lambda i, c, x: (np.array(i + 1 < 2), x + 1), 3, 2)
    (x,) = loop_core(None, np.array(True), [np.array(0)], stop_at_2)
    assert int(x) == 2  # runs i = 0, 1
    (x,) = loop_core(np.array(5), None, [np.array(0)], stop_at_2)
    assert int(x) == 5  # without the cond input the body's condition is ignored
    (x,) = loop_core(np.array(5), np.array(False), [np.array(7)], stop_at_2)
    assert int(x) == 7  # a false condition: no trip


def test_loop_zero_trips_gives_empty_scan_output_of_the_declared_type():
    b = body(lambda i, c: (c, np.zeros(2, np.int32)), 2, 2, types=("tensor(bool)", "tensor(int32)"),
             shapes=(None, (2,)))
    (scan,) = loop_core(np.array(0), None, [], b)
    assert scan.shape == (0, 2) and scan.dtype == np.int32


def test_scan_reverse_input_and_output_axes_and_prepending():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    neg = body(lambda s: (-s,), 1, 1)
    (out,) = scan_core([x], neg, 1, scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])
    np.testing.assert_array_equal(out, [[-3, -2, -1], [-6, -5, -4]])
    (out,) = scan_core([x], neg, 1, scan_output_directions=[1])  # prepend: last row first
    np.testing.assert_array_equal(out, [[-4, -5, -6], [-1, -2, -3]])
    cum = body(lambda s, r: (s + r, s + r), 2, 2)
    state, partial = scan_core([np.zeros(3), x], cum, 1, scan_input_axes=[-2])
    np.testing.assert_array_equal(state, [5, 7, 9])
    np.testing.assert_array_equal(partial, [[1, 2, 3], [5, 7, 9]])


def test_scan8_batches_and_sequence_lengths():
    x = np.arange(12.0).reshape(2, 3, 2)
    cum = body(lambda s, r: (s + r,), 2, 1)
    (state,) = scan8_core(np.array([3, 1]), [np.zeros((2, 2)), x], cum, 1)
    np.testing.assert_array_equal(state, [[6, 9], [6, 7]])
    copy = body(lambda r: (r,), 1, 1)
    (out,) = scan8_core(None, [x], copy, 1, directions=[1])
    np.testing.assert_array_equal(out, x[:, ::-1])


def test_sequence_map_indexes_sequences_and_passes_tensors_whole():
    b = body(lambda a, s, t: (a + s + t, a), 3, 2)
    seq = [np.array([1.0]), np.array([2.0, 3.0])]
    sums, copies = sequence_map_core(seq, [[np.array([10.0]), np.array([20.0])], np.array(100.0)], b)
    np.testing.assert_array_equal(sums[1], [122.0, 123.0])
    assert [c.tolist() for c in copies] == [[1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="sequence of 1"):
        sequence_map_core(seq, [[np.array([1.0])]], body(lambda a, s: (a,), 2, 1))


# -- the generated kernels with graph text -------------------------------------------------------

THEN = "t () => (float[2] y) { y = Constant <value = float[2] {1, 2}> () }"
ELSE2 = "e () => (float[2] y, float[2] z) { y = Constant <value = float[2] {3, 4}> () z = Neg (y) }"


def test_if_kernel_evaluates_graph_text_and_checks_its_rules():
    k = get_kernel("ai.onnx", "If", 13)
    out = k(np.array(True), then_branch=THEN, else_branch=THEN.replace("t ()", "e ()"))[0]
    np.testing.assert_array_equal(out, [1.0, 2.0])
    with pytest.raises(KernelValidationError, match="C2"):
        k(np.array(True), then_branch=THEN, else_branch=ELSE2)
    with pytest.raises(KernelValidationError, match="attribute-type:then_branch"):
        k(np.array(True), then_branch="not a graph", else_branch=THEN)
    with pytest.raises(KernelValidationError, match="C1"):
        k(np.array([True, False]), then_branch=THEN, else_branch=THEN)


def test_loop_kernel_refuses_a_loop_that_never_ends():
    k = get_kernel("ai.onnx", "Loop", 16)
    b = "b (int64 i, bool c, float x) => (bool co, float y) { co = Identity (c) y = Neg (x) }"
    with pytest.raises(KernelValidationError, match="C4"):
        k(None, None, np.array(1.0, np.float32), body=b)
    out = k(np.array(3), None, np.array(1.0, np.float32), body=b)
    assert float(out[0]) == -1.0


def test_reference_backend_bodies_see_the_outer_scope():
    then = onnx.parser.parse_graph("t () => (float[2] y) { y = Add (x, x) }")
    other = onnx.parser.parse_graph("e () => (float[2] y) { y = Neg (x) }")
    node = helper.make_node("If", ["c"], ["out"], then_branch=then, else_branch=other)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(ReferenceBackend.run_model(model, [np.array(True), x])[0], [2.0, -4.0])
    np.testing.assert_array_equal(ReferenceBackend.run_model(model, [np.array(False), x])[0], [-1.0, 2.0])


# -- the family hook: valid by construction ------------------------------------------------------

DRAWS = [("If", 11, {"V": "tensor(float)"}), ("If", 16, {"V": "optional(seq(tensor(int64)))"}),
         ("If", 1, {"V": "tensor(double)"}), ("If", 23, {"V": "tensor(string)"}),
         ("Loop", 1, {"V": "tensor(float)"}), ("Loop", 21, {"V": "tensor(int4)"}),
         ("Loop", 16, {"V": "tensor(int32)"}), ("Scan", 8, {"V": "tensor(float)"}),
         ("Scan", 9, {"V": "tensor(int64)"}), ("Scan", 25, {"V": "tensor(float16)"}),
         ("SequenceMap", 17, {"S": "seq(tensor(float))", "V": "seq(tensor(float))"}),
         ("SequenceMap", 17, {"S": "seq(tensor(int8))", "V": "tensor(bool)"})]


@pytest.mark.parametrize("op,since,types", DRAWS)
def test_every_drawn_case_satisfies_the_rules_and_onnx_inference(op, since, types):
    spec = harness.load_op("ai.onnx", op)
    version = spec.version(since)
    seen = []

    @settings(max_examples=15, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(spec, version, types=types))
    def check(case):
        harness.expected_outputs(case)  # raises Invalid when a rule or the kernel refuses the case
        built = build(case, version)
        assert built.inference_error is None, built.inference_error
        seen.append(case)

    check()
    assert seen


def test_the_accumulation_model_reads_a_sequence_of_tensors_of_different_shapes():
    """SequenceMap's input sequence may hold tensors of different shapes: the accumulation model
    took np.abs of the whole (ragged) list and failed."""
    import numpy as np

    from opkit.cases.case import Case
    from opkit.conformance.accumulation import float_inputs

    seq = [np.array([1.0, -2.0], np.float32), np.array([[3.0]], np.float32)]
    case = Case("ai.onnx", "SequenceMap", 17, (), (), (("input_sequence", seq),), frozenset(), (), 0, 0, None)
    assert [a.tolist() for a in float_inputs(case)] == [[1.0, 2.0], [[3.0]]]
