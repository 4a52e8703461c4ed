"""Same seed, same cases, same outcomes; a property failure's repro bundle reproduces it.

``opkit test --seed S`` must draw the same cases and reach the same verdicts however often it
runs, in whatever process (``-j``), under any PYTHONHASHSEED and whatever modules happen to be
loaded (hypothesis mixes constants from the source of loaded local modules into its draws: see
opkit.conformance.determinism). And the ``repro.py`` of a property failure must evaluate the
property again, not just rerun the drawn case (which a backend may get right while failing the
property's other calls).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import strategies as st

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.repro import ReproWriter
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.case_exec import Exec
from opkit.conformance.runner import Runner
from opkit.conformance.worker_engine import InProcess
from reproducibility_fakes import LowerOffByOne
from test_conformance_repro import rerun

COMPARED = ("suite", "op", "version", "types", "example", "outcome", "message", "minimal_example", "examples_run")


# ------------------------------------------------------------------------------------------------
# property failures: the bundle replays the property


def _property_bundle(tmp_path):
    """Trilu's property 'partition' on LowerOffByOne (int32, 10 examples, seed 3): its record."""
    spec = harness.load_op("ai.onnx", "Trilu")
    backend_spec = resolve("reproducibility_fakes:LowerOffByOne")
    backend = BackendRunner(InProcess(backend_spec))
    repro = ReproWriter(str(tmp_path / "bundles"), backend_spec, backend.info, backend.ir_version)
    runner = Runner(backend, max_examples=10, seed=3, repro=repro)
    prop = next(p for p in spec.version(14).properties if p.name == "partition")
    spec_one = _only_property(spec, prop)
    runner.run_properties(spec_one, spec_one.version(14), [{"T": "tensor(int32)"}])
    (record,) = runner.results
    return record


def _only_property(spec, prop):
    """``spec`` with version 14 keeping one property (faster, one record)."""
    import dataclasses

    versions = tuple(dataclasses.replace(v, properties=(prop,)) if v.since == 14 else v for v in spec.versions)
    return dataclasses.replace(spec, versions=versions)


def _case_alone_passes(folder) -> bool:
    """Whether the backend gets the bundle's drawn case (model.onnx, inputs.npz) right."""
    import onnx

    model = onnx.load(os.path.join(folder, "model.onnx"))
    with np.load(os.path.join(folder, "inputs.npz")) as inputs, np.load(os.path.join(folder, "expected.npz")) as exp:
        feeds = [inputs[i.name] for i in model.graph.input if i.name in inputs.files]
        (out,) = LowerOffByOne.prepare(model).run(feeds)
        return bool(np.array_equal(out, exp[exp.files[0]]))


def test_property_failure_bundle_replays_the_property(tmp_path):
    record = _property_bundle(tmp_path)
    assert record.outcome == "mismatch" and record.message.startswith("property 'partition' does not hold")
    folder = record.repro
    meta = json.load(open(os.path.join(folder, "case.json")))
    assert meta["property"]["name"] == "partition"
    assert _case_alone_passes(folder)  # so rerunning the drawn case said "no longer reproduces"
    proc = rerun(folder)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert record.message in proc.stdout
    assert "differs from the reference kernel" in proc.stdout  # names the call the backend gets wrong


def test_property_failure_is_the_same_on_every_run(tmp_path):
    """Shrinking included: the same seed ends at the same minimal example and message."""
    first, second = _property_bundle(tmp_path / "a"), _property_bundle(tmp_path / "b")
    assert {k: getattr(first, k) for k in COMPARED} == {k: getattr(second, k) for k in COMPARED}


def test_property_bundle_of_a_fixed_backend_exits_zero(tmp_path):
    record = _property_bundle(tmp_path)
    meta_path = os.path.join(record.repro, "case.json")
    meta = json.load(open(meta_path))
    meta["backend"]["target"] = "reproducibility_fakes:FixedTrilu"
    json.dump(meta, open(meta_path, "w"))
    proc = rerun(record.repro)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no longer reproduces" in proc.stdout


# ------------------------------------------------------------------------------------------------
# draws depend on the seed alone


class _NoBackend:
    info = {"name": "none"}


def _drawn_values(max_examples: int = 200) -> list[int]:
    """What hypothesis_run draws from a seed-like strategy (every example passes)."""
    runner = Runner(_NoBackend(), max_examples=max_examples)
    seen: list[int] = []

    def execute(value):
        seen.append(value)
        return Exec("pass")

    runner.hypothesis_run(st.integers(0, 2**32 - 1), execute, seed=7)
    return seen


