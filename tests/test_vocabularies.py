"""Each vocabulary has one definition, and what is derived from it stays in step with it."""

from __future__ import annotations

from opkit.core import dtypes, onnx_types
from opkit.core.exit_codes import ExitCode
from opkit.results import outcomes


def test_float_and_complex_classes_cover_every_element_type_of_their_kind():
    floats = {t for t in onnx_types.ELEMENT_TYPES if t.startswith(("float", "bfloat")) or t == "double"}
    assert set(onnx_types.FLOAT_TYPES) == floats
    assert set(onnx_types.COMPLEX_TYPES) == {t for t in onnx_types.ELEMENT_TYPES if t.startswith("complex")}
    assert dtypes.FLOATS is onnx_types.FLOAT_TYPES and dtypes.COMPLEX is onnx_types.COMPLEX_TYPES


def test_the_suite_choices_of_opkit_test_are_the_spec_suites():
    from opkit.cli import build_parser
    from opkit.run.options import SUITE_CHOICES

    assert SUITE_CHOICES == outcomes.SPEC_SUITES + ("all",)
    assert set(outcomes.OUTPUT_SUITES) <= set(outcomes.SPEC_SUITES)
    assert set(outcomes.FINDING_OUTCOMES) <= set(outcomes.FAILING)
    assert sorted(outcomes.SEVERITY) == sorted(outcomes.OUTCOMES)
    test = next(a for a in build_parser()._subparsers._group_actions[0].choices["test"]._actions
                if "--suite" in a.option_strings)
    assert set(test.choices) == set(SUITE_CHOICES) | {"onnx-node"}


def test_exit_codes_are_the_documented_numbers(capsys):
    from opkit.cli import main

    assert (ExitCode.OK, ExitCode.PROBLEMS, ExitCode.USAGE, ExitCode.INTERRUPTED) == (0, 1, 2, 130)
    assert main(["show", "NoSuchOp"]) == ExitCode.USAGE
    assert "NoSuchOp" in capsys.readouterr().err
