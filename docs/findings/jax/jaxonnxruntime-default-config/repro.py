"""Repro: jaxonnxruntime 0.3.0 with its default config cannot run a valid Trilu-14 model.

With ``jaxort_only_allow_initializers_as_static_args = True`` (the default) jaxonnxruntime's Trilu
handler (jaxonnxruntime/onnx_ops/trilu.py, ``_prepare``)

- refuses ``k`` absent (ONNX: k defaults to 0) with "Trilu's `k` is not constant defined by the
  graph initializers" (it tests ``len(node.inputs) == 1`` and raises);
- refuses ``k`` as a graph input (the same message);
- crashes on ``k`` as a 0-D initializer, the only shape ONNX allows for k: ``tolist()[0]`` on a
  0-D array is ``int[0]`` -> TypeError "'int' object is not subscriptable".

Only a 1-element 1-D initializer, which ONNX's Trilu does not allow, gets through. opkit's jax
backend therefore sets the flag to False (see opkit/backends/jax_backend.py).

Needs: numpy, onnx, jax, jaxonnxruntime. Run: python repro.py (exit 1 while it reproduces).
"""

import sys

import jax

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from jaxonnxruntime import backend  # noqa: E402


def model(k_mode):
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, None)]
    node_inputs, inits = ["input"], []
    if k_mode == "graph input":
        inputs.append(helper.make_tensor_value_info("k", TensorProto.INT64, []))
        node_inputs.append("k")
    elif k_mode == "0-D initializer":
        inits.append(numpy_helper.from_array(np.array(1, dtype=np.int64), "k"))
        node_inputs.append("k")
    graph = helper.make_graph([helper.make_node("Trilu", node_inputs, ["output"])], "g", inputs,
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=13)


x = np.arange(6, dtype=np.float32).reshape(2, 3)
failures = 0
for mode, k in (("absent", 0), ("graph input", 1), ("0-D initializer", 1)):
    feeds = {"input": x} if mode != "graph input" else {"input": x, "k": np.array(k, dtype=np.int64)}
    try:
        out = np.asarray(backend.Backend.prepare(model(mode)).run(feeds)[0])
        ok = np.array_equal(out, np.triu(x, k))
        print(f"k {mode}: {'ok' if ok else 'WRONG ' + str(out.tolist())}")
        failures += not ok
    except Exception as exc:  # noqa: BLE001
        print(f"k {mode}: {type(exc).__name__}: {str(exc)[:120]}")
        failures += 1
sys.exit(1 if failures else 0)
