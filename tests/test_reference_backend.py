"""ReferenceBackend: onnx's Backend API over the generated kernels."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from opkit.backends.reference import ReferenceBackend

rng = np.random.default_rng(1)


def _model(nodes, inputs, outputs, initializers=(), opset=21):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def test_supports_cpu_only():
    assert ReferenceBackend.supports_device("CPU")
    assert not ReferenceBackend.supports_device("CUDA")


def test_run_node():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3,)).astype(np.float32)
    (c,) = ReferenceBackend.run_node(node, [a, b])
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_multi_node_graph_with_initializer_and_out_of_order_nodes():
    w = rng.standard_normal((3, 4)).astype(np.float32)
    nodes = [  # listed out of order on purpose: the backend sorts topologically
        helper.make_node("ReduceSum", ["r", "axes"], ["s"], keepdims=0),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("MatMul", ["x", "w"], ["m"]),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1], np.int64), "axes")]
    model = _model(nodes, [_vi("x", shape=[2, 3])], [_vi("s"), _vi("r")], inits)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    rep = ReferenceBackend.prepare(model, "CPU")
    s, r = rep.run([x])
    np.testing.assert_allclose(r, np.maximum(x @ w, 0), rtol=1e-5)
    np.testing.assert_allclose(s, np.maximum(x @ w, 0).sum(axis=1), rtol=1e-5)
    (s2, _) = ReferenceBackend.run_model(model, {"x": x})
    np.testing.assert_array_equal(s, s2)


def test_opset_import_selects_the_version():
    # Softmax-11 coerces to 2-D, Softmax-13 normalises along the axis only
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    y11 = ReferenceBackend.run_model(_model([node], [_vi("x")], [_vi("y")], opset=11), [x])[0]
    y13 = ReferenceBackend.run_model(_model([node], [_vi("x")], [_vi("y")], opset=13), [x])[0]
    np.testing.assert_allclose(y11.reshape(2, 12).sum(axis=1), 1, rtol=1e-5)
    np.testing.assert_allclose(y13.sum(axis=1), 1, rtol=1e-5)


def test_function_body_is_expanded_for_ops_without_kernel():
    # LayerNormalization has no kernel: its context-dependent function body runs instead
    x = rng.standard_normal((2, 5)).astype(np.float32)
    scale, bias = np.full(5, 2, np.float32), np.full(5, 0.5, np.float32)
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)
    model = _model([node], [_vi("x"), _vi("s"), _vi("b")], [_vi("y")], opset=17)
    (y,) = ReferenceBackend.run_model(model, [x, scale, bias])
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * 2 + 0.5
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)


def test_if_subgraph():
    def branch(value):
        const = helper.make_node("Constant", [], ["out"], value=numpy_helper.from_array(
            np.array([value], np.float32)))
        return helper.make_graph([const], "b", [], [_vi("out")])

    node = helper.make_node("If", ["c"], ["y"], then_branch=branch(1.0), else_branch=branch(-1.0))
    model = _model([node], [_vi("c", TensorProto.BOOL)], [_vi("y")])
    assert ReferenceBackend.run_model(model, [np.array(True)])[0][0] == 1.0
    assert ReferenceBackend.run_model(model, [np.array(False)])[0][0] == -1.0


def test_unsupported_op_names_op_and_version():
    node = helper.make_node("ImageDecoder", ["x"], ["y"])
    model = _model([node], [_vi("x", TensorProto.UINT8)], [_vi("y", TensorProto.UINT8)], opset=20)
    with pytest.raises(NotImplementedError, match="ImageDecoder-20"):
        ReferenceBackend.prepare(model).run([np.zeros(4, np.uint8)])


# onnx's own backend test runner, driven with ReferenceBackend on a few covered ops
import re  # noqa: E402

import onnx.backend.test  # noqa: E402

_PATTERNS = (r"test_abs_", r"test_add_bcast_", r"test_relu_", r"test_gemm_default_", r"test_softmax_axis_",
             r"test_reduce_sum_keepdims_", r"test_transpose_default_", r"test_maxpool_2d_pads_",
             r"test_cast_FLOAT_to_FLOAT16_", r"test_topk_", r"test_where_example_",
             r"test_layer_normalization_2d_", r"test_resize_upsample_scales_linear_", r"test_lstm_defaults_")
_backend_test = onnx.backend.test.BackendTest(ReferenceBackend, __name__)
for _pattern in _PATTERNS:
    _backend_test.include(_pattern)
OnnxBackendNodeModelTest = _backend_test.test_cases["OnnxBackendNodeModelTest"]
# keep only the selected CPU cases (the runner would otherwise report ~4,000 skips)
for _name in [n for n in vars(OnnxBackendNodeModelTest) if n.startswith("test_")]:
    if not (_name.endswith("_cpu") and any(re.search(p, _name) for p in _PATTERNS)):
        delattr(OnnxBackendNodeModelTest, _name)


def test_runner_selection_is_not_empty():
    assert len([n for n in vars(OnnxBackendNodeModelTest) if n.startswith("test_")]) >= 20
