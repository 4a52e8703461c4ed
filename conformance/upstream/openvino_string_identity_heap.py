"""OpenVINO 2026.4.1 CPU: Identity on string tensors compiled once with dynamic dims, then run on
[1, 3] and [3, 5] with one infer request: glibc aborts (free(): invalid pointer)."""
import numpy as np
from onnx import helper, TensorProto
import openvino as ov
x = helper.make_tensor_value_info("input", TensorProto.STRING, ["a", "b"])
y = helper.make_tensor_value_info("output", TensorProto.STRING, ["a", "b"])
g = helper.make_graph([helper.make_node("Identity", ["input"], ["output"])], "g", [x], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
core = ov.Core()
c = core.compile_model(core.read_model(m.SerializeToString(), b""), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
r = c.create_infer_request()
for shape in [(1, 3), (3, 5)] * 3:
    a = np.array([f"s{i}" for i in range(int(np.prod(shape)))], dtype=str).reshape(shape)
    r.infer({"input": ov.Tensor(a)})
    out = r.get_output_tensor(0).str_data
    print(shape, out.shape, bool((out == a).all()), flush=True)
print("survived")
