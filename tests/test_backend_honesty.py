"""A failure opkit charges to a runtime must be the runtime's (issue #12, "Verdicts").

What a runtime cannot know (an opset newer than its release, a DirectML primitive on the CPU
provider) is skipped with the reason, not run; models are written at the IR version and opsets the
installed release reads; what Backend-API backends get passes onnx.checker; a runtime saying it lacks
a type is *unsupported*, not *error*; sub-byte tensors reach runtimes packed as ONNX lays them out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from opkit.backends import onnxruntime_versions
from opkit.backends.base import limits
from opkit.backends.onnx_bytes import from_raw_bytes, packed_size, raw_bytes
from opkit.backends.registry import create, resolve
from opkit.conformance import harness
from opkit.results.record import CaseRecord
from opkit.results.report_text import skipped_text
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker_engine import OK, InProcess, Result
from opkit.cases.case import make_case

ort = pytest.importorskip("onnxruntime")


def onnxruntime_backend(monkeypatch=None, version=None):
    """opkit's onnxruntime backend, as it would set itself up on onnxruntime ``version``."""
    if version is not None:
        monkeypatch.setattr(ort, "__version__", version)
    return create(resolve("onnxruntime"))


class RecordingWorker:
    """A worker that refuses every model and remembers what it was asked to load."""

    def __init__(self, info):
        self.info, self.models = info, []

    def describe(self):
        return dict(self.info)

    def _answer(self, model_fn):
        self.models.append(onnx.load_from_string(model_fn()))
        return Result("unsupported", None, "refused", "load")

    def run(self, key, model_fn, feeds, timeout=None):
        return self._answer(model_fn)

    def run_many(self, requests, timeout=None):
        return [self._answer(model_fn) for _, model_fn, _ in requests]


def ai_onnx_import(model) -> int:
    return next(o.version for o in model.opset_import if o.domain == "")


# -- 1, 2: opsets and IR versions from the installed release ---------------------------------------

@pytest.mark.parametrize("version, ir, opset", [("1.16.3", 9, 19), ("1.20.1", 10, 21), ("1.23.2", 11, 23),
                                                ("1.24.4", 13, 25), ("1.31.1", 13, 26), ("1.31.1+cu12", 13, 26)])
def test_onnxruntime_limits_follow_its_release(monkeypatch, version, ir, opset):
    backend = onnxruntime_backend(monkeypatch, version)
    assert backend.max_ir_version == ir
    assert backend.max_opset("ai.onnx") == backend.max_opset("") == opset
    assert limits(backend)["max_opsets"]["ai.onnx"] == opset


def test_releases_outside_the_table_get_its_nearest_row():
    newest = onnxruntime_versions.TABLE[onnxruntime_versions.NEWEST]
    assert onnxruntime_versions.for_version("9.1.0") == newest
    assert onnxruntime_versions.for_version("garbage") == onnxruntime_versions.TABLE[onnxruntime_versions.OLDEST]
    # a release between rows takes the row before it: never a newer IR than it may read
    assert onnxruntime_versions.for_version("1.19.2").ir_version == 10


def test_models_for_an_old_release_use_its_ir_version_and_opsets(monkeypatch):
    """onnxruntime <= 1.23 refused every model at IR 13; 1.16 refuses IR 10 and opset 21 too."""
    backend = onnxruntime_backend(monkeypatch, "1.16.3")
    runner = BackendRunner(worker=None, info=limits(backend) | {"name": "onnxruntime"})
    spec = harness.load_op("com.microsoft", "Trilu")
    v = spec.version(1)
    case = make_case(spec, v, {"T": "tensor(float)"}, {}, [("X", np.ones((2, 2), np.float32))])
    model = runner.built(case, v).model
    assert model.ir_version == 9
    assert {(o.domain, o.version) for o in model.opset_import} == {("com.microsoft", 1), ("", 19)}


