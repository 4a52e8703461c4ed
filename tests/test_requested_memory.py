"""A memory-limit kill while computing an output that is itself over the limit is the input's size,
not a runtime defect: the robustness suite does not charge it (MaxUnpool's pads of INT_MIN ask for
2**32 floats). A kill on a small output still is."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from opkit.conformance import harness
from opkit.conformance.requested import asks_at_least, output_bytes
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker_engine import CRASH, OK, Result

LIMIT_GB = 1 / 1024  # 1 MiB


def _expand(shape, constant=True):
    nodes = [helper.make_node("Expand", ["x", "shape"], ["y"])]
    init = [helper.make_tensor("shape", TensorProto.INT64, [len(shape)], shape)] if constant else []
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])]
    if not constant:
        inputs.append(helper.make_tensor_value_info("shape", TensorProto.INT64, [len(shape)]))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_output_bytes_from_onnx_inference():
    assert output_bytes(_expand([3, 1 << 20])) == 3 * 4 << 20
    assert output_bytes(_expand([3, 4], constant=False)) is None  # a fed shape: not known
    assert output_bytes(b"not a model") is None
    assert asks_at_least(_expand([1 << 20]), 1 << 20) and not asks_at_least(_expand([1 << 10]), 1 << 20)
    assert not asks_at_least(_expand([1 << 30]), None)  # no limit: nothing is "over" it


class _Worker:
    """Answers like a runtime under a 1 MiB memory limit: it computes ConstantOfShape, and is killed when
    the output it allocates is over the limit (``greedy``: on every hostile model)."""

    memory_gb = LIMIT_GB

    def __init__(self, greedy):
        self.greedy, self.kills = greedy, 0

    def describe(self):
        return {"name": "fake", "max_ir_version": 13}

    def _answer(self, index, feeds):
        dims = [int(d) for d in feeds["input"].reshape(-1)]
        if any(d < 0 for d in dims):
            return Result("error", None, "refused", "run")
        size = int(np.prod(dims, dtype=object)) * 4
        if size >= LIMIT_GB * (1 << 30) or (self.greedy and index > 0):
            self.kills += 1
            return Result(CRASH, None, "killed: resident memory over 0.001 GB (0.001 GB in 1 process; --memory-limit)")
        return Result(OK, [np.zeros(dims, np.float32)])

    def run(self, key, model_fn, feeds, timeout=None):
        return self._answer(0, feeds)

    def run_many(self, requests, timeout=None):
        out = []
        for i, (_, _, feeds) in enumerate(requests):
            out.append(self._answer(i, feeds))
            if out[-1].kind == CRASH:
                break
        return out


def _crashes(dims, greedy, monkeypatch):
    """ConstantOfShape's robustness batch with one hostile variant of output shape ``dims``."""
    from opkit.cases.hostile import Hostile
    from opkit.conformance import runner as runner_module
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "ConstantOfShape")
    version = spec.version(9)

    def case(dims):
        return make_case(spec, version, {"T1": "tensor(int64)", "T2": "tensor(float)"}, {},
                         [("input", np.asarray(dims, np.int64))])

    monkeypatch.setattr(runner_module, "hostile_variants",
                        lambda base, version, n, seed: [Hostile(case(dims), "a: hostile shape")])
    worker = _Worker(greedy)
    runner = Runner(BackendRunner(worker), max_examples=15, seed=2, timeout=10.0)
    ex = runner.execute_robustness(version, (case([2, 3]), 0))
    return worker.kills, ex.outcome


def test_a_kill_on_an_output_over_the_limit_is_not_charged(monkeypatch):
    assert _crashes([1024, 1024], False, monkeypatch) == (1, "pass")  # 4 MiB asked, 1 MiB allowed


def test_a_kill_on_a_small_output_is(monkeypatch):
    assert _crashes([2, 2], True, monkeypatch) == (1, "crash")  # 16 bytes asked
