"""Family hook sequence: sequences and optionals drawn valid, declared in models, compared and
saved in repro bundles (issue #17)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from family_cases import assert_mostly_valid, draw_cases, kernel_versions, op_cases
from opkit.backends.registry import resolve
from opkit.cases import generatable
from opkit.conformance import harness
from opkit.conformance.output_compare import Mismatch, compare_value
from opkit.results.record import CaseRecord
from opkit.cases.onnx_model import build
from opkit.conformance.repro import ReproWriter
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker_engine import InProcess
from opkit.cases.bindings import all_bindings, covering_bindings, type_links
from opkit.cases.case import make_case
from opkit.core.values import EMPTY_OPTIONAL

OPS = ("ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement", "SequenceAt",
       "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength", "SplitToSequence")
NO_OPKIT = "import runpy, sys; sys.modules['opkit'] = None; sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"


def _spec_version(op, since):
    spec = harness.load_op("ai.onnx", op)
    return spec, spec.version(since)


# ---------------------------------------------------------------------------------------------
# type binding


@pytest.mark.parametrize("spec,version", kernel_versions(OPS))
def test_every_version_is_generatable(spec, version):
    assert version.family == "sequence"
    assert generatable(spec, version) is None


def test_a_sequence_and_its_tensor_type_are_bound_together():
    _, v = _spec_version("SequenceAt", 11)
    bindings = all_bindings(v)
    assert len(bindings) == 15 * 2  # S (and T with it) x I, not S x T x I
    assert all(b["S"] == f"seq({b['T']})" for b in bindings)


def test_optional_get_element_binds_its_output_to_the_inputs_element():
    """OptionalGetElement-18/28 drew O and V apart: 60 of 60 draws rejected by ONNX inference."""
    for since in (15, 18, 28):
        _, v = _spec_version("OptionalGetElement", since)
        bindings = covering_bindings(v)
        assert bindings and all(b["V"] == (b["O"][9:-1] if b["O"].startswith("optional(") else b["O"])
                                for b in bindings)
        assert {b["O"] for b in bindings} >= {"optional(tensor(float))", "tensor(float)", "seq(tensor(int8))"} - (
            set() if since >= 18 else {"tensor(float)", "seq(tensor(int8))"})


def test_two_tensor_parameters_are_never_linked():
    cast = harness.load_op("ai.onnx", "Cast")
    assert type_links(cast.version(25)) == ()


@pytest.mark.parametrize("pin,expect", [({"T": "tensor(int8)"}, ("seq(tensor(int8))", "tensor(int8)")),
                                        ({"S": "seq(tensor(double))"}, ("seq(tensor(double))", "tensor(double)"))])
def test_pins_of_either_linked_parameter_hold(pin, expect):
    cases = op_cases("SequenceAt", 11, 15, types=pin)
    assert {(c.type_map["S"], c.type_map["T"]) for c in cases} == {expect}
    dtype = np.dtype(expect[1][7:-1].replace("double", "float64"))
    assert all(t.dtype == dtype for c in cases for t in dict(c.inputs)["input_sequence"])


# ---------------------------------------------------------------------------------------------
# the hook's cases


@pytest.mark.parametrize("spec,version", kernel_versions(OPS))
def test_the_hook_draws_valid_cases(spec, version):
    assert_mostly_valid(spec, version, bindings=4, per_binding=10)


def test_sequences_hold_zero_to_four_tensors_of_the_bound_type():
    counts = set()
    for case in op_cases("SequenceLength", 11, 60, types={"S": "seq(tensor(uint16))"}):
        seq = dict(case.inputs)["input_sequence"]
        assert isinstance(seq, list) and all(isinstance(t, np.ndarray) and t.dtype == np.uint16 for t in seq)
        counts.add(len(seq))
    assert counts == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("op", ["SequenceAt", "SequenceErase", "SequenceInsert"])
def test_positions_are_in_range_and_sometimes_negative(op):
    signs = set()
    for case in op_cases(op, 11, 80):
        inputs = dict(case.inputs)
        n, position = len(inputs["input_sequence"]), inputs["position"]
        if position is None:
            continue
        p = int(position)
        assert position.ndim == 0 and -n <= p <= (n if op == "SequenceInsert" else n - 1)
        signs.add(p < 0)
    assert signs == {True, False}


def test_concat_from_sequence_shapes_agree_but_along_the_axis():
    modes = set()
    for case in op_cases("ConcatFromSequence", 11, 80):
        seq, attrs = dict(case.inputs)["input_sequence"], dict(case.attributes)
        stack = attrs.get("new_axis") == 1
        modes.add(stack)
        assert seq and len({t.ndim for t in seq}) == 1
        r = seq[0].ndim
        if stack:
            assert -r - 1 <= attrs["axis"] <= r and len({t.shape for t in seq}) == 1
        else:
            axis = attrs["axis"] % r
            assert len({t.shape[:axis] + t.shape[axis + 1:] for t in seq}) == 1
    assert modes == {True, False}


def test_optionals_are_empty_present_or_left_out():
    def kinds(since):
        out = set()
        for case in op_cases("OptionalHasElement", since, 60, types={"O": "optional(tensor(float))"}):
            value = dict(case.inputs).get("input")
            out.add("left out" if value is None else "empty" if value is EMPTY_OPTIONAL else type(value).__name__)
        return out

    assert kinds(15) == {"empty", "ndarray"}  # a required input: present, holding a value or not
    assert kinds(18) == {"empty", "ndarray", "left out"}
    for case in op_cases("OptionalGetElement", 18, 60):  # an empty optional is an error there
        assert dict(case.inputs)["input"] is not EMPTY_OPTIONAL


def test_optional_without_an_input_names_the_element_type():
    seen = set()
    for case in op_cases("Optional", 15, 60):
        given, attrs = dict(case.inputs).get("input"), dict(case.attributes)
        seen.add(given is None)
        if given is None:
            assert attrs["type"] == case.type_map["V"]
    assert seen == {True, False}


def test_the_generic_step_draws_sequences_and_optionals_for_unfamilied_ops():
    """Identity has no family: its sequence and optional bindings go through the generic step."""
    spec, v = _spec_version("Identity", 16)
    assert v.family is None
    seqs = draw_cases(spec, v, 20, types={"V": "seq(tensor(int32))"})
    assert all(isinstance(dict(c.inputs)["input"], list) for c in seqs)
    opts = draw_cases(spec, v, 30, types={"V": "optional(tensor(float))"})
    assert {dict(c.inputs)["input"] is EMPTY_OPTIONAL for c in opts} == {True, False}
    assert all(not c.initializers for c in seqs + opts)  # an initializer is a tensor


def test_identity_runs_on_sequences_and_optionals_end_to_end():
    """The generic step's values through the runner (siblings on: they must leave these cases alone)."""
    spec, v = _spec_version("Identity", 16)
    runner = Runner(BackendRunner(InProcess(resolve("reference"))), max_examples=15, seed=2, siblings=5)
    runner.run_differential(spec, v, [{"V": "seq(tensor(float))"}, {"V": "optional(tensor(int64))"},
                                      {"V": "optional(seq(tensor(bool)))"}])
    assert [r.outcome for r in runner.results] == ["pass"] * 3, runner.results
    assert all(r.examples_run >= 10 for r in runner.results)


