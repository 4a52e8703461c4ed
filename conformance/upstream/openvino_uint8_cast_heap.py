"""OpenVINO 2026.4.1 CPU: an identity Cast (uint8 -> uint8) compiled once with dynamic dims,
then run on [5, 5], [4, 4], [3, 4] with one infer request: glibc aborts (heap corruption)."""
import numpy as np
from onnx import helper, TensorProto
import openvino as ov
x = helper.make_tensor_value_info("input", TensorProto.UINT8, ["a", "b"])
y = helper.make_tensor_value_info("output", TensorProto.UINT8, ["a", "b"])
g = helper.make_graph([helper.make_node("Cast", ["input"], ["output"], to=TensorProto.UINT8)], "g", [x], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
core = ov.Core()
c = core.compile_model(core.read_model(m.SerializeToString(), b""), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
r = c.create_infer_request()
for shape in [(5, 5), (4, 4), (3, 4)] * 3:
    a = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    r.infer({"input": ov.Tensor(a, shared_memory=False)})
    out = r.get_output_tensor(0).data
    print(shape, out.shape, bool((out == a).all()), flush=True)
print("survived")
