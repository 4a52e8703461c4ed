"""A fake backend for tests/test_random_ops.py: onnx's ReferenceEvaluator with every AffineGrid
value moved by 1 (loaded as ``random_ops_fakes:ShiftedAffineGrid``)."""

from __future__ import annotations

import numpy as np
from onnx.backend.base import BackendRep

from test_conformance_fakes import FakeBackend


class _Shifted(BackendRep):
    def __init__(self, model):
        from onnx.reference import ReferenceEvaluator

        self.session = ReferenceEvaluator(model)
        self.names = [i.name for i in model.graph.input]

    def run(self, inputs, **kwargs):
        out = self.session.run(None, dict(zip(self.names, inputs)))
        return tuple(np.asarray(o + 1).astype(o.dtype) for o in out)


class ShiftedAffineGrid(FakeBackend):
    @classmethod
    def rep(cls, model):
        return _Shifted(model)