# ---------------------------------------------------------------------------------------------
# reference kernels the drawn cases reach


def test_sequence_insert_counts_negative_positions_from_the_last_tensor():
    """-1 is where the last tensor is, as in SequenceAt/SequenceErase (onnxruntime and
    onnx.reference agree); the kernel appended there, a mismatch on every negative position."""
    insert = harness.oracle("ai.onnx", "SequenceInsert", 11)
    a, b, t = (np.array(v, np.int64) for v in (1, 2, 9))
    at = {p: [int(x) for x in harness.first(insert([a, b], t, np.array(p, np.int64)))] for p in (-2, -1, 0, 1, 2)}
    assert at == {-2: [9, 1, 2], -1: [1, 9, 2], 0: [9, 1, 2], 1: [1, 9, 2], 2: [1, 2, 9]}


def test_split_to_sequence_of_an_empty_axis_is_an_empty_sequence():
    split = harness.oracle("ai.onnx", "SplitToSequence", 24)
    assert harness.first(split(np.zeros((2, 0), np.float32), axis=1, keepdims=1)) == []


def test_kernels_take_an_empty_optional_where_the_type_allows_one():
    has = harness.oracle("ai.onnx", "OptionalHasElement", 15)
    assert harness.first(has(None)).item() is False and harness.first(has(np.ones(1, np.float32))).item() is True
    get = harness.oracle("ai.onnx", "OptionalGetElement", 18)
    with pytest.raises(Exception, match="V1"):  # an empty optional has no element to get
        get(None)