def test_the_installed_release_reads_the_models_and_no_newer_ir():
    """The table's row for the installed onnxruntime is its real limit: a model at that IR version
    loads, one a step newer is refused."""
    backend = onnxruntime_backend()
    runner = BackendRunner(worker=None, info=limits(backend) | {"name": "onnxruntime"})
    spec = harness.load_op("ai.onnx", "Trilu")
    v = spec.version(14)
    case = make_case(spec, v, {"T": "tensor(float)"}, {}, [("input", np.ones((2, 3), np.float32))])
    model = runner.built(case, v).model
    assert model.ir_version == backend.max_ir_version
    session = backend.prepare(model.SerializeToString())
    assert session.run({"input": np.ones((2, 3), np.float32)})[0].shape == (2, 3)
    newer = onnx.ModelProto()
    newer.CopyFrom(model)
    newer.ir_version = backend.max_ir_version + 1
    with pytest.raises(Exception, match="max supported IR version: %d" % backend.max_ir_version):
        backend.prepare(newer.SerializeToString())


def test_versions_beyond_the_runtimes_opset_are_skipped_not_run():
    spec = harness.load_op("ai.onnx", "Celu")
    assert [v.since for v in spec.versions] == [12, 28]
    worker = RecordingWorker({"name": "old-runtime", "version": "1", "max_ir_version": 13,
                              "max_opsets": {"ai.onnx": 26}})
    runner = Runner(BackendRunner(worker), max_examples=2, seed=1)
    runner.run_spec(spec, ("examples", "properties", "differential"))
    assert {r.version for r in runner.results} == {12}  # Celu-12 ran (and was refused)
    assert runner.skipped == [{"op": "Celu", "domain": "ai.onnx", "version": 28, "types": {},
                               "reason": "beyond this runtime's opset (26)"}]
    assert worker.models and max(ai_onnx_import(m) for m in worker.models) == 12


def test_skips_are_listed_apart_by_reason():
    text = skipped_text([
        {"op": "Celu", "domain": "ai.onnx", "version": 28, "types": {}, "reason": "beyond this runtime's opset (26)"},
        {"op": "Mod", "domain": "ai.onnx", "version": 28, "types": {}, "reason": "beyond this runtime's opset (26)"},
        {"op": "DiagonalMatrix1", "domain": "directml", "version": 1, "types": {},
         "reason": "needs the DirectML execution provider"}])
    assert text.splitlines() == [
        "SKIPPED     beyond this runtime's opset (26): 2 op versions (Celu-28, Mod-28)",
        "SKIPPED     needs the DirectML execution provider: 1 op version (directml::DiagonalMatrix1-1)"]


def test_opkit_test_reports_skips_and_does_not_charge_them(tmp_path):
    from opkit.cli import main

    path = tmp_path / "r.json"
    code = main(["test", "--backend", "onnxruntime", "--op", "Celu", "--max-examples", "3", "--no-repro",
                     "--no-expectations", "-q", "--report", str(path)])
    report = json.loads(path.read_text())
    assert code == 0 and report["summary"]["ok"]  # Celu-12 passes; Celu-28 is not a failure
    assert {c["version"] for c in report["cases"]} == {12}
    newest = create(resolve("onnxruntime")).max_opset("ai.onnx")
    assert report["skipped"] == [{"op": "Celu", "domain": "ai.onnx", "version": 28, "types": {},
                                  "reason": f"beyond this runtime's opset ({newest})"}]


# -- 3: Backend-API backends get models onnx.checker accepts -----------------------------------------

@pytest.mark.parametrize("domain, op, since, binding, inputs", [
    ("com.microsoft", "Trilu", 1, {"T": "tensor(float)"}, [("X", np.arange(6, dtype=np.float32).reshape(2, 3))]),
    ("ai.onnx", "Add", 1, {"T": "tensor(float)"}, [("A", np.ones((2, 3), np.float32)),
                                                   ("B", np.ones((2, 3), np.float32))]),
])
def test_backend_api_models_pass_the_checker(monkeypatch, domain, op, since, binding, inputs):
    from onnxruntime.backend.backend import OnnxRuntimeBackend as ApiBackend

    spec = harness.load_op(domain, op)
    v = spec.version(since)
    case = make_case(spec, v, binding, {}, inputs)

    def run():
        with InProcess(resolve("onnxruntime-backend-api")) as worker:
            runner = BackendRunner(worker)
            assert runner.needs_output_shapes
            onnx.checker.check_model(runner.built(case, v).model)  # every output has a shape
            return runner.run_case(case, v)

    result = run()
    assert "Field 'shape'" not in result.message
    # onnxruntime's Backend API declines what is not a released onnx opset (com.microsoft), and
    # onnxruntime has no Add-1 kernel: findings about it (unsupported), no longer checker errors
    assert result.kind == "unsupported", result.message
    if op == "Trilu":  # told to take other domains too, it runs the op
        monkeypatch.setattr(ApiBackend, "allowReleasedOpsetsOnly", False)
        result = run()
        assert result.kind == OK, result.message
        np.testing.assert_array_equal(result.outputs[0], np.triu(inputs[0][1]))


