"""How much memory a model's outputs ask for: ONNX's shape inference with data propagation, run in
a child process (a hostile model can abort ONNX's inference, and the process asking must survive).

A runtime killed by opkit's memory limit while computing an output that is itself larger than the
limit did what it was asked: MaxUnpool with pads of INT_MIN asks for 2**32 floats (17 GB), Range
from INT_MIN for 2**31 elements. That is the input's size, not a runtime defect, so the robustness
suite does not charge it (a runtime that blows past the limit on a small output still is)."""

from __future__ import annotations

import json
import subprocess
import sys

INFER_TIMEOUT = 60.0  # s for the child's import of onnx and its inference
INFER_MEMORY_GB = 8  # the child's address-space limit: inference needs little, a runaway one stops here

_CHILD = r"""
import json, math, resource, sys
limit = int(sys.argv[1]) << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np, onnx
model = onnx.shape_inference.infer_shapes(onnx.load_from_string(sys.stdin.buffer.read()), data_prop=True)
total = 0
for out in model.graph.output:
    t = out.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else None
    if not t.elem_type or dims is None or None in dims:
        print("null")
        sys.exit(0)
    total += math.prod(dims) * np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)).itemsize
print(json.dumps(total))
"""


def output_bytes(model_bytes: bytes, timeout: float = INFER_TIMEOUT) -> int | None:
    """Bytes of the model's outputs by ONNX's shape inference (data propagation on: a shape computed
    from constant inputs counts), or None when inference fails, dies or leaves a dimension unknown."""
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(INFER_MEMORY_GB)], input=model_bytes,
                              capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        value = json.loads(done.stdout.decode("utf-8", "replace").strip() or "null")
    except ValueError:
        return None
    return int(value) if isinstance(value, int) else None


def asks_at_least(model_bytes: bytes, limit: int | None) -> bool:
    """Whether the model's outputs alone need ``limit`` bytes or more (False when unknown or no limit)."""
    if not limit:
        return False
    size = output_bytes(model_bytes)
    return size is not None and size >= limit
