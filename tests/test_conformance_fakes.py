"""Fake backends (onnx Backend API classes) that misbehave in one way each, for the outcome tests.

They wrap onnx.reference.ReferenceEvaluator and then corrupt the result, refuse, abort or hang.
The module holds no tests itself; the conformance tests load these classes as ``module:Class``.
"""

from __future__ import annotations

import os
import time

import numpy as np
from onnx.backend.base import Backend, BackendRep


def trilu(x, k=None, upper=1):
    """A correct Trilu in NumPy (k saturated to the matrix, so int64 extremes are fine)."""
    n, m = x.shape[-2], x.shape[-1]
    kk = 0 if k is None else max(-n - 1, min(m + 1, int(k)))
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    keep = (j - i >= kk) if upper else (j - i <= kk)
    zero = np.array("" if x.dtype == object else 0).astype(x.dtype)
    return np.where(keep, x, zero).astype(x.dtype)


class _Rep(BackendRep):
    def __init__(self, model, post):
        from onnx import numpy_helper

        node = model.graph.node[0]
        if node.op_type != "Trilu":
            raise NotImplementedError(f"fake backends only run Trilu, not {node.op_type}")
        self.upper = next((a.i for a in node.attribute if a.name == "upper"), 1)
        self.consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.names = [i.name for i in model.graph.input if i.name not in self.consts]
        self.node_inputs = list(node.input)
        self.post = post

    def run(self, inputs, **kwargs):
        values = dict(self.consts)
        values.update(zip(self.names, inputs))
        args = [values[n] if n else None for n in self.node_inputs]
        return (self.post(trilu(*args, upper=self.upper)),)


class FakeBackend(Backend):
    """What every fake backend here and in the other *_fakes modules shares: a CPU-only Backend
    API class whose ``prepare`` builds the representation ``rep(model)`` says."""

    max_ir_version = 13
    version = "0.0-fake"

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return True

    @classmethod
    def supports_device(cls, device):
        return device == "CPU"

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        return cls.rep(model)

    @classmethod
    def rep(cls, model):
        raise NotImplementedError


class _Fake(FakeBackend):
    post = staticmethod(lambda o: o)

    @classmethod
    def rep(cls, model):
        return _Rep(model, cls.post)


def _plus_one(o):
    if o.dtype.kind in "iufc":
        return (o + np.ones((), o.dtype)).astype(o.dtype)
    if o.dtype.kind == "V":  # ml_dtypes (bfloat16, float8 ...)
        return (o.astype(np.float32) + 1).astype(o.dtype)
    return o


class Correct(_Fake):
    pass


class WrongValues(_Fake):
    post = staticmethod(_plus_one)


class WrongShape(_Fake):
    post = staticmethod(lambda o: o.reshape(-1) if o.ndim > 1 else o[None])


class WrongDtype(_Fake):
    post = staticmethod(lambda o: o.astype(np.float64) if o.dtype != np.float64 else o.astype(np.float32))


class RefusesToLoad(_Fake):
    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
                           f"{model.graph.node[0].op_type}")


class RaisesAtRun(_Fake):
    @staticmethod
    def post(o):
        raise RuntimeError("kernel exploded")


class Aborts(_Fake):
    @staticmethod
    def post(o):
        os.abort()


class Sleeps(_Fake):
    @staticmethod
    def post(o):
        time.sleep(60)
        return o


class ExhaustedOnce(_Fake):
    """Raises the way OpenVINO does when its process is out of threads, while the marker file
    named by $OPKIT_TEST_EXHAUSTED exists (it removes it): a fresh worker then succeeds."""

    @staticmethod
    def post(o):
        marker = os.environ.get("OPKIT_TEST_EXHAUSTED", "")
        if marker and os.path.exists(marker):
            os.remove(marker)
            raise RuntimeError("Exception from src/inference/src/cpp/infer_request.cpp: "
                               "Resource temporarily unavailable")
        return o


class WrongValues2(WrongValues):
    """Another engine with the same wrong values (a second opinion that sides with the runtime)."""


class _DiesOnExtremeKRep(_Rep):
    def run(self, inputs, **kwargs):
        import signal

        values = dict(self.consts)
        values.update(zip(self.names, inputs))
        k = values.get(self.node_inputs[1]) if len(self.node_inputs) > 1 and self.node_inputs[1] else None
        if k is not None and np.size(k) == 1 and abs(int(np.asarray(k).reshape(-1)[0])) >= 2 ** 16:
            os.kill(os.getpid(), signal.SIGFPE)  # the way an integer overflow in native code dies
        return super().run(inputs, **kwargs)