def test_output_rank_follows_the_case_when_the_values_decide_it():
    spec = harness.load_op("ai.onnx", "Squeeze")
    v = spec.version(13)
    runner = BackendRunner(worker=None, info={"name": "api", "needs_output_shapes": True})

    def rank(x):
        case = make_case(spec, v, {"T": "tensor(float)"}, {}, [("data", x)])
        model = runner.built(case, v).model
        onnx.checker.check_model(model)
        return len(model.graph.output[0].type.tensor_type.shape.dim)

    assert rank(np.ones((1, 3), np.float32)) == 1 and rank(np.ones((2, 3), np.float32)) == 2


# -- 4: DirectML primitives need the DirectML execution provider -------------------------------------

def test_directml_ops_are_not_run_on_the_cpu_provider():
    backend = onnxruntime_backend()
    assert backend.unavailable_domains() == {"directml": "needs the DirectML execution provider"}
    with_dml = object.__new__(type(backend))
    with_dml.providers = ["DmlExecutionProvider", "CPUExecutionProvider"]
    assert with_dml.unavailable_domains() == {}
    worker = RecordingWorker(limits(backend) | {"name": "onnxruntime", "version": backend.version()})
    runner = Runner(BackendRunner(worker), max_examples=2)
    runner.run_spec(harness.load_op("directml", "DiagonalMatrix1"), ("examples", "properties", "differential"))
    assert runner.results == [] and worker.models == []
    assert [s["reason"] for s in runner.skipped] == ["needs the DirectML execution provider"]


# -- 5: the runtime saying it lacks something is unsupported -------------------------------------------

def test_a_load_error_saying_the_type_is_unsupported_is_unsupported():
    """onnxruntime refuses ConstantOfShape-25's float8e5m2fnuz value at load with status FAIL and
    "Unsupported value attribute datatype": that is a missing type, not an error."""
    value = helper.make_tensor("value", TensorProto.FLOAT8E5M2FNUZ, [1], [1.0])
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], value=value)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT8E5M2FNUZ, None)])
    backend = onnxruntime_backend()
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=backend.max_ir_version)
    with pytest.raises(Exception) as info:
        backend.prepare(model.SerializeToString())
    assert "Unsupported value attribute datatype" in str(info.value)
    assert backend.is_unsupported(info.value)


def test_the_status_decides_and_other_exceptions_are_not_the_runtimes_verdict():
    from opkit.backends.onnxruntime import says_unsupported, status_of

    run_error = RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
                             "running GRU node. Name:'' Status Message: GRU operator does not support double yet")
    wrong_input = RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Pad "
                               "node. Name:'' Status Message: Pad: invalid mode: 3 with zero effective input extent")
    kernel_missing = RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Failed to find kernel for X(99)")
    assert (status_of(run_error), status_of(kernel_missing)) == ("RUNTIME_EXCEPTION", "NOT_IMPLEMENTED")
    assert says_unsupported(run_error) and says_unsupported(kernel_missing)
    assert not says_unsupported(wrong_input)
    # opkit's own failure to feed is not the runtime saying anything, whatever its words
    opkits = ValueError("casting this input is not supported")
    assert status_of(opkits) is None and not onnxruntime_backend().is_unsupported(opkits)


# -- 6, 7: sub-byte types packed as ONNX lays them out --------------------------------------------------

