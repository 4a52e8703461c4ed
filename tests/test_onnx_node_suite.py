"""The onnx-node suite through ReferenceBackend: no regression against the committed results."""

from __future__ import annotations

import json
import os

import pytest

from opkit.backends.reference import ReferenceBackend
from opkit.suites import onnx_node

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "conformance", "onnx-node-results.json")


@pytest.fixture(scope="module")
def committed():
    with open(RESULTS, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def full_run():
    # every node case (about 1,900) runs in a few seconds on the reference kernels
    return onnx_node.run(ReferenceBackend, progress=False)


def test_no_case_that_passed_in_the_committed_results_regresses(full_run, committed):
    now = {c.name: c.status for c in full_run.cases}
    regressed = sorted(case["example"] for case in committed["cases"]
                       if case["outcome"] == "pass" and now.get(case["example"]) != "pass")
    assert not regressed, f"node cases that passed before and fail now: {regressed[:20]}"


def test_committed_results_are_current(full_run, committed):
    """conformance/onnx-node-results.json must be regenerated when kernels change."""
    passed = sum(c["outcome"] == "pass" for c in committed["cases"])
    assert full_run.passed == passed, (
        "rerun `opkit test --suite onnx-node --report conformance/onnx-node-results.json` and `opkit gen`")


def test_covered_ops_pass_every_case(full_run):
    per_op = full_run.per_op()
    for op in ("Add", "Conv", "MaxPool", "ReduceSum", "Cast", "CastLike", "Slice", "Softmax", "TopK", "Loop"):
        passed, total = per_op[op]
        assert passed == total, f"{op}: {passed}/{total}"
    assert sum(p == t for p, t in per_op.values()) >= 120


def test_report_is_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    onnx_node.run(ReferenceBackend, ops=["Abs", "Split"], report_path=str(a), progress=False)
    onnx_node.run("reference", ops=["Abs", "Split"], report_path=str(b), progress=False)
    assert a.read_text() == b.read_text()
    data = json.loads(a.read_text())
    passed, total = onnx_node.per_op_counts(data)["Split"]
    assert passed == total > 0
    # the same case records every other suite writes, so compare and the scoreboard read it
    from opkit.results.record import records
    from opkit.results.report import validate_report

    assert validate_report(data) == []
    assert {r.suite for r in records(data["cases"])} == {"onnx-node"}


def test_comparison_rules():
    import numpy as np

    onnx_node.compare([np.float32([1.0])], [np.float32([1.0005])], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="dtype"):
        onnx_node.compare([np.float32([1.0])], [np.float64([1.0])], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="shape"):
        onnx_node.compare([np.float32([1.0])], [np.float32([[1.0]])], 1e-3, 1e-7)
    zero = np.array(0.0, np.float32)  # a sequence holding a 0-d tensor (onnx 1.23's runner trips on it)
    onnx_node.compare([[zero, np.float32([1.0])]], [[zero, np.float32([1.0])]], 1e-3, 1e-7)


def test_cli_exit_codes(capsys):
    from opkit.cli import main

    assert main(["test", "--backend", "reference", "--suite", "onnx-node", "--op", "Relu", "-q"]) == 0
    assert main(["test", "--suite", "onnx-node", "--op", "NoSuchOp", "-q"]) == 2
    # a backend that fails everything exits 1
    assert main(["test", "--backend", "tests.test_onnx_node_suite:BrokenBackend", "--suite", "onnx-node",
                 "--op", "Relu", "-q"]) == 1
    # the spec-driven suites take the same Backend-API class: every case fails, the run completes
    assert main(["test", "--backend", "tests.test_onnx_node_suite:BrokenBackend", "--op", "Relu", "-q",
                 "--max-examples", "2", "--no-repro", "--no-expectations"]) == 1


class BrokenBackend:
    @classmethod
    def prepare(cls, model, device="CPU"):
        raise RuntimeError("broken on purpose")


def test_onnxruntime_logs_do_not_flood_the_terminal():
    """onnxruntime logged an error line per refused node case (hundreds over the suite) on stderr."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "opkit.cli", "test", "--backend", "onnxruntime-backend-api",
                           "--suite", "onnx-node", "--op", "Attention", "--op", "GRU", "-q"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "[E:onnxruntime" not in proc.stderr and "[W:onnxruntime" not in proc.stderr, proc.stderr[:2000]


def test_the_suite_says_it_runs_here_when_a_cluster_is_named(capsys, monkeypatch, tmp_path):
    """--scheduler sends the spec suites to Dask; the onnx-node suite stays local, and says so."""
    from opkit.cli import main

    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:1")
    code = main(["test", "--backend", "reference", "--suite", "onnx-node", "--op", "Abs", "-q",
                 "--report", str(tmp_path / "node.json")])
    assert code == 0
    assert "the onnx-node suite runs on this machine" in capsys.readouterr().err
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    main(["test", "--backend", "reference", "--suite", "onnx-node", "--op", "Abs", "-q",
          "--report", str(tmp_path / "node2.json")])
    assert "runs on this machine" not in capsys.readouterr().err


def test_random_draws_are_judged_by_types_and_shapes_only():
    """onnx's expected Bernoulli outputs are one draw of NumPy's generator, which the text leaves to
    the runtime: a backend drawing other values (or, unseeded, the same ones by chance) passes
    exactly when its types and shapes are right, so the pass count cannot change between runs."""
    class Flipped:
        """The reference's outputs with every value of a random op's output inverted."""
        wrong_dtype = False

        @classmethod
        def prepare(cls, model, device="CPU"):
            inner = ReferenceBackend.prepare(model, device)

            class Rep:
                def run(self, inputs):
                    out = [1 - np.asarray(o) for o in inner.run(inputs)]
                    return [o.astype(np.int8) for o in out] if cls.wrong_dtype else out
            return Rep()

    import numpy as np

    random_cases = [c for c in onnx_node.collect() if c.draws]
    assert {"test_bernoulli", "test_bernoulli_seed", "test_training_dropout_mask"} <= {c.name for c in random_cases}
    bernoulli = [c for c in random_cases if c.op == "Bernoulli"]
    assert all(onnx_node.run_case(Flipped, c).status == "pass" for c in bernoulli)
    Flipped.wrong_dtype = True
    assert all(onnx_node.run_case(Flipped, c).status == "fail" for c in bernoulli)
    # a schema's "nondeterministic" for what a body may hold (Loop, If, Scan) or for no reason the
    # text gives (AffineGrid) does not stop the values being compared
    deterministic = {c.op for c in onnx_node.collect() if not c.draws}
    assert {"Loop", "If", "Scan", "AffineGrid", "Abs"} <= deterministic
    assert not any(c.draws for c in onnx_node.collect() if c.op in ("Loop", "If", "Scan", "AffineGrid"))
