"""Which op versions draw random values: only those have their values left uncompared."""

from __future__ import annotations

import pytest

from opkit.conformance import harness
from opkit.spec.model import draws_random_values


@pytest.mark.parametrize("op,since,draws", [
    ("Bernoulli", 15, True), ("RandomNormal", 1, True), ("RandomUniformLike", 22, True), ("Multinomial", 7, True),
    ("Dropout", 1, True), ("Dropout", 12, True), ("Dropout", 22, True),
    # ONNX's schema flags these nondeterministic too, but their values are the op's own
    ("Dropout", 7, False), ("Dropout", 10, False), ("AffineGrid", 20, False), ("Loop", 19, False),
    ("If", 21, False), ("Scan", 16, False), ("Add", 14, False),
])
def test_what_draws_random_values(op, since, draws):
    version = harness.load_op("ai.onnx", op).version(since)
    assert version.draws is draws
    if op not in ("Add",):
        assert version.determinism == "nondeterministic"  # the flag alone does not decide


def test_the_rule_needs_both_the_flag_and_a_mark_of_randomness():
    assert draws_random_values("nondeterministic", ["seed"], [])
    assert draws_random_values("nondeterministic", [], ["training_mode"])
    assert not draws_random_values("deterministic", ["seed"], [])
    assert not draws_random_values("nondeterministic", ["align_corners"], ["theta", "size"])


def test_affine_grid_values_are_compared(tmp_path):
    """AffineGrid was never compared (examples by shape only, no differential test): a backend
    whose grid is off by one is now found."""
    import json

    from opkit.cli import main

    report = tmp_path / "r.json"
    code = main(["test", "--backend", "random_ops_fakes:ShiftedAffineGrid", "--op", "AffineGrid", "--suite",
                 "examples", "--suite", "differential", "--max-examples", "10", "--report", str(report), "--no-isolate"])
    cases = json.loads(report.read_text())["cases"]
    assert code == 1
    assert {c["suite"] for c in cases if c["outcome"] == "mismatch"} == {"examples", "differential"}


def test_dropout_7_and_10_leave_the_inference_mask_uncompared():
    """The text says the output copies the input in inference and nothing of the mask (onnxruntime
    gives all false, or zeros of T at 7): the kernel expects no mask, and the copy is compared."""
    import numpy as np

    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "Dropout")
    for since in (7, 10):
        case = make_case(spec, spec.version(since), {"T": "tensor(float)", "T1": "tensor(bool)"}, {},
                         [("data", np.array([1.0, -2.0], np.float32))])
        out = harness.expected_outputs(case)
        assert out[0].tolist() == [1.0, -2.0] and (len(out) < 2 or out[1] is None)