def test_sub_byte_elements_are_packed_low_bits_first():
    int4 = np.array([1, -2, 3], dtype=ml_dtypes.int4)
    assert raw_bytes(int4, "int4") == bytes([0xE1, 0x03])  # -2 is 0xE; the odd element padded with 0
    assert raw_bytes(np.array([1, 2, 3, 4, 5], dtype=ml_dtypes.uint4), "uint4") == bytes([0x21, 0x43, 0x05])
    # float4e2m1: 1.0 is 0b0010, -1.5 is 0b1011
    assert raw_bytes(np.array([1.0, -1.5], dtype=ml_dtypes.float4_e2m1fn), "float4e2m1") == bytes([0xB2])
    # int2: 1, -2, 0, -1 are 01, 10, 00, 11, four to a byte
    assert raw_bytes(np.array([1, -2, 0, -1, 1], dtype=ml_dtypes.int2), "int2") == bytes([0b11001001, 0x01])
    assert packed_size(5, "int4") == 3 and packed_size(5, "int2") == 2 and packed_size(5, "bfloat16") == 10
    back = from_raw_bytes(bytes([0xE1, 0xC3, 0x75]), "tensor(int4)", (2, 3))
    assert back.dtype == ml_dtypes.int4 and back.tolist() == [[1, -2, 3], [-4, 5, 7]]
    assert from_raw_bytes(b"", "uint4", (0, 2)).shape == (0, 2)