class DiesOnExtremeK(_Fake):
    """Correct on every valid input; its process dies when k is far outside the matrix (an input
    the spec allows, whose result it defines: k saturates), as a native kernel might."""

    @classmethod
    def rep(cls, model):
        return _DiesOnExtremeKRep(model, cls.post)


class _HangsOnExtremeKRep(_Rep):
    def run(self, inputs, **kwargs):
        values = dict(self.consts)
        values.update(zip(self.names, inputs))
        k = values.get(self.node_inputs[1]) if len(self.node_inputs) > 1 and self.node_inputs[1] else None
        if k is not None and np.size(k) == 1 and abs(int(np.asarray(k).reshape(-1)[0])) >= 2 ** 16:
            time.sleep(60)  # a loop over k's diagonals instead of the matrix's
        return super().run(inputs, **kwargs)


class HangsOnExtremeK(_Fake):
    """Correct on every valid input; hangs when k is far outside the matrix, an input whose result
    takes no more work than any other (k saturates)."""

    @classmethod
    def rep(cls, model):
        return _HangsOnExtremeKRep(model, cls.post)


def _two_bugs(o):
    """Two distinct defects in one binding: empty inputs fail to run, other inputs come out wrong."""
    if o.size == 0:
        raise RuntimeError("empty tensors are not handled")
    return _plus_one(o)


class TwoBugs(_Fake):
    post = staticmethod(_two_bugs)


class _EvaluatorRep(BackendRep):
    """Any single-node model, computed by onnx.reference (the outcome tests only look at which
    bindings ran and which were refused, not at its values)."""

    def __init__(self, model):
        from onnx.reference import ReferenceEvaluator

        self.evaluator = ReferenceEvaluator(model)
        self.consts = {t.name for t in model.graph.initializer}
        self.names = [i.name for i in model.graph.input if i.name not in self.consts]

    def run(self, inputs, **kwargs):
        return tuple(self.evaluator.run(None, dict(zip(self.names, inputs))))


class RefusesOneCastPair(FakeBackend):
    """Runs every op but refuses Cast from int16 to uint8 at load, as a runtime missing one type
    registration of a many-typed op does."""

    @classmethod
    def rep(cls, model):
        from onnx import TensorProto

        node = model.graph.node[0]
        if node.op_type == "Cast":
            source = model.graph.input[0].type.tensor_type.elem_type if model.graph.input else None
            target = next(a.i for a in node.attribute if a.name == "to")
            if source == TensorProto.INT16 and target == TensorProto.UINT8:
                raise RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation "
                                   "for Cast(13) node with name ''")
        return _EvaluatorRep(model)


def _wrong_past_sixteen(o):
    """A vectorized kernel whose remainder loop is wrong: elements past the 16th of the last axis."""
    if o.ndim and o.shape[-1] > 16:
        o = o.copy()
        o[..., 16:] = _plus_one(o[..., 16:])
    return o


class WrongPastSixteen(_Fake):
    post = staticmethod(_wrong_past_sixteen)


class RefusesBfloat16(_Fake):
    """Correct, but refuses a bfloat16 Trilu at load (a missing registration)."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        from onnx import TensorProto

        if any(i.type.tensor_type.elem_type == TensorProto.BFLOAT16 for i in model.graph.input):
            raise RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation "
                               "for Trilu(14) node with name ''")
        return cls.rep(model)


class _DiesOnExtremeKAndEmptyRep(_DiesOnExtremeKRep):
    def run(self, inputs, **kwargs):
        if any(np.size(x) == 0 for x in inputs if x is not None and np.ndim(x) > 0):
            raise RuntimeError("empty tensors are not handled")
        return super().run(inputs, **kwargs)


class DiesOnExtremeKAndFailsEmpty(_Fake):
    """Two bugs in one binding, the first a crash: its process dies on a far k, and an empty
    input raises."""

    @classmethod
    def rep(cls, model):
        return _DiesOnExtremeKAndEmptyRep(model, cls.post)


class _SkipsLateNaNRep(_EvaluatorRep):
    def run(self, inputs, **kwargs):
        def skip(x):  # a NaN past the first element loses every comparison (a max that starts from it keeps it)
            if x is None or not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.size < 2:
                return x
            flat = x.reshape(-1).copy()
            late = np.isnan(flat[1:])
            flat[1:][late] = -np.inf
            return flat.reshape(x.shape)

        return super().run([skip(x) for x in inputs], **kwargs)


class SkipsLateNaN(FakeBackend):
    """A max whose running maximum starts from the first element and compares with '>': a NaN
    there propagates, a NaN anywhere else is skipped (as onnxruntime's ReduceMax does). Every other
    value is onnx.reference's."""

    @classmethod
    def rep(cls, model):
        return _SkipsLateNaNRep(model)


class _StrtodRep(_EvaluatorRep):
    def run(self, inputs, **kwargs):
        for x in inputs:
            if isinstance(x, np.ndarray) and x.dtype == object:
                for text in x.reshape(-1):
                    value = float(text)
                    if value != 0 and abs(value) < 2.2250738585072014e-308:
                        raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code "
                                           "returned while running Cast node. Status Message: stod")
        return super().run(inputs, **kwargs)


