"""Repro bundles: written per distinct failure, rerunnable standalone (no opkit import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.repro import ReproWriter
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker import Worker

HERE = os.path.dirname(os.path.abspath(__file__))
# run repro.py with opkit made unimportable: the bundle must not need it
NO_OPKIT = "import runpy, sys; sys.modules['opkit'] = None; sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"


def make_bundles(tmp_path, cls, bindings):
    spec = harness.load_op("ai.onnx", "Trilu")
    backend_spec = resolve(f"test_conformance_fakes:{cls}")
    with Worker(backend_spec) as worker:
        backend = BackendRunner(worker)
        repro = ReproWriter(str(tmp_path), backend_spec, backend.info, backend.ir_version)
        runner = Runner(backend, max_examples=10, seed=3, repro=repro)
        runner.run_differential(spec, spec.version(14), bindings)
    return runner.results


def rerun(folder):
    return subprocess.run([sys.executable, "-c", NO_OPKIT, os.path.join(folder, "repro.py")],
                          capture_output=True, text=True, timeout=120, cwd=folder)


def test_mismatch_bundle_reruns_standalone(tmp_path):
    results = make_bundles(tmp_path, "WrongValues", [{"T": "tensor(float)"}, {"T": "tensor(bfloat16)"}])
    for rec in results:
        assert rec.outcome == "mismatch" and rec.repro
        folder = rec.repro
        assert sorted(os.listdir(folder)) == ["case.json", "expected.npz", "inputs.npz", "model.onnx", "repro.py"]
        meta = json.load(open(os.path.join(folder, "case.json")))
        assert meta["types"] == rec.types and meta["outcome"] == "mismatch"
        proc = rerun(folder)
        assert proc.returncode == 1, proc.stderr
        assert "MISMATCH" in proc.stdout and "max abs error 1" in proc.stdout


def test_bundle_inputs_are_the_minimal_example(tmp_path):
    (rec,) = make_bundles(tmp_path, "WrongValues", [{"T": "tensor(int64)"}])
    with np.load(os.path.join(rec.repro, "inputs.npz")) as data:
        total = sum(data[k].size for k in data.files)
    assert total <= 2  # shrunk: one element (and maybe k)


def test_unsupported_bundle_reports_the_refusal(tmp_path):
    (rec,) = make_bundles(tmp_path, "RefusesToLoad", [{"T": "tensor(float)"}])
    assert rec.outcome == "unsupported"
    proc = rerun(rec.repro)
    assert proc.returncode == 1 and "NOT_IMPLEMENTED" in proc.stdout


def test_onnxruntime_bundle_reruns(tmp_path):
    from opkit.cli import main

    code = main(["test", "--backend", "onnxruntime", "--op", "ai.onnx::Trilu", "--suite", "differential",
                     "--max-examples", "3", "--repro-dir", str(tmp_path), "--no-expectations", "-q",
                     "--report", str(tmp_path / "r.json")])
    assert code == 1
    folder = tmp_path / "onnxruntime" / "ai.onnx" / "Trilu-14" / "bfloat16-differential-unsupported"
    proc = rerun(str(folder))
    assert proc.returncode == 1 and "Could not find an implementation for Trilu(14)" in proc.stdout
    # distinct failures only: one folder per (types, suite, outcome)
    assert len(os.listdir(tmp_path / "onnxruntime" / "ai.onnx" / "Trilu-14")) == 10


def test_fixed_backend_exits_zero(tmp_path):
    (rec,) = make_bundles(tmp_path, "WrongValues", [{"T": "tensor(float)"}])
    meta_path = os.path.join(rec.repro, "case.json")
    meta = json.load(open(meta_path))
    meta["backend"]["target"] = "test_conformance_fakes:Correct"  # "fix" the backend
    json.dump(meta, open(meta_path, "w"))
    proc = rerun(rec.repro)
    assert proc.returncode == 0 and "no longer reproduces" in proc.stdout


def test_a_robustness_crash_bundle_exits_zero_once_the_process_survives(tmp_path):
    """A crash on hostile input is fixed when the runtime answers at all: a clean error or any
    value, what the robustness verdict asks (a recall run replays broken releases' bundles on the
    fixed release with this)."""
    spec = harness.load_op("ai.onnx", "Trilu")
    backend_spec = resolve("test_conformance_fakes:DiesOnExtremeK")
    with Worker(backend_spec, timeout=10.0) as worker:
        backend = BackendRunner(worker)
        runner = Runner(backend, max_examples=30, seed=1, timeout=10.0,
                        repro=ReproWriter(str(tmp_path), backend_spec, backend.info, backend.ir_version))
        runner.run_robustness(spec, spec.version(14), [{"T": "tensor(int64)"}])
    (rec,) = [r for r in runner.results if r.outcome == "crash"]
    assert rerun(rec.repro).returncode != 0  # still dies
    meta_path = os.path.join(rec.repro, "case.json")
    meta = json.load(open(meta_path))
    for fixed in ("test_conformance_fakes:Correct", "test_conformance_fakes:RaisesAtRun"):
        meta["backend"]["target"] = fixed
        json.dump(meta, open(meta_path, "w"))
        proc = rerun(rec.repro)
        assert proc.returncode == 0 and "no longer reproduces" in proc.stdout, (fixed, proc.stdout)


def _retarget(folder, target, outcome=None):
    meta_path = os.path.join(folder, "case.json")
    meta = json.load(open(meta_path))
    meta["backend"]["target"] = f"test_conformance_fakes:{target}"
    if outcome:
        meta["outcome"] = outcome
    json.dump(meta, open(meta_path, "w"))
    return rerun(folder)


def test_a_bundle_tells_a_failure_that_changed_from_one_that_reproduces(tmp_path):
    """Exit 3 when the recorded failure is gone but the case fails another way: onnxruntime 1.16's
    ReduceMax error on an empty axis is gone in 1.31, where the same case returns a wrong shape (a
    second bug). A recall run counts the first bug fixed, and the bundle does not say "fixed"."""
    (refused,) = make_bundles(tmp_path / "a", "RefusesToLoad", [{"T": "tensor(float)"}])
    assert _retarget(refused.repro, "RaisesAtRun").returncode == 1  # still raises: reproduces
    assert _retarget(refused.repro, "Correct").returncode == 0
    (wrong, *_) = make_bundles(tmp_path / "b", "WrongValues", [{"T": "tensor(float)"}])
    assert _retarget(wrong.repro, "WrongValues").returncode == 1
    proc = _retarget(wrong.repro, "RaisesAtRun")
    assert proc.returncode == 3 and "recorded mismatch no longer reproduces" in proc.stdout, proc.stdout
    # the same case recorded as an error, now answered with wrong values
    proc = _retarget(wrong.repro, "WrongValues", outcome="error")
    assert proc.returncode == 3 and "recorded error no longer reproduces" in proc.stdout, proc.stdout


def _one_bundle(tmp_path, cls, timeout):
    spec = harness.load_op("ai.onnx", "Trilu")
    backend_spec = resolve(f"test_conformance_fakes:{cls}")
    with Worker(backend_spec, timeout=timeout) as worker:
        backend = BackendRunner(worker)
        repro = ReproWriter(str(tmp_path), backend_spec, backend.info, backend.ir_version, time_limit=timeout)
        runner = Runner(backend, max_examples=3, seed=3, timeout=timeout, repro=repro)
        runner.run_differential(spec, spec.version(14), [{"T": "tensor(float)"}])
    (rec,) = [r for r in runner.results if r.repro]
    return rec


def test_a_hang_bundle_stops_at_the_case_time_limit_with_the_documented_status(tmp_path):
    import time

    rec = _one_bundle(tmp_path, "Sleeps", 2.0)  # the fake sleeps 60 s
    assert rec.outcome == "timeout"
    assert json.load(open(os.path.join(rec.repro, "case.json")))["time_limit"] == 2.0
    t0 = time.monotonic()
    proc = rerun(rec.repro)
    took = time.monotonic() - t0
    assert proc.returncode == 1 and "the runtime hung" in proc.stdout, (proc.returncode, proc.stdout, proc.stderr)
    assert took < 2.0 + 15, took  # the limit, plus starting Python and importing onnx twice


def test_a_crash_bundle_says_the_process_died_and_exits_one(tmp_path):
    rec = _one_bundle(tmp_path, "Aborts", 10.0)
    assert rec.outcome == "crash"
    proc = rerun(rec.repro)
    assert proc.returncode == 1 and "killed by signal SIGABRT" in proc.stdout, (proc.returncode, proc.stdout)
    # a crash recorded, a hang now: still a failure, but another one (3)
    meta_path = os.path.join(rec.repro, "case.json")
    meta = json.load(open(meta_path))
    meta["backend"]["target"] = "test_conformance_fakes:Sleeps"
    meta["time_limit"] = 1.0
    json.dump(meta, open(meta_path, "w"))
    proc = rerun(rec.repro)
    assert proc.returncode == 3 and "the runtime hung" in proc.stdout, (proc.returncode, proc.stdout)


def test_expected_failures_get_no_repro_bundle(tmp_path):
    """A failure an expectations entry predicts (xfail) is known: no bundle is written for it (they
    were most of what a run wrote under .opkit/repro); an unexpected one still gets its bundle."""
    from opkit.results.outcomes import Expectation, Expectations

    spec = harness.load_op("ai.onnx", "Trilu")
    backend_spec = resolve("test_conformance_fakes:WrongValues")
    expected = Expectations([Expectation("Trilu", "known", types=(("T", ("tensor(float)",)),))])
    with Worker(backend_spec) as worker:
        backend = BackendRunner(worker)
        runner = Runner(backend, max_examples=5, seed=3, expectations=expected,
                        repro=ReproWriter(str(tmp_path), backend_spec, backend.info, backend.ir_version))
        runner.run_differential(spec, spec.version(14), [{"T": "tensor(float)"}, {"T": "tensor(int64)"}])
    by_type = {r.types["T"]: r for r in runner.results}
    assert by_type["tensor(float)"].outcome == "xfail" and by_type["tensor(float)"].repro is None
    assert by_type["tensor(int64)"].outcome == "mismatch" and by_type["tensor(int64)"].repro
