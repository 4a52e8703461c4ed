"""A fake backend (onnx Backend API class) for the map tests: ZipMap in NumPy with one value off.

Pure NumPy and onnx (no opkit), so a repro bundle that names it reruns standalone.
"""

from __future__ import annotations

import numpy as np
from onnx.backend.base import Backend, BackendRep


class _ZipMapRep(BackendRep):
    def __init__(self, model):
        node = model.graph.node[0]
        if node.op_type != "ZipMap":
            raise NotImplementedError(f"this fake runs ZipMap only, not {node.op_type}")
        attrs = {a.name: a for a in node.attribute}
        ints = "classlabels_int64s" in attrs
        self.labels = list(attrs["classlabels_int64s"].ints) if ints else \
            [s.decode() for s in attrs["classlabels_strings"].strings]

    def run(self, inputs, **kwargs):
        x = np.asarray(inputs[0], dtype=np.float32).reshape(-1, len(self.labels))
        maps = [{k: float(v) for k, v in zip(self.labels, row)} for row in x]
        if maps:
            maps[0][self.labels[0]] += 1.0  # the one wrong value
        return (maps,)


class WrongZipMap(Backend):
    max_ir_version = 13
    version = "0.0-fake"
    container_values = True  # takes and returns Python lists and dicts

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return True

    @classmethod
    def supports_device(cls, device):
        return device == "CPU"

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        return _ZipMapRep(model)
