"""Whose failure a verdict is: a model the converter in front of a runtime (onnx2torch,
jaxonnxruntime, IREE's importer and compiler) cannot translate is ``unconverted``, the converter's,
never charged to the runtime; what opkit's adapter could not hand over is fixed or opkit's; and
each adapter says the precision it runs at."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from opkit.backends.base import BackendBase, ConversionFailed, Unsupported, converter_of
from opkit.cli import main
from opkit.results.outcomes import CHARGED, FAILING, LETTERS, SUCCESS, UNCONVERTED, run_ok

from tests.test_conformance_fakes import trilu

FAKE = "tests.test_converter_outcome"


class _Session:
    def __init__(self, model):
        from onnx import numpy_helper

        node = model.graph.node[0]
        self.upper = next((a.i for a in node.attribute if a.name == "upper"), 1)
        self.consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.node_inputs = list(node.input)

    def run(self, feeds):
        values = dict(self.consts, **feeds)
        args = [values[n] if n else None for n in self.node_inputs]
        return [trilu(*args, upper=self.upper)]


class NeverConverts(BackendBase):
    """A runtime behind a converter that translates nothing."""

    name = "behind-converter"
    converter = "fakeconv"

    def version(self) -> str:
        return "1.0"

    def converter_version(self) -> str:
        return "0.1"

    def prepare(self, model_bytes: bytes):
        raise ConversionFailed(self.converter, "NotImplementedError: no converter for Trilu", self.converter_version())


class ConvertsUpperOnly(NeverConverts):
    """A converter that translates Trilu with upper = 1 only; the runtime computes what it gets
    right. Before ``unconverted``, its refusals of upper = 0 were charged to the runtime as
    ``refused`` once another case of the binding had run."""

    def prepare(self, model_bytes: bytes):
        import onnx

        model = onnx.load_from_string(model_bytes)
        session = _Session(model)
        if session.upper == 0:
            raise ConversionFailed(self.converter, "NotImplementedError: upper = 0 has no converter",
                                   self.converter_version())
        return session


def _run(tmp_path, backend, *suites, bindings="3"):
    report = tmp_path / "r.json"
    junit = tmp_path / "r.xml"
    args = ["test", "--backend", f"{FAKE}:{backend}", "--op", "Trilu-14", "--max-examples", "5", "--no-repro",
            "--no-isolate", "--no-expectations", "--no-second-opinion", "--max-bindings", bindings,
            "--report", str(report), "--junit-xml", str(junit), "-q"]
    for suite in suites:
        args += ["--suite", suite]
    code = main(args)
    return code, json.loads(report.read_text()), junit.read_text()


def test_unconverted_is_its_own_outcome_never_charged_to_the_runtime():
    assert UNCONVERTED not in CHARGED and UNCONVERTED not in FAILING and UNCONVERTED not in SUCCESS
    assert LETTERS[UNCONVERTED] == "V" and len(set(LETTERS.values())) == len(LETTERS)
    assert not run_ok([UNCONVERTED]) and run_ok(["pass", UNCONVERTED])  # ignored like untested


def test_a_conversion_failure_is_unconverted_counted_per_converter(tmp_path):
    from opkit.results.report import validate_report

    code, report, junit = _run(tmp_path, "NeverConverts", "differential", "robustness", "properties")
    cases = report["cases"]
    assert cases and {c["outcome"] for c in cases} == {"unconverted"}
    # the robustness suite too: its valid base case never reached the runtime, so nothing passed
    assert {c["suite"] for c in cases} >= {"differential", "robustness", "properties"}
    assert all(c["details"]["converter"] == "fakeconv 0.1" and "kernel" not in c["details"] for c in cases)
    assert report["summary"]["converters"] == {"fakeconv 0.1": {"cases": len(cases)}}
    assert report["target"]["backends"][0]["converter"] == "fakeconv 0.1"
    assert "causes" not in report  # no failure of the runtime's
    assert validate_report(report) == []
    assert code == 1 and report["summary"]["ok"] is False  # nothing of the runtime was tested
    assert junit.count("<skipped") == len(cases) and "fakeconv 0.1 could not translate" in junit


def test_a_partial_converter_is_never_charged_as_a_refusal(tmp_path):
    code, report, _ = _run(tmp_path, "ConvertsUpperOnly", "examples", "differential", bindings="4")
    outcomes = {c["outcome"] for c in report["cases"]}
    assert outcomes == {"pass", "unconverted"}  # neither refused nor unsupported: not the runtime's
    assert report["summary"]["ok"] is True and code == 0  # every case the runtime ran passed


def test_the_findings_page_lists_the_converter_s_failures_apart(tmp_path):
    from opkit.emit import findings

    _, report, _ = _run(tmp_path, "NeverConverts", "differential")
    report["_path"] = "conformance/reports/behind-converter.json"
    page = findings.render("/nowhere", [report], ())["generated/docs/findings/behind-converter.md"]
    assert "## The converter's, not behind-converter's" in page
    assert "| fakeconv 0.1 | NotImplementedError: no converter for Trilu |" in page
    assert "no failure (mismatch, refused, error, crash, timeout) is charged to behind-converter" in page


def test_the_worker_tags_a_conversion_failure_and_the_record_names_the_converter():
    from opkit.conformance.case_exec import result_exec
    from opkit.conformance.recording import unconverted
    from opkit.conformance.worker_engine import UNSUPPORTED, _Engine

    engine = _Engine.__new__(_Engine)
    engine.backend = NeverConverts()
    result = engine._refusal(ConversionFailed("iree-compile", "crashed (Error code: -11, signal 11)", "3.13.0"), "run")
    assert result.kind == UNSUPPORTED and result.no_kernel and result.converter == "iree-compile 3.13.0"
    ex = result_exec(result)
    ex.message = "op() called by the property with T=tensor(float) (x=float32[2]): " + ex.message
    recorded = unconverted(ex)
    assert recorded.outcome == UNCONVERTED and recorded.details["converter"] == "iree-compile 3.13.0"
    assert ex.outcome == UNSUPPORTED  # the searches keep what the worker said
    assert converter_of("Unsupported: onnx2torch: Converter is not implemented") is None


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None
                                 or importlib.util.find_spec("onnx2torch") is None, reason="torch is not installed")


def _model(op, elem, opset, initializer=None):
    from onnx import helper

    graph = helper.make_graph([helper.make_node(op, ["X"], ["Y"])], "g", [helper.make_tensor_value_info("X", elem, None)],
                              [helper.make_tensor_value_info("Y", elem, None)], initializer=initializer or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model.SerializeToString()


@needs_torch
def test_torch_runs_bfloat16_and_float8_through_the_adapter():
    import ml_dtypes
    from onnx import TensorProto

    from opkit.backends.torch_backend import TorchBackend

    backend = TorchBackend()
    x = np.array([1.5, -2.0, 0.0], dtype=ml_dtypes.bfloat16)
    (y,) = backend.prepare(_model("Relu", TensorProto.BFLOAT16, 14)).run({"X": x})
    assert y.dtype == x.dtype and y.tolist() == [1.5, 0.0, 0.0]
    f8 = np.array([1.0, -2.0], dtype=ml_dtypes.float8_e4m3fn)
    (z,) = backend.prepare(_model("Identity", TensorProto.FLOAT8E4M3FN, 16)).run({"X": f8})
    assert z.dtype == f8.dtype and z.tolist() == f8.tolist()
    assert "int4" in backend.unfeedable_elements() and "opkit's" in backend.unfeedable_elements()["int4"]


@needs_torch
def test_torch_conversion_failures_name_onnx2torch_and_its_version():
    import ml_dtypes
    from onnx import TensorProto, numpy_helper

    from opkit.backends.torch_backend import TorchBackend

    backend = TorchBackend()
    constant = numpy_helper.from_array(np.array([2.0], dtype=ml_dtypes.bfloat16), "X")
    with pytest.raises(ConversionFailed) as raised:  # onnx2torch hands a bfloat16 constant to from_numpy
        backend.prepare(_model("Relu", TensorProto.BFLOAT16, 14, [constant]))
    assert raised.value.label == f"onnx2torch {backend.converter_version()}"
    with pytest.raises(ConversionFailed, match="Converter is not implemented"):
        backend.prepare(_model("Trilu", TensorProto.FLOAT, 14))
    with pytest.raises(Unsupported) as plain:  # torch's own lack stays unsupported
        backend.prepare(_model("Identity", TensorProto.STRING, 16))
    assert not isinstance(plain.value, ConversionFailed)
    assert "highest" in backend.describe()["precision"]


@pytest.mark.skipif(importlib.util.find_spec("iree") is None, reason="iree is not installed")
def test_iree_records_its_precision_and_turns_every_demotion_off():
    from opkit.backends.iree_backend import IreeBackend

    info = IreeBackend(cache_dir="").describe()
    assert "precision" in info and "no f64->f32" in info["precision"]
    assert {"--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false"} <= set(info["compile_flags"])


@pytest.mark.skipif(importlib.util.find_spec("jaxonnxruntime") is None, reason="jax is not installed")
def test_jax_records_its_precision_and_computes_64_bit_types_in_64_bits():
    from opkit.backends.jax_backend import JaxBackend

    backend = JaxBackend()
    info = backend.describe()
    assert backend.x64 and info["config"]["jax_enable_x64"] is True
    assert "jax_enable_x64 on, checked" in info["precision"] and "subnormal" in info["precision"]
    with pytest.raises(ConversionFailed, match="jaxonnxruntime"):  # no handler for Relu-13
        from onnx import TensorProto

        backend.prepare(_model("Relu", TensorProto.FLOAT, 13)).run({"X": np.ones(2, np.float32)})


def test_an_op_page_puts_unconverted_bindings_with_the_converter_not_with_opkit():
    """A binding the converter could not translate is not opkit's 'untested': the op page's row
    names it as the converter's."""
    from opkit.emit.op_conformance import OpConformance
    from opkit.results.record import CaseRecord

    def record(types, outcome):
        return CaseRecord(backend="torch", suite="differential", op="Trilu", domain="ai.onnx", version=14,
                          types={"T": f"tensor({types})"}, example="differential", outcome=outcome,
                          message="onnx2torch 1.5.15: no converter for Trilu").to_json()

    report = {"format": "opkit-conformance-report/1", "_path": "conformance/reports/torch-sweep.json",
              "target": {"backends": [{"name": "torch", "version": "2.13.0"}], "opkit": "0.1.0", "seed": 0},
              "settings": {}, "cases": [record("float", "unconverted"), record("double", "pass"),
                                        record("int8", "untested")]}
    row = OpConformance("/nowhere", [report]).version(("ai.onnx",), "Trilu", 14).rows[0]
    assert row.unsupported == "unconverted (the converter's): `float` (1 case)"
    assert row.untested == "`int8` (1 case)" and row.passed == "`double` (1 case)"