# ---------------------------------------------------------------------------------------------
# models


def _graph_input(model, name):
    return next(i for i in model.graph.input if i.name == name)


def test_models_declare_sequence_and_optional_inputs_that_onnx_accepts():
    spec, v = _spec_version("SequenceAt", 11)
    a, b = np.ones((2, 3), np.float32), np.zeros((1, 4), np.float32)
    case = make_case(spec, v, {"S": "seq(tensor(float))", "T": "tensor(float)", "I": "tensor(int64)"}, {},
                     [("input_sequence", [a, b]), ("position", np.array(-1, np.int64))])
    built = build(case, v)
    seq_type = _graph_input(built.model, "input_sequence").type.sequence_type.elem_type.tensor_type
    assert seq_type.elem_type == onnx.TensorProto.FLOAT and len(seq_type.shape.dim) == 2
    assert built.inference_error is None and built.feeds["input_sequence"] == [a, b]
    onnx.checker.check_model(built.model, full_check=True)
    assert len(built.model.graph.output[0].type.tensor_type.shape.dim) == 2  # inferred through the sequence

    spec, v = _spec_version("OptionalHasElement", 15)
    case = make_case(spec, v, {"O": "optional(seq(tensor(int64)))", "B": "tensor(bool)"}, {},
                     [("input", EMPTY_OPTIONAL)])
    built = build(case, v)
    opt = _graph_input(built.model, "input").type.optional_type.elem_type
    assert opt.sequence_type.elem_type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert built.inference_error is None
    onnx.checker.check_model(built.model, full_check=True)


def test_optional_without_input_carries_its_type_attribute():
    spec, v = _spec_version("Optional", 15)
    case = make_case(spec, v, {"V": "seq(tensor(uint8))", "O": "optional(seq(tensor(uint8)))"},
                     {"type": "seq(tensor(uint8))"}, [("input", None)])
    built = build(case, v)
    (attr,) = built.model.graph.node[0].attribute
    assert attr.type == onnx.AttributeProto.TYPE_PROTO
    assert attr.tp.sequence_type.elem_type.tensor_type.elem_type == onnx.TensorProto.UINT8
    out = built.model.graph.output[0].type
    assert out.optional_type.elem_type.sequence_type.elem_type.tensor_type.elem_type == onnx.TensorProto.UINT8
    assert built.inference_error is None and not built.model.graph.input


def test_a_model_signature_tells_sequence_ranks_and_empty_optionals_apart():
    spec, v = _spec_version("OptionalHasElement", 18)
    types = {"O": "optional(tensor(float))", "B": "tensor(bool)"}
    keys = {build(make_case(spec, v, types, {}, [("input", value)]), v).key
            for value in (EMPTY_OPTIONAL, np.ones(2, np.float32), np.ones((2, 2), np.float32), None)}
    assert len(keys) == 4


# ---------------------------------------------------------------------------------------------
# comparing


def test_sequences_compare_by_count_then_tensor_by_tensor():
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0], np.float32)
    compare_value([a, b], [a.copy(), b.copy()], "seq(tensor(float))")
    compare_value([], [], "seq(tensor(float))")
    with pytest.raises(Mismatch) as err:
        compare_value([a, b], [a], "seq(tensor(float))")
    assert err.value.what == "length" and err.value.details == {"expected_length": 2, "actual_length": 1}
    with pytest.raises(Mismatch) as err:
        compare_value([a, b], [a, b + 1], "seq(tensor(float))", name="out")
    assert err.value.what == "values" and err.value.message.startswith("out[1]:")
    with pytest.raises(Mismatch) as err:
        compare_value([a, b], [a, b.astype(np.float64)], "seq(tensor(float))")
    assert err.value.what == "dtype"
    with pytest.raises(Mismatch) as err:
        compare_value([a], a, "seq(tensor(float))")
    assert err.value.what == "type"
    with pytest.raises(Mismatch) as err:
        compare_value(a, [a], "tensor(float)")
    assert err.value.what == "type"


