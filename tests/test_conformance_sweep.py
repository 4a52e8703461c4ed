"""What keeps full sweeps fast and their errors honest: rank plans learned from ONNX inference,
the inference filter on drawn cases, shrink budgets and skipped type bindings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.cases.onnx_model import build
from opkit.cases.ranks import ABSENT, rank_plan
from opkit.results.report import validate_report
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker_engine import InProcess
from opkit.conformance.worker import Worker
from opkit.cases import cases
from opkit.cases.case import make_case

from test_conformance_outcomes import FAKES, TYPES


def _plan(op, binding, since=None):
    spec = harness.load_op("ai.onnx", op)
    version = spec.version(since) if since else spec.versions[-1]
    return spec, version, rank_plan(op, "ai.onnx", version, tuple(sorted(binding.items())))


def test_rank_plan_learns_onehot_ranks():
    spec, version, plan = _plan("OneHot", {"T1": "tensor(int64)", "T2": "tensor(int64)", "T3": "tensor(float)"})
    assert plan, "OneHot's inference pins depth and values: a plan is expected"
    names = [p.name for p in version.inputs]
    assert {c[names.index("values")] for c in plan} == {1}  # values is 1-D
    assert {c[names.index("depth")] for c in plan} <= {0, 1}  # depth is a scalar (or 1 element)


def test_rank_plan_keeps_presence_patterns_apart():
    # Resize takes scales or sizes, not both: no plan may give both
    spec, version, plan = _plan("Resize", {"T1": "tensor(float)", "T2": "tensor(float)"}, 19)
    names = [p.name for p in version.inputs]
    both = [c for c in plan if c[names.index("scales")] != ABSENT and c[names.index("sizes")] != ABSENT]
    assert plan and not both


def test_rank_plan_is_none_when_nothing_is_learned():
    assert _plan("Add", {"T": "tensor(float)"})[2] is None


def test_rank_plan_rejects_invalid_bindings():
    plan = _plan("BitCast", {"T1": "tensor(uint8)", "T2": "tensor(uint16)"})[2]
    assert plan == ()


def test_drawn_cases_follow_the_plan():
    spec, version, plan = _plan("OneHot", {"T1": "tensor(int64)", "T2": "tensor(int64)", "T3": "tensor(float)"})
    names = [p.name for p in version.inputs]
    binding = {"T1": "tensor(int64)", "T2": "tensor(int64)", "T3": "tensor(float)"}
    seen = []

    @settings(max_examples=30, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(spec, version, types=binding, ranks=plan))
    def check(case):
        ranks = tuple(ABSENT if a is None else np.ndim(a) for _, a in case.inputs)
        ranks += (ABSENT,) * (len(names) - len(ranks))
        seen.append(ranks)
        assert ranks in plan

    check()
    assert seen


def test_inference_filter_marks_invalid_models():
    spec = harness.load_op("ai.onnx", "Reshape")
    version = spec.version(14)
    bad = make_case(spec, version, {"T": "tensor(float)"}, {}, [
        ("data", np.zeros((2, 2), np.float32)), ("shape", np.array([-2], np.int64))], initializers={"shape"})
    good = make_case(spec, version, {"T": "tensor(float)"}, {}, [
        ("data", np.zeros((2, 2), np.float32)), ("shape", np.array([4], np.int64))], initializers={"shape"})
    assert build(bad, version).inference_error
    assert build(good, version).inference_error is None
    backend = BackendRunner(InProcess(resolve("reference")))
    with pytest.raises(harness.Invalid, match="onnx shape inference"):
        backend.check_schema(bad, version)
    backend.check_schema(good, version)  # no exception


def test_custom_domains_are_not_filtered():
    spec = harness.load_op("com.microsoft", "Trilu")
    version = spec.versions[-1]
    case = make_case(spec, version, {"T": "tensor(float)"}, {}, [("X", np.zeros((2, 2), np.float32))])
    assert build(case, version).inference_error is None


def _run(cls, budget, max_examples=20):
    spec = harness.load_op("ai.onnx", "Trilu")
    with Worker(resolve(f"{FAKES}:{cls}"), timeout=10) as worker:
        runner = Runner(BackendRunner(worker), max_examples=max_examples, seed=3, siblings=0,
                        shrink_budget=budget)
        runner.run_differential(spec, spec.version(14), TYPES[:1])
        return runner.results[0]


def test_shrink_budget_bounds_the_work_on_a_failure():
    small = _run("WrongValues", budget=3)
    large = _run("WrongValues", budget=1000)
    assert small.outcome == large.outcome == "mismatch"
    assert small.examples_run <= 20 + 3  # generation up to the failure, then at most 3 shrink draws
    assert large.examples_run > small.examples_run
    assert small.minimal_example  # still a repro case


def test_unsupported_is_not_shrunk():
    result = _run("RefusesToLoad", budget=1000)
    assert result.outcome == "unsupported"
    assert result.examples_run == 1


def test_skipped_bindings_reach_the_report(tmp_path):
    from opkit.cli import main

    path = tmp_path / "r.json"
    code = main(["test", "--backend", "reference", "--op", "BitCast", "--suite", "differential", "--max-examples", "2",
                 "--report", str(path), "--no-repro", "-q"])
    report = json.loads(path.read_text())
    assert code in (0, 1)
    assert validate_report(report) == []
    skipped = report["skipped"]
    assert skipped and all("inference" in s["reason"] for s in skipped)
    widths = {"uint8": 8, "int8": 8, "uint16": 16, "int16": 16, "float16": 16, "bfloat16": 16}
    for s in skipped:
        a, b = (t[7:-1] for t in (s["types"]["T1"], s["types"]["T2"]))
        if a in widths and b in widths:
            assert widths[a] != widths[b]
    ran = {(c["types"].get("T1"), c["types"].get("T2")) for c in report["cases"]}
    assert not ran & {(s["types"]["T1"], s["types"]["T2"]) for s in skipped}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigterm_writes_a_partial_report(tmp_path, jobs):
    """A sweep killed with SIGTERM exits 130 and still writes the cases that finished."""
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "opkit.cli", "test", "--backend", "reference", "--op", "Abs",
                             "--op", "Trilu", "--op", "Where", "--suite", "differential", "--max-examples",
                             "100000", "--report", str(path), "--no-repro", "-q", "-j", jobs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(12)
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # fail, but never leave the run behind
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"SIGTERM did not end the run within 60 s: {err[-2000:]}")
    assert proc.returncode == 130, err[-2000:]
    report = json.loads(path.read_text())
    assert report["settings"]["interrupted"] is True
    assert validate_report(report) == []
    assert "interrupted" in err


def test_deprecated_versions_are_skipped_not_run():
    spec = harness.load_op("ai.onnx", "Scatter")
    runner = Runner(BackendRunner(InProcess(resolve("reference"))), max_examples=2)
    runner.run_spec(spec, ["differential"], versions={11})
    assert runner.results == []
    assert runner.skipped == [{"op": "Scatter", "domain": "ai.onnx", "version": 11, "types": {},
                               "reason": "the op is deprecated in this version: runtimes need not run it"}]


def test_an_output_named_like_an_input_gets_its_own_graph_name():
    spec = harness.load_op("ai.onnx", "BatchNormalization")
    version = spec.version(6)
    assert {p.name for p in version.inputs} & {p.name for p in version.outputs}  # the premise
    x = np.zeros((1, 2, 2), np.float32)
    c = np.zeros((2,), np.float32)
    case = make_case(spec, version, {"T": "tensor(float)"}, {"is_test": 0},
                     [("X", x), ("scale", c), ("B", c), ("mean", c), ("var", c)])
    case = __import__("dataclasses").replace(case, n_outputs=5)
    built = build(case, version)
    names = [i.name for i in built.model.graph.input] + [o.name for o in built.model.graph.output]
    assert len(names) == len(set(names))
    assert "Duplicate" not in (built.inference_error or "")


def test_resource_exhaustion_is_retried_in_a_fresh_worker(tmp_path, monkeypatch):
    marker = tmp_path / "exhausted"
    marker.write_text("x")
    monkeypatch.setenv("OPKIT_TEST_EXHAUSTED", str(marker))
    spec = harness.load_op("ai.onnx", "Trilu")
    with Worker(resolve(f"{FAKES}:ExhaustedOnce"), timeout=10) as worker:
        runner = Runner(BackendRunner(worker), max_examples=5, seed=3)
        runner.run_differential(spec, spec.version(14), TYPES[:1])
        assert runner.results[0].outcome == "pass"
        assert worker.restarts_exhausted == 1
    assert not marker.exists()


def test_a_dead_pool_process_does_not_fail_the_other_ops(tmp_path):
    """Killing one -j process (as the OOM killer would) loses at most the ops it was running."""
    import os
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "r.json"
    ops = ["Abs", "Add", "Where", "Trilu", "Neg", "Sub"]
    cmd = [sys.executable, "-m", "opkit.cli", "test", "--backend", "reference", "--suite", "differential",
           "--max-examples", "30", "--report", str(path), "--no-repro", "-q", "-j", "2"]
    for op in ops:
        cmd += ["--op", op]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    for _ in range(200):  # find a pool process (a direct child running spawn_main) and kill it
        time.sleep(0.1)
        try:
            children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
        except OSError:
            children = []
        for pid in children:
            try:
                cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
                killed = int(pid)
                break
        if killed:
            time.sleep(1.0)
            os.kill(killed, signal.SIGKILL)
            break
    out, err = proc.communicate(timeout=300)
    assert killed, "no pool process found"
    report = json.loads(path.read_text())
    ran = {c["op"] for c in report["cases"] if c["example"] != "runner"}
    lost = {c["op"] for c in report["cases"] if c["example"] == "runner"}
    assert set(ops) <= ran | lost
    assert len(ran) >= len(ops) - 2, err[-2000:]