def test_draws_ignore_constants_in_loaded_modules(monkeypatch):
    """Hypothesis draws about one value in twenty from constants found in the source of loaded
    local modules: which modules a process has loaded (kernels of earlier ops, a project's own
    code) must not change what a seed draws."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    before = _drawn_values()
    planted = set(range(1_000_003, 1_000_003 + 64 * 7919, 7919))  # what some loaded module holds
    monkeypatch.setattr(providers, "_get_local_constants", lambda: Constants(integers=planted))
    monkeypatch.setattr(providers, "CONSTANTS_CACHE", type(providers.CONSTANTS_CACHE)(1024))
    after = _drawn_values()
    assert after == before
    assert not planted & set(after)


# ------------------------------------------------------------------------------------------------
# the reference kernel's time limit counts its work, not the clock


def _oracle_case():
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "Relu")
    version = spec.version(14)
    return make_case(spec, version, {"T": "tensor(float)"}, {}, [("X", np.ones(3, np.float32))])


def _with_oracle(monkeypatch, fn, limit=0.3):
    case = _oracle_case()
    monkeypatch.setattr(harness, "ORACLE_TIME_LIMIT", limit)
    harness.set_oracle(case.domain, case.op, case.since, fn)
    return case


@pytest.fixture
def restore_oracle():
    yield
    case = _oracle_case()
    harness.set_oracle(case.domain, case.op, case.since, None)


def test_a_kernel_waiting_on_a_busy_machine_is_not_too_slow(monkeypatch, restore_oracle):
    """On a loaded machine the kernel waits for a core (here: sleeps) while the clock runs: that
    must not make a draw invalid, or the same seed keeps other draws on another run."""
    import time

    def waits(X):
        time.sleep(0.6)
        return X

    case = _with_oracle(monkeypatch, waits)
    (out,) = harness.expected_outputs(case)
    assert np.array_equal(out, np.ones(3, np.float32))


def test_a_kernel_computing_past_the_limit_is_too_slow(monkeypatch, restore_oracle):
    import time

    def computes(X):
        end = time.process_time() + 5.0
        while time.process_time() < end:
            pass
        return X

    case = _with_oracle(monkeypatch, computes)
    t0 = time.perf_counter()
    with pytest.raises(harness.OracleTooSlow, match="CPU time"):
        harness.expected_outputs(case)
    assert time.perf_counter() - t0 < 4.0


# ------------------------------------------------------------------------------------------------
# whole runs: the same seed gives the same case records


# Sigmoid (no family hook), LRN (the normalization hook); properties: see the failure tests above
OPS = ("Sigmoid", "LRN")
RUN = ("--backend", "reference", "--max-examples", "5", "--max-bindings", "2", "--probe-limit", "0", "--seed", "11", "--no-repro",
       "--no-expectations", "--no-isolate", "-q")


def _records(report: str) -> dict:
    """Each case's verdict by (suite, op, version, types, example), durations left out."""
    with open(report, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    out = {}
    for c in cases:
        key = (c["suite"], c["domain"], c["op"], c["version"], json.dumps(c["types"], sort_keys=True), c["example"])
        assert key not in out, key
        out[key] = {k: c.get(k) for k in COMPARED + ("rejected",)}
    return out


def _run_here(tmp_path, name: str, *extra: str) -> dict:
    from opkit.cli import main

    report = str(tmp_path / f"{name}.json")
    args = list(RUN) + [a for op in OPS for a in ("--op", op)] + ["--report", report, *extra]
    assert main(["test", *args]) in (0, 1)
    return _records(report)


def test_same_seed_twice_gives_the_same_records(tmp_path):
    first = _run_here(tmp_path, "first")
    assert len(first) > 10 and any(k[2] == "LRN" for k in first)
    assert _run_here(tmp_path, "second") == first


def test_same_seed_with_two_jobs_gives_the_records_of_one(tmp_path):
    """-j 2: each op in a pool process (which keeps its backend worker and whatever it loaded
    for the ops it ran before); the records are those of the sequential run."""
    sequential = _run_here(tmp_path, "one")
    assert _run_here(tmp_path, "two", "-j", "2") == sequential


# A process that has loaded other local code (a project's own modules, kernels of ops it ran
# before) holds other constants for hypothesis to mix in: a module of them, loaded first.
_PRELOAD = """
import sys
sys.path.insert(0, {folder!r})
import planted_constants
"""
_PLANTED = ("SEEDS = [" + ", ".join(str(1_000_003 + 7919 * i) for i in range(200)) + "]\n"
            "SCALES = [" + ", ".join(f"{0.37 + i / 8:.3f}" for i in range(100)) + "]\n")


def _run_in_subprocess(tmp_path, name: str, hash_seed: str, preload: bool) -> dict:
    """Pow's differential records: whether a drawn integer exponent is valid depends on the drawn
    values, so any change in what a seed draws shows in examples_run."""
    report = str(tmp_path / f"{name}.json")
    args = ["test", *RUN, "--op", "Pow", "--suite", "differential", "--max-examples", "10", "--report", report]
    code = (_PRELOAD.format(folder=str(tmp_path)) if preload else "") + \
        f"import sys\nfrom opkit.cli import main\nsys.exit(main({args!r}))\n"
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return _records(report)


def test_records_do_not_depend_on_hash_seed_or_loaded_modules(tmp_path):
    (tmp_path / "planted_constants.py").write_text(_PLANTED)
    plain = _run_in_subprocess(tmp_path, "plain", "0", preload=False)
    other = _run_in_subprocess(tmp_path, "other", "1", preload=True)
    assert len(plain) > 10
    assert other == plain


# ------------------------------------------------------------------------------------------------
# a verdict's message holds no clock readings


def test_crash_message_is_the_same_on_every_run():
    """A backend worker that dies: the message says how, not after how many seconds (which
    differed between runs of the same seed)."""
    from opkit.conformance.worker import Worker

    spec = harness.load_op("ai.onnx", "Trilu")
    with Worker(resolve("test_conformance_fakes:Aborts"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=1, seed=1)
        runner.run_differential(spec, spec.version(14), [{"T": "tensor(float)"}])
    (record,) = runner.results
    assert record.outcome == "crash"
    assert record.message == "backend worker died: killed by signal SIGABRT"


def test_overlapping_runs_keep_local_constants_off_until_the_last_ends():
    """Dask worker threads run several ops at once: one run ending must not switch hypothesis's
    local constants back on under another, and the last one restores what was there."""
    from hypothesis.internal.conjecture import providers

    from opkit.conformance.determinism import local_constants_off

    original = providers._get_local_constants
    first, second = local_constants_off(), local_constants_off()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert providers._get_local_constants is not original
    assert not providers._get_local_constants().integers
    second.__exit__(None, None, None)
    assert providers._get_local_constants is original
