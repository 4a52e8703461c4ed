"""Fake Trilu backends that break a spec property but not the drawn case itself, for
tests/test_reproducibility.py. No opkit import: repro bundles load these from their own process,
where opkit must not be needed.
"""

from __future__ import annotations

import numpy as np
from onnx.backend.base import BackendRep

from test_conformance_fakes import FakeBackend, trilu


class _TriluRep(BackendRep):
    def __init__(self, model, lower_offset):
        from onnx import numpy_helper

        node = model.graph.node[0]
        self.upper = next((a.i for a in node.attribute if a.name == "upper"), 1)
        self.consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.names = [i.name for i in model.graph.input if i.name not in self.consts]
        self.node_inputs = list(node.input)
        self.lower_offset = lower_offset

    def run(self, inputs, **kwargs):
        values = dict(self.consts)
        values.update(zip(self.names, inputs))
        args = [values[n] if n else None for n in self.node_inputs]
        if not self.upper and len(args) > 1 and args[1] is not None:
            args[1] = np.asarray(int(args[1]) + self.lower_offset, dtype=np.int64)  # lower part off by one
        return (trilu(*args, upper=self.upper),)


class _TriluBackend(FakeBackend):
    lower_offset = 0

    @classmethod
    def rep(cls, model):
        return _TriluRep(model, cls.lower_offset)


class LowerOffByOne(_TriluBackend):
    """Right for upper=1 (the default, what most drawn cases use) and whenever k is absent; with
    upper=0 and a given k it keeps one diagonal too many. The property 'partition' calls
    op(input, k - 1, upper=0) and catches it while the drawn case alone passes."""

    lower_offset = 1


class FixedTrilu(_TriluBackend):
    """The same backend, fixed."""