def test_sequence_tensors_get_their_element_types_allowance():
    a = np.array([1.0, 2.0], np.float32)
    close = a + np.float32(1e-7)  # within a float's rounding of 1 and 2
    compare_value([a], [close], "seq(tensor(float))")
    with pytest.raises(Mismatch):
        compare_value([a], [a + 1e-3], "seq(tensor(float))")


def test_optionals_compare_by_presence_then_element():
    a = np.array([1, 2], np.int64)
    compare_value(None, None, "optional(tensor(int64))")
    compare_value(a, a.copy(), "optional(tensor(int64))")
    compare_value([a], [a], "optional(seq(tensor(int64)))")
    for expected, actual in ((None, a), (a, None), (None, [None])):
        with pytest.raises(Mismatch) as err:
            compare_value(expected, actual, "optional(tensor(int64))")
        assert err.value.what == "optional"
    compare_value(None, a, "tensor(int64)")  # no optional type: an expected None checks nothing


# ---------------------------------------------------------------------------------------------
# backends


def test_onnxruntime_refuses_sequences_it_cannot_pass_as_unsupported():
    """onnxruntime's Python API has no bfloat16 (or float8 ...) sequences: unsupported, not an error."""
    pytest.importorskip("onnxruntime")
    from types import SimpleNamespace

    from opkit.backends.base import Unsupported
    from opkit.backends.onnxruntime import OnnxRuntimeBackend, _Session

    value = SimpleNamespace(name="x", type="seq(tensor(bfloat16))")
    fake = SimpleNamespace(get_inputs=lambda: [value], get_outputs=lambda: [])
    backend = OnnxRuntimeBackend()
    with pytest.raises(Unsupported, match=r"seq\(tensor\(bfloat16\)\)") as err:
        _Session(backend._ort, fake)
    assert backend.is_unsupported(err.value)
    fine = SimpleNamespace(name="x", type="seq(tensor(float16))")
    _Session(backend._ort, SimpleNamespace(get_inputs=lambda: [fine], get_outputs=lambda: [fine]))


@pytest.mark.parametrize("backend", ["onnxruntime", "onnx-reference", "reference"])
def test_backends_take_and_return_sequences_and_empty_optionals(backend):
    pytest.importorskip("onnxruntime")
    a, b = np.ones((2, 1), np.float32), np.zeros(3, np.float32)
    runner = Runner(BackendRunner(InProcess(resolve(backend))))
    for op, since, types, inputs, expected in [
            ("SequenceErase", 11, {"S": "seq(tensor(float))", "I": "tensor(int32)"},
             [("input_sequence", [a, b]), ("position", np.array(0, np.int32))], None),
            ("OptionalHasElement", 18, {"O": "optional(tensor(float))", "B": "tensor(bool)"},
             [("input", EMPTY_OPTIONAL)], False),
            ("OptionalHasElement", 18, {"O": "optional(seq(tensor(float)))", "B": "tensor(bool)"},
             [("input", [a])], True)]:
        spec, v = _spec_version(op, since)
        case = make_case(spec, v, types, {}, inputs)
        ex = runner.execute_differential(v, case)
        assert ex.outcome == "pass", (backend, op, ex.message)
        result = runner.backend.run_case(case, v)
        got = result.outputs[0]
        if expected is None:
            assert isinstance(got, list) and len(got) == 1 and np.array_equal(got[0], b)
        else:
            assert got.item() is expected


# ---------------------------------------------------------------------------------------------
# repro bundles


def _bundle(tmp_path, target, op, since, types, attrs, inputs):
    spec, v = _spec_version(op, since)
    case = make_case(spec, v, types, attrs, inputs)
    backend_spec = resolve(target)
    runner = BackendRunner(InProcess(backend_spec))
    ex = Runner(runner).execute_differential(v, case)
    record = {"backend": target, "domain": "ai.onnx", "op": op, "version": since, "types": types,
              "suite": "differential", "example": "differential", "outcome": ex.outcome, "message": ex.message}
    writer = ReproWriter(str(tmp_path), backend_spec, runner.info, runner.ir_version)
    folder = writer(CaseRecord(**record), case, ex, v)
    return ex, folder


