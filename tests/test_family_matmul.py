"""The matmul family hook draws valid cases (opkit.cases.families.matmul)."""

from __future__ import annotations

import numpy as np
import pytest

from opkit.conformance import harness

from family_cases import kernel_versions, op_cases, assert_mostly_valid

OPS = ["MatMul", "Gemm", "Det"]


def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == "matmul"
    assert_mostly_valid(spec, version, 3, 10)


def _drawn(op, since, n=40):
    return op_cases(op, since, n, seed_value=1)



def test_matmul_one_d_and_batch_broadcast():
    shapes = [(dict(c.inputs)["A"].shape, dict(c.inputs)["B"].shape) for c in _drawn("MatMul", 13, 150)]
    assert any(len(a) == 1 for a, _ in shapes) and any(len(b) == 1 for _, b in shapes)
    assert any(len(a) >= 3 and len(b) >= 3 and a[:-2] != b[:-2] for a, b in shapes)
    assert any(len(a) != len(b) and min(len(a), len(b)) >= 2 for a, b in shapes)


def test_gemm_transposes_and_broadcast_c():
    drawn = _drawn("Gemm", 13, 60)
    attrs = [dict(c.attributes) for c in drawn]
    assert any(a.get("transA") == 1 for a in attrs) and any(a.get("transB") == 1 for a in attrs)
    cs = [dict(c.inputs)["C"] for c in drawn]
    assert any(c is None for c in cs) and any(c is not None and c.ndim < 2 for c in cs)
    old = _drawn("Gemm", 6, 40)
    assert any(dict(c.attributes).get("broadcast") == 1 for c in old)


def test_det_float16_kernel():
    spec = harness.load_op("ai.onnx", "Det")
    from opkit.cases.case import make_case
    version = spec.version(22)
    x = np.array([[[2, 1], [1, 3]]], dtype=np.float16)
    case = make_case(spec, version, {"T": "tensor(float16)"}, {}, [("X", x)])
    (y,) = harness.expected_outputs(case)
    assert np.asarray(y).dtype == np.float16 and float(np.asarray(y).reshape(-1)[0]) == 5.0