def _cast_model(src: int, dst: int, ir: int) -> bytes:
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=dst)], "g",
                              [helper.make_tensor_value_info("x", src, ["n"])],
                              [helper.make_tensor_value_info("y", dst, ["n"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=ir).SerializeToString()


@pytest.mark.parametrize("code, dtype, values", [
    (TensorProto.INT4, ml_dtypes.int4, [1, -2, 3, -4, 5, -8, 7]),
    (TensorProto.UINT4, ml_dtypes.uint4, [1, 2, 3, 14, 5, 0, 15]),
])
def test_onnxruntime_gets_and_gives_4bit_values(code, dtype, values):
    backend = onnxruntime_backend()
    into = backend.prepare(_cast_model(code, TensorProto.INT8, backend.max_ir_version))
    got = into.run({"x": np.array(values, dtype=dtype)})[0]
    assert got.tolist() == values  # was [1, 0, -2, 0, 3, 0, -4] for int4: two elements read per byte
    out_of = backend.prepare(_cast_model(TensorProto.INT8, code, backend.max_ir_version))
    back = out_of.run({"x": np.array(values, dtype=np.int8)})[0]
    assert back.dtype == np.dtype(dtype) and back.shape == (len(values),) and back.tolist() == values


def test_repro_bundles_feed_onnxruntime_packed_4bit(tmp_path):
    """repro.py reruns an int4 case on onnxruntime and finds the outputs it should (it fed one
    element per byte, so onnxruntime read other values and the bundle reported a mismatch)."""
    from opkit.conformance.repro import ReproWriter
    from opkit.conformance.case_exec import Exec

    spec = harness.load_op("ai.onnx", "Cast")
    v = spec.version(21)
    x = np.array([[1, -2, 3], [-4, 5, 7]], dtype=ml_dtypes.int4)
    case = make_case(spec, v, {"T1": "tensor(int4)", "T2": "tensor(int8)"}, {"to": TensorProto.INT8}, [("input", x)])
    backend = onnxruntime_backend()
    record = {"backend": "onnxruntime", "domain": "ai.onnx", "op": "Cast", "version": 21,
              "types": dict(case.type_map), "suite": "differential", "example": "differential",
              "outcome": "mismatch", "message": "recorded"}
    writer = ReproWriter(str(tmp_path), resolve("onnxruntime"), limits(backend) | {"version": backend.version()},
                         backend.max_ir_version)
    folder = writer(CaseRecord(**record), case, Exec("mismatch", expected=(x.astype(np.int8),)), v)
    proc = subprocess.run([sys.executable, os.path.join(folder, "repro.py")], capture_output=True, text=True,
                          timeout=120, cwd=folder)
    assert proc.returncode == 0 and "outputs match the reference" in proc.stdout, proc.stdout + proc.stderr


def test_openvino_outputs_are_decoded_to_what_they_stand_for():
    """Pure decoding (runs without openvino): OpenVINO hands packed 4-bit outputs out as their
    bytes and a string output with no element as an empty float64 array."""
    from opkit.backends.openvino_backend import decode_output, packed_input

    packed = np.array([-31, -61, 5], dtype=np.int8)  # what OpenVINO returned for int4 [1, -2, 3, -4, 5]
    out = decode_output("int4", [5], packed)
    assert out.dtype == ml_dtypes.int4 and out.tolist() == [1, -2, 3, -4, 5]
    assert decode_output("uint4", [2, 2], np.array([0x21, 0xF3], np.uint8)).tolist() == [[1, 2], [3, 15]]
    empty = decode_output("string", [0, 2], np.array([], dtype=np.float64).reshape(0, 2))
    assert empty.dtype == object and empty.shape == (0, 2)
    blanks = decode_output("string", [2], np.array(["", ""]))
    assert blanks.dtype == object and blanks.tolist() == ["", ""]
    assert packed_input(np.array([1, -2, 3, -4, 5], dtype=ml_dtypes.int4), "int4").tolist() == [0xE1, 0xC3, 0x05]


def test_generated_tests_skip_what_the_backend_cannot_be_asked():
    from types import SimpleNamespace

    from opkit.conformance.pytest_support import check_differential

    spec = harness.load_op("ai.onnx", "Celu")
    v = spec.version(28)
    case = make_case(spec, v, {"T": "tensor(float)"}, {}, [("X", np.ones(3, np.float32))])
    worker = RecordingWorker({"name": "old-runtime", "version": "1", "max_opsets": {"ai.onnx": 26}})
    handle = SimpleNamespace(runner=Runner(BackendRunner(worker), max_examples=1))
    with pytest.raises(pytest.skip.Exception, match=r"beyond this runtime's opset \(26\)"):
        check_differential(handle, v, case)
    assert worker.models == []


def test_sequence_bindings_are_skipped_for_adapters_that_feed_tensors_only(tmp_path):
    """A backend whose opkit adapter cannot feed sequences is not charged errors for SequenceAt:
    its bindings are skipped with the reason (onnxruntime's adapter can, so it runs them)."""
    import json

    from opkit.cli import main

    path = tmp_path / "r.json"
    main(["test", "--backend", "test_conformance_fakes:Correct", "--op", "SequenceAt", "--suite", "differential",
          "--max-examples", "2", "--report", str(path), "--no-repro", "-q", "--no-second-opinion"])
    report = json.loads(path.read_text())
    assert not [c for c in report["cases"] if c["outcome"] != "untested"]
    reasons = {s["reason"] for s in report.get("skipped", [])}
    assert any("feeds and reads tensors only, not seq(tensor(" in r for r in reasons), reasons
    path2 = tmp_path / "r2.json"
    main(["test", "--backend", "onnxruntime", "--op", "SequenceAt", "--suite", "differential", "--max-examples", "2",
          "--max-bindings", "3", "--probe-limit", "0", "--report", str(path2), "--no-repro", "-q", "--no-second-opinion"])
    assert {c["outcome"] for c in json.loads(path2.read_text())["cases"]} <= {"pass", "unsupported"}


def test_an_op_version_newer_than_the_runtimes_onnx_schemas_is_skipped():
    """onnxruntime 1.31.1 reads opset 26 but was built with an ONNX whose Attention stops at 24: a
    model of opset 25 runs as Attention-24 and its window attributes are "Unrecognized". Attention-25
    is skipped with the reason (40 errors were charged to it), Attention-24 still runs."""
    backend = onnxruntime_backend()
    known = limits(backend)["known_versions"]
    assert 14 in known["ai.onnx::Add"] and known["ai.onnx::Attention"]
    info = {"name": "rt", "max_ir_version": 13, "max_opsets": {"ai.onnx": 26},
            "known_versions": {"ai.onnx::Attention": [23, 24]}}
    runner = BackendRunner(worker=RecordingWorker(info), info=info)
    assert "its schemas know Attention 23, 24, not Attention-25" in runner.cannot_run("ai.onnx", 25, "Attention")
    assert runner.cannot_run("ai.onnx", 24, "Attention") is None
    assert runner.cannot_run("ai.onnx", 25, "Add") is None  # an op it has no list for: as before
