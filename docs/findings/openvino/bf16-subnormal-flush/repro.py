"""Repro: OpenVINO's CPU plugin flushes bfloat16 subnormals to zero in Trilu-14 (a pure data
movement op: ONNX says kept elements are the input's), and float64 subnormals too (float64 runs
as float32). float16 and float32 subnormals are kept.

Found by opkit's ``partition`` property (trilu(x, k, upper=1) + trilu(x, k - 1, upper=0) == x) on
bfloat16[2, 4, 1] with a subnormal element; this script is the standalone form.

Needs: numpy, onnx, ml_dtypes, openvino. Run: python repro.py (exit 1 while it reproduces).
"""

import sys

import ml_dtypes
import numpy as np
import openvino as ov
from onnx import TensorProto, helper


def model(elem):
    graph = helper.make_graph([helper.make_node("Trilu", ["input"], ["output"])], "g",
                              [helper.make_tensor_value_info("input", elem, [1, 2])],
                              [helper.make_tensor_value_info("output", elem, [1, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=13)


core = ov.Core()
failures = 0
for elem, dtype, value in ((TensorProto.BFLOAT16, ml_dtypes.bfloat16, 9.18e-41), (TensorProto.DOUBLE, np.float64, 1e-310)):
    x = np.array([[value, 1.0]], dtype=dtype)
    compiled = core.compile_model(core.read_model(model(elem).SerializeToString(), b""), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "f32"})
    if dtype is ml_dtypes.bfloat16:
        t = ov.Tensor(ov.Type.bf16, [1, 2])
        t.data.view(np.uint16)[...] = x.view(np.uint16)
        out = compiled({"input": t})[0].view(np.uint16).view(ml_dtypes.bfloat16)
    else:
        out = compiled({"input": x})[0]
    ok = np.array_equal(out.astype(np.float64), np.triu(x).astype(np.float64))
    print(f"{np.dtype(dtype).name}: input {x.ravel().tolist()} -> {out.ravel().tolist()} ({'ok' if ok else 'WRONG'})")
    failures += not ok
print(f"openvino {ov.__version__}")
sys.exit(1 if failures else 0)
