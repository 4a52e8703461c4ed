"""Backends, the registry, model building and the worker's session cache."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from opkit.backends.registry import BackendNotFound, create, resolve
from opkit.conformance import harness
from opkit.cases.onnx_model import build, signature_key
from opkit.conformance.worker_engine import InProcess
from opkit.conformance.worker import Worker
from opkit.cases.case import make_case

SPEC = harness.load_op("ai.onnx", "Trilu")
MS = harness.load_op("com.microsoft", "Trilu")


def trilu_case(spec=SPEC, since=14, dtype=np.float32, k=None, inits=()):
    v = spec.version(since)
    name = v.inputs[0].name
    x = np.arange(6).reshape(2, 3).astype(dtype)
    inputs = [(name, x)] + ([("k", np.array(k, np.int64))] if k is not None else [])
    t = {np.float32: "float", np.int64: "int64"}[dtype]
    return make_case(spec, v, {"T": f"tensor({t})"}, {}, inputs, inits), v


def test_registry_names_aliases_and_hints():
    assert resolve("ort").name == "onnxruntime"
    assert resolve("onnx-reference").target.endswith("OnnxReferenceBackend")
    assert resolve("reference").api == "onnx"
    assert resolve("onnxruntime.backend.backend:OnnxRuntimeBackend").api == "auto"
    with pytest.raises(BackendNotFound, match="did you mean 'onnx-reference'"):
        resolve("onnx-refrence")


def test_backends_report_name_and_version():
    ort = create(resolve("onnxruntime"))
    assert ort.describe()["name"] == "onnxruntime" and ort.version().count(".") >= 1
    ref = create(resolve("onnx-reference"))
    assert ref.version() == onnx.__version__
    api = create(resolve("onnxruntime.backend.backend:OnnxRuntimeBackend"))
    assert api.name == "onnxruntime.backend.backend:OnnxRuntimeBackend" and api.version()


def test_models_use_an_ir_version_onnxruntime_accepts():
    case, v = trilu_case(k=1)
    built = build(case, v, ir_version=13)
    assert built.model.ir_version == 13
    assert [(o.domain, o.version) for o in built.model.opset_import] == [("", 14)]
    onnx.checker.check_model(built.model)
    assert set(built.feeds) == {"input", "k"}


def test_custom_domains_get_their_opset_import():
    case, v = trilu_case(MS, 1)
    built = build(case, v)
    assert {(o.domain, o.version) for o in built.model.opset_import} == {("com.microsoft", 1), ("", 21)}
    assert built.model.graph.node[0].domain == "com.microsoft"


def test_initializers_are_part_of_the_signature():
    a, v = trilu_case(k=1, inits={"k"})
    b, _ = trilu_case(k=2, inits={"k"})
    c, _ = trilu_case(k=1)
    d, _ = trilu_case(k=2)
    assert signature_key(a, 13, 14) != signature_key(b, 13, 14)
    assert signature_key(c, 13, 14) == signature_key(d, 13, 14)  # graph inputs: one session per rank
    built = build(a, v)
    assert [t.name for t in built.model.graph.initializer] == ["k"] and set(built.feeds) == {"input"}


@pytest.mark.parametrize("name", ["onnxruntime", "onnx-reference", "onnxruntime.backend.backend:OnnxRuntimeBackend"])
def test_each_backend_runs_trilu(name):
    case, v = trilu_case(k=1, inits={"k"})
    built = build(case, v, ir_version=13)
    with InProcess(resolve(name)) as w:
        result = w.run(built.key, built.model.SerializeToString(), built.feeds)
    assert result.kind == "ok", result.message
    np.testing.assert_array_equal(result.outputs[0], np.triu(np.arange(6).reshape(2, 3).astype(np.float32), 1))


def test_onnxruntime_bfloat16_goes_through_ortvalues():
    import ml_dtypes

    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, None)],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=13)
    backend = create(resolve("onnxruntime"))
    x = np.array([[1.5, -2.0]], dtype=ml_dtypes.bfloat16)
    (y,) = backend.prepare(model.SerializeToString()).run({"x": x})
    assert y.dtype == x.dtype and np.array_equal(y, x)


def test_worker_caches_one_session_per_signature():
    case, v = trilu_case(k=1)
    built = build(case, v)
    calls = []

    def model_bytes():
        calls.append(1)
        return built.model.SerializeToString()

    with Worker(resolve("onnxruntime")) as w:
        for _ in range(5):
            assert w.run(built.key, model_bytes, built.feeds).kind == "ok"
        results = w.run_many([(built.key, model_bytes, built.feeds)] * 4)
    assert [r.kind for r in results] == ["ok"] * 4
    assert len(calls) == 1


def test_unsupported_type_is_classified_at_load():
    case = make_case(SPEC, SPEC.version(14), {"T": "tensor(uint8)"}, {},
                     [("input", np.zeros((2, 2), np.uint8))])
    built = build(case, SPEC.version(14))
    with InProcess(resolve("onnxruntime")) as w:
        result = w.run(built.key, built.model.SerializeToString(), built.feeds)
    assert result.kind == "unsupported" and result.stage == "load"


def test_onnxruntime_keeps_0d_ml_dtypes_inputs_0d():
    """0-d bfloat16/float8 inputs go in as OrtValues; np.ascontiguousarray would make them 1-D and
    every such case a false shape mismatch (it did, in 400+ cases of the first full sweep)."""
    pytest.importorskip("onnxruntime")
    import numpy as np

    from opkit.backends.onnxruntime import OnnxRuntimeBackend
    from opkit.conformance import harness
    from opkit.cases.onnx_model import build
    from opkit.cases.draws import cast
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "Identity")
    version = spec.version(13)
    case = make_case(spec, version, {"T": "tensor(bfloat16)"}, {}, [("input", cast([2.0], "bfloat16").reshape(()))])
    backend = OnnxRuntimeBackend()
    (out,) = backend.prepare(build(case, version).model.SerializeToString()).run(
        {"input": dict(case.inputs)["input"]})
    assert out.shape == () and float(out.astype(np.float32)) == 2.0