class RefusesSaturateParsesWithStrtod(FakeBackend):
    """As onnxruntime 1.31.1's Cast: refuses `saturate` at load unless the target is a float8 type,
    and parses text with C's strtod, which calls a subnormal out of range."""

    @classmethod
    def rep(cls, model):
        node = model.graph.node[0]
        target = next((a.i for a in node.attribute if a.name == "to"), None)
        if any(a.name == "saturate" for a in node.attribute) and target not in (17, 18, 19, 20):
            raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: Attribute "
                               "saturate is only used for cast to float 8 types.")
        return _StrtodRep(model)


class _DiesOnExtremeKOrLowRankRep(_DiesOnExtremeKRep):
    def run(self, inputs, **kwargs):
        import signal

        values = dict(self.consts)
        values.update(zip(self.names, inputs))
        if np.ndim(values.get(self.node_inputs[0])) < 2:  # the rank rule broken: no matrix
            os.kill(os.getpid(), signal.SIGFPE)
        return super().run(inputs, **kwargs)


class DiesOnExtremeKOrLowRank(_Fake):
    """Two crashes with one signal: a far k (a valid input) and an input of rank < 2 (a rank rule
    broken), as onnxruntime 1.16's Div died of SIGFPE on INT_MIN / -1 and on x / 0."""

    @classmethod
    def rep(cls, model):
        return _DiesOnExtremeKOrLowRankRep(model, cls.post)


class _FarIndexRep(_EvaluatorRep):
    def __init__(self, model):
        from onnx import numpy_helper

        super().__init__(model)
        self.const_values = [numpy_helper.to_array(t) for t in model.graph.initializer]

    def run(self, inputs, **kwargs):
        import signal

        for value in list(inputs) + self.const_values:
            value = np.asarray(value)
            far = np.abs(value.astype(np.float64)) if value.dtype.kind in "iu" else np.zeros(0)
            if ((far >= 2 ** 16) & (far <= 2 ** 40)).any():  # the extremes' offsets wrap back into memory
                os.kill(os.getpid(), signal.SIGSEGV)
        return super().run(inputs, **kwargs)


class ReadsFarIndices(FakeBackend):
    """Any op, but an integer input of 65,536 to 2^40 in magnitude is followed out of the
    process's memory (SIGSEGV), as onnxruntime 1.16's RoiAlign read X at a batch index it never
    checked: an index just past the extent read a neighbour's memory and returned garbage, and
    INT64_MIN or INT64_MAX wrapped the offset back into its memory."""

    @classmethod
    def rep(cls, model):
        return _FarIndexRep(model)


class _RefusesLowerRep(_Rep):
    """Implements Trilu but refuses the lower triangle (upper = 0) when the model loads, in the words
    a runtime uses for a feature it lacks; ``wrong_past`` > 0: values of inputs with more elements
    than that come out wrong (a second, unrelated bug of the same binding)."""

    wrong_past = 0

    def __init__(self, model, post):
        super().__init__(model, post)
        if self.upper == 0:
            raise NotImplementedError("the lower triangle (upper = 0) is not supported")

    def run(self, inputs, **kwargs):
        (out,) = super().run(inputs, **kwargs)
        return (_plus_one(out) if self.wrong_past and out.size > self.wrong_past else out,)


class RefusesLower(_Fake):
    """A runtime that implements Trilu for every type but refuses one valid attribute value."""

    @classmethod
    def rep(cls, model):
        return _RefusesLowerRep(model, cls.post)


class _RefusesLowerWrongRep(_RefusesLowerRep):
    wrong_past = 6


class RefusesLowerAndWrongOnLarger(_Fake):
    """RefusesLower with a second bug: wrong values on inputs of more than 6 elements."""

    @classmethod
    def rep(cls, model):
        return _RefusesLowerWrongRep(model, cls.post)
