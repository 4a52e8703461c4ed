"""Tensor attributes typed by a type parameter (``element_type: T``) are drawn as 0-D tensors of
the bound type, so ops like DirectML's DiagonalMatrix1 get properties and differential tests."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
from hypothesis import given, settings

from opkit.cases import cases
from opkit.conformance import harness
from opkit.spec.load import load_spec_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIAG = os.path.join(ROOT, "specs", "directml", "DiagonalMatrix1.yaml")
SPEC = harness.load_op("directml", "DiagonalMatrix1")
V1 = SPEC.version(1)


@settings(max_examples=60, deadline=None)
@given(cases(SPEC, V1))
def test_value_is_a_scalar_of_the_bound_type(case):
    value = dict(case.attributes)["Value"]
    assert isinstance(value, np.ndarray) and value.ndim == 0
    assert f"tensor({harness.elem_from_dtype(value.dtype)})" == case.type_map["T"]


def test_binding_comes_from_the_attribute_when_no_input_gives_it():
    value = np.array(2, np.uint16)
    assert harness.infer_binding(V1, [None], {"Value": value}) == {"T": "tensor(uint16)"}


def test_element_type_must_be_a_type_parameter_of_a_tensor_attribute(tmp_path):
    text = open(DIAG, encoding="utf-8").read()
    bad = tmp_path / "directml" / "DiagonalMatrix1.yaml"
    bad.parent.mkdir()
    bad.write_text(text.replace("      element_type: T\n", "      element_type: U\n", 1))
    _, diags = load_spec_file(str(bad))
    assert [d.message for d in diags] == ["element_type 'U' of attribute 'Value' is not a type parameter of this "
                                          "version"]


def test_diagonal_matrix1_properties_and_differential_run_on_the_reference_backend(tmp_path):
    done = subprocess.run([sys.executable, "-m", "opkit.cli", "test", "--backend", "reference", "--op",
                           "directml::DiagonalMatrix1", "--max-examples", "10", "-q", "--no-repro"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "error" not in done.stderr.split("cases")[-1]
