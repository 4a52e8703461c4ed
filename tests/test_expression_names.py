"""Undefined names in a spec's Python (rules, properties, kernel and lowering bodies) are reported by
``opkit validate`` at their line and column, and the names the validator allows are the names the
code gets when it runs (opkit/spec/scopes.py is the one table for both)."""

from __future__ import annotations

import os

import yaml

from opkit.conformance import harness
from opkit.emit.kernels import render_module
from opkit.spec import scopes
from opkit.spec.load import load_spec_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = os.path.join(ROOT, "tests", "bad_specs")
DIAGONAL = os.path.join(ROOT, "specs", "directml", "DiagonalMatrix1.yaml")


def _diagnostics(path: str, data: bytes | None = None) -> list[tuple[str, int, int, str]]:
    _, diags = load_spec_file(path, data)
    return [(d.location.file, d.location.line, d.location.col, d.message) for d in diags]


def test_undefined_names_in_rules():
    """C1 (an attribute), C2 (a generator variable) and C5's math are in scope; a typo gets a
    did-you-mean, an output says why it is not there."""
    path = os.path.join(BAD, "undefined_name_rule.yaml")
    assert _diagnostics(path) == [
        (path, 15, 12, "undefined name 'Axis' in rule C3 (hint: did you mean 'axis'?)"),
        (path, 17, 12, "undefined name 'Y' in rule C4 (hint: 'Y' is an output, which a rule does not see; "
                       "rules check the inputs before the kernel runs)"),
        (path, 19, 46, "undefined name 'is_small' in rule C5 (hint: a rule sees the inputs, the attributes, math, "
                       "ml_dtypes, np, the helpers of opkit.kernels.lib and .runtime and Python's builtins)"),
    ]


def test_undefined_names_in_properties():
    """The column is exact inside a plain scalar folded over two lines (line 15, not the value's
    start on line 14) and inside a quoted one; lambda arguments and comprehension variables are bound."""
    path = os.path.join(BAD, "undefined_name_property.yaml")
    assert _diagnostics(path) == [
        (path, 15, 27, "undefined name 'OutputSize' in property empty_keeps_base (hint: did you mean 'OutputSizes'?)"),
        (path, 17, 12, "undefined name 'OutputTensor' in property shape (hint: 'OutputTensor' is an output, which "
                       "a property does not see; compute it with op(...))"),
        (path, 19, 109, "undefined name 'kernel' in property lambdas_and_comprehensions_are_bound (hint: a "
                        "property sees the inputs, the attributes, np, equal, op and Python's builtins)"),
    ]


def test_names_bound_in_kernel_and_lowering_bodies_are_not_flagged():
    """Imports, assignments, loop, comprehension, except, def, lambda and walrus targets and the
    kernel helpers (KernelValidationError) are all bound: only the two real typos are reported."""
    path = os.path.join(BAD, "undefined_name_kernel.yaml")
    assert _diagnostics(path) == [
        (path, 27, 30, "undefined name 'K' in kernel (hint: did you mean 'k'?)"),
        (path, 33, 14, "undefined name 'output' in lowering via_trilu (hint: a lowering sees the inputs, the "
                       "attributes, np, target and Python's builtins)"),
    ]


def test_a_syntax_error_is_not_also_reported_as_names():
    text = (b"op: s\ndomain: test\nversions:\n- since: 1\n  inputs:\n  - {name: X, type: tensor(float)}\n"
            b"  outputs:\n  - {name: Y, type: tensor(float)}\n  rules:\n"
            b"  - {label: C1, holds: 'x.ndim >= = 2'}\n  - {label: C2, holds: 'x.ndim >= 2'}\n")
    assert _diagnostics("<s>", text) == [
        ("<s>", 10, 35, "Python syntax error in rule C1: invalid syntax"),
        ("<s>", 11, 25, "undefined name 'x' in rule C2 (hint: did you mean 'X'?)"),
    ]


def _guide_property() -> dict:
    """The property docs/custom-op.md shows in section 5."""
    with open(os.path.join(ROOT, "docs", "custom-op.md"), encoding="utf-8") as f:
        section = f.read().split("## 5. Properties", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    return yaml.safe_load(block)["properties"][0]


def test_the_guide_property_validates_and_holds_without_optional_attributes():
    """The guide's property names OutputSizes, an optional attribute without a default. The
    kernel binds it to None when it is absent; the property namespace left it out (NameError
    on the examples without OutputSizes). It now gets every input and attribute, like the kernel."""
    spec, diags = load_spec_file(DIAGONAL)
    assert diags == []
    version = spec.version(1)
    guide = _guide_property()
    prop = next(p for p in version.properties if p.name == guide["name"])
    assert prop.holds == guide["holds"]  # the guide shows the committed property
    module: dict = {}
    exec(render_module(spec), module)  # noqa: S102 - the generated reference kernel
    kernel = module["KERNELS"][1]
    absent = 0
    for example in version.examples:
        case, _ = harness.example_case(spec, version, example)
        absent += "OutputSizes" not in dict(case.attributes)
        assert harness.check_property(prop, case, version, kernel), example.name
        ns = harness.property_namespace(case, version, kernel)
        assert set(ns) == scopes.names("property", version) - scopes.BUILTINS  # what validate allows
    assert absent == 2  # keep_strict_upper, keep_diagonal


def test_kernel_scope_is_what_the_generated_module_defines():
    """scopes.py lists the kernel module's globals; the template is where they come from."""
    spec, _ = load_spec_file(DIAGONAL)
    module: dict = {}
    exec(render_module(spec), module)  # noqa: S102
    assert set(scopes.KERNEL_IMPORTS) | scopes.kernel_helpers() <= set(module)
    assert "KernelValidationError" in scopes.kernel_helpers() and "reduce_core" in scopes.kernel_helpers()


def test_helpers_of_the_star_imported_family_modules_are_names_a_kernel_may_use():
    """opkit.kernels.lib star-imports one module per newer family (``__all__`` there, annotated or
    not): the validator read only lib/__init__.py's list and refused every spec naming their helpers."""
    import opkit.kernels.lib as lib
    from opkit.kernels.lib import _contrib_quant, _contrib_transformer, _ml
    from opkit.spec.scopes import kernel_helpers

    helpers = kernel_helpers()
    for module in (_contrib_transformer, _contrib_quant, _ml):
        assert module.__all__ and set(module.__all__) <= helpers
    assert set(lib.__all__) <= helpers
