"""Fake backends (onnx Backend API classes over onnx.reference) that get sequence and optional
outputs wrong in one way each, for the repro-bundle tests of tests/test_family_sequence.py.

No opkit import: a bundle's repro.py loads these classes with opkit made unimportable.
"""

from __future__ import annotations

import numpy as np
from onnx.backend.base import BackendRep
from test_conformance_fakes import FakeBackend


class _Rep(BackendRep):
    def __init__(self, model, post):
        from onnx.reference import ReferenceEvaluator

        self.evaluator = ReferenceEvaluator(model)
        inits = {t.name for t in model.graph.initializer}
        self.names = [i.name for i in model.graph.input if i.name not in inits]
        self.post = post

    def run(self, inputs, **kwargs):
        outputs = self.evaluator.run(None, dict(zip(self.names, inputs)))
        return tuple(self.post(o) for o in outputs)


class _Fake(FakeBackend):
    post = staticmethod(lambda o: o)

    @classmethod
    def rep(cls, model):
        return _Rep(model, cls.post)


def _wrong(value):
    """A sequence loses its last tensor; an integer or bool scalar is off by one / flipped."""
    if isinstance(value, list):
        return value[:-1]
    if isinstance(value, np.ndarray) and value.dtype == bool:
        return ~value
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value + np.ones((), value.dtype)
    return value


class Correct(_Fake):
    pass


class Wrong(_Fake):
    post = staticmethod(_wrong)
