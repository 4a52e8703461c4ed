"""Backend workers of a runtime known to be safe to fork after import start forked from a fork
server that imported it (opkit.conformance.worker_start); any other backend's workers are fresh
interpreters. The hardening tests of tests/test_worker_processes.py run under both start methods."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

from opkit.backends.registry import BUILTIN, FORK_SAFE, resolve
from opkit.conformance.worker import Worker
from opkit.conformance.worker_engine import CRASH, OK
from opkit.conformance.worker_start import ENV, start_method

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork server: Linux")


def _relu_model() -> bytes:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()


def _runs_relu(spec) -> tuple[str, object]:
    with Worker(spec, timeout=120) as worker:
        result = worker.run("relu", _relu_model(), {"x": np.array([-1, 2, -3, 4], np.float32)})
        return worker._ctx.get_start_method(), result


def test_builtin_backends_fork_and_others_spawn(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert start_method(resolve("onnxruntime")) == "forkserver"
    assert start_method(resolve("onnx-reference")) == "forkserver"
    assert start_method(resolve("worker_process_fakes:Talks")) == "spawn"  # nothing known about it
    monkeypatch.setenv(ENV, "spawn")
    assert start_method(resolve("onnxruntime")) == "spawn"
    monkeypatch.setenv(ENV, "forkserver")
    assert start_method(resolve("worker_process_fakes:Talks")) == "forkserver"


@pytest.mark.parametrize("name", ["onnxruntime", "onnx-reference"])
def test_a_forked_worker_computes_like_a_spawned_one(monkeypatch, name):
    monkeypatch.delenv(ENV, raising=False)
    method, forked = _runs_relu(resolve(name))
    monkeypatch.setenv(ENV, "spawn")
    spawned_method, spawned = _runs_relu(resolve(name))
    assert (method, spawned_method) == ("forkserver", "spawn")
    assert forked.kind == spawned.kind == OK
    np.testing.assert_array_equal(forked.outputs[0], [0, 2, 0, 4])
    np.testing.assert_array_equal(forked.outputs[0], spawned.outputs[0])


@pytest.mark.parametrize("target", sorted(FORK_SAFE))
def test_every_adapter_said_to_be_fork_safe_runs_forked(monkeypatch, target):
    """Each third-party adapter listed as fork-safe, where its runtime is installed: a worker forked
    from a server that imported every module listed starts and computes."""
    modules = FORK_SAFE[target]
    missing = [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)}")
    monkeypatch.delenv(ENV, raising=False)
    name = next(n for n, t in _entry_points().items() if t == target)
    method, result = _runs_relu(resolve(name))
    assert method == "forkserver"
    assert result.kind == OK, result.message
    np.testing.assert_array_equal(result.outputs[0], [0, 2, 0, 4])


def _entry_points() -> dict[str, str]:
    from opkit.backends.registry import _entry_points as eps

    return eps()


def test_every_fork_safe_adapter_is_a_registered_backend():
    assert set(FORK_SAFE) <= set(_entry_points().values())
    for spec in BUILTIN.values():  # a builtin's own adapter module is among what its server imports
        if spec.preload:
            assert spec.target.split(":")[0] in spec.preload


def test_a_crash_of_a_forked_worker_is_a_crash_with_its_signal(monkeypatch):
    """The fork server, not this process, reaps a forked worker: its exit status still arrives."""
    monkeypatch.setenv(ENV, "forkserver")
    with Worker(resolve("worker_process_fakes:ForksAndAborts", tag="fs"), timeout=10) as worker:
        assert worker._ctx.get_start_method() == "forkserver"
        result = worker.run("k", _relu_model(), {"x": np.zeros(4, np.float32)})
    assert result.kind == CRASH
    assert "SIGABRT" in result.message