def _rerun(folder, without_opkit=True):
    script = os.path.join(folder, "repro.py")
    argv = [sys.executable, "-c", NO_OPKIT, script] if without_opkit else [sys.executable, script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=folder)


def _retarget(folder, target):
    meta_path = os.path.join(folder, "case.json")
    meta = json.load(open(meta_path))
    meta["backend"]["target"] = target
    json.dump(meta, open(meta_path, "w"))


def test_a_sequence_input_is_saved_and_reloaded(tmp_path):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array(5.0, np.float32)
    types = {"S": "seq(tensor(float))", "I": "tensor(int64)"}
    ex, folder = _bundle(tmp_path, "sequence_fakes:Wrong", "SequenceLength", 11, types, {},
                         [("input_sequence", [a, b])])
    assert ex.outcome == "mismatch"
    meta = json.load(open(os.path.join(folder, "case.json")))
    (file,) = meta["input_values"].values()
    proto = onnx.SequenceProto()
    proto.ParseFromString(open(os.path.join(folder, file), "rb").read())
    saved = onnx.numpy_helper.to_list(proto)
    assert len(saved) == 2 and np.array_equal(saved[0], a) and saved[1].shape == () and saved[1] == 5
    proc = _rerun(folder)
    assert proc.returncode == 1 and "MISMATCH" in proc.stdout, proc.stdout + proc.stderr
    _retarget(folder, "sequence_fakes:Correct")
    proc = _rerun(folder)
    assert proc.returncode == 0 and "no longer reproduces" in proc.stdout, proc.stdout + proc.stderr


def test_a_sequence_output_is_compared_by_the_bundle(tmp_path):
    a, b = np.array([1, 2], np.int32), np.array([[3]], np.int32)
    types = {"T": "tensor(int32)", "S": "seq(tensor(int32))"}
    ex, folder = _bundle(tmp_path, "sequence_fakes:Wrong", "SequenceConstruct", 11, types, {},
                         [("inputs", a), ("inputs_1", b)])
    assert ex.outcome == "mismatch" and ex.details["what"] == "length"
    assert any(f.endswith(".seq.pb") for f in os.listdir(folder))
    proc = _rerun(folder)
    assert proc.returncode == 1 and "a sequence of 1 tensor(s), expected 2" in proc.stdout, proc.stdout + proc.stderr
    _retarget(folder, "sequence_fakes:Correct")
    assert _rerun(folder).returncode == 0


def test_empty_optionals_are_saved_and_reloaded(tmp_path):
    types = {"O": "optional(tensor(float))", "B": "tensor(bool)"}
    ex, folder = _bundle(tmp_path, "sequence_fakes:Wrong", "OptionalHasElement", 15, types, {},
                         [("input", EMPTY_OPTIONAL)])
    assert ex.outcome == "mismatch"
    assert any(f.startswith("input.") and f.endswith(".opt.pb") for f in os.listdir(folder))
    assert _rerun(folder).returncode == 1
    _retarget(folder, "sequence_fakes:Correct")
    assert _rerun(folder).returncode == 0

    # an expected empty optional: onnx.reference's Optional wraps its output in a list, opkit's
    # reference returns the empty optional itself
    types = {"V": "tensor(int64)", "O": "optional(tensor(int64))"}
    ex, folder = _bundle(tmp_path / "optional", "sequence_fakes:Correct", "Optional", 15, types,
                         {"type": "tensor(int64)"}, [("input", None)])
    assert ex.outcome == "mismatch" and ex.details["what"] == "optional"
    assert any(f.startswith("expected.") and f.endswith(".opt.pb") for f in os.listdir(folder))
    proc = _rerun(folder)
    assert proc.returncode == 1 and "expected an empty optional" in proc.stdout, proc.stdout + proc.stderr
    _retarget(folder, "opkit.backends.reference:ReferenceBackend")
    proc = _rerun(folder, without_opkit=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