def _fake_converter_package(tmp_path):
    """A package standing in for onnx2torch: one function raises itself, one lets a builtin raise."""
    pkg = tmp_path / "fakeconv"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(
        "def refuses(x):\n"
        "    if x:\n"
        "        raise NotImplementedError(\n"
        "            'GatherND for batch_dims != 0 is not implemented')\n"
        "def calls_builtin(x):\n"
        "    return int('not a number')\n")
    spec = importlib.util.spec_from_file_location("fakeconv_ops", pkg / "ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(pkg), module


def test_a_refusal_raised_by_the_converters_own_code_is_the_converters(tmp_path):
    from opkit.backends.torch_backend import raised_in_package

    pkg, ops = _fake_converter_package(tmp_path)
    with pytest.raises(NotImplementedError) as own:
        ops.refuses(1)
    assert raised_in_package(own.value, pkg)  # a raise statement of the converter (spanning two lines)
    with pytest.raises(ValueError) as builtin:
        ops.calls_builtin(1)
    assert not raised_in_package(builtin.value, pkg)  # a function it called raised: not its own refusal
    assert not raised_in_package(own.value, str(tmp_path / "elsewhere"))


@needs_torch
def test_torch_charges_onnx2torchs_run_time_refusal_to_the_converter():
    from onnx import TensorProto, helper

    from opkit.backends.torch_backend import TorchBackend

    node = helper.make_node("GatherND", ["X", "I"], ["Y"], batch_dims=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3]),
                                            helper.make_tensor_value_info("I", TensorProto.INT64, [2, 1])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = TorchBackend().prepare(model.SerializeToString())
    with pytest.raises(ConversionFailed, match="batch_dims"):
        session.run({"X": np.ones((2, 3), np.float32), "I": np.zeros((2, 1), np.int64)})
