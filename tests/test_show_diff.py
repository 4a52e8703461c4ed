"""``opkit show`` and ``opkit diff`` (in-process through opkit.cli.main), and opkit.spec.diff."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from opkit.cli import main
from opkit.spec.diff import diff_versions, render_diff_markdown, render_diff_text
from opkit.spec.load import load_spec_file
from opkit.spec.model import Attribute, FormalParameter, OpVersion, TypeConstraint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(ROOT, "specs")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--specs", SPECS, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def spec(domain: str, name: str):
    loaded, diags = load_spec_file(os.path.join(SPECS, domain, f"{name}.yaml"))
    assert not diags
    return loaded


# ---------------------------------------------------------------------------------------------
# show


def test_show_text(capsys):
    code, out, _ = run(capsys, "show", "Clip")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Clip  (ai.onnx, version 13)"
    assert "  support level: common" in lines
    assert "inputs (1 to 3):" in lines
    assert "  min : T  (optional, non-differentiable)" in lines
    assert "  input : T  (differentiable)" in lines
    assert any(line.startswith("  T : tensor(uint8), tensor(uint16)") for line in lines)
    from opkit.spec.load import load_spec_file

    spec, _ = load_spec_file("specs/ai.onnx/Clip.yaml")
    assert f"examples ({len(spec.version(13).examples)}; values: --format yaml):" in lines  # onnx's node tests
    assert lines[-1] == "other versions: 1, 6, 11, 12"


def test_show_version_attributes_and_defaults(capsys):
    code, out, _ = run(capsys, "show", "Clip", "--version", "6")
    assert code == 0
    assert out.splitlines()[0] == "Clip  (ai.onnx, version 6)"
    assert "  max : float, default 3.4028235e+38" in out
    assert "other versions: 1, 11, 12, 13" in out


def test_show_version_in_force(capsys):
    code, out, err = run(capsys, "show", "Clip", "--version", "7")
    assert code == 0 and "version 6)" in out.splitlines()[0]
    assert "Clip at opset 7 is version 6" in err


def test_show_version_before_first_is_usage_error(capsys):
    code, _, err = run(capsys, "show", "Trilu", "--version", "3")
    assert code == 2 and "no version at opset 3" in err


def test_show_unknown_op_exits_2_with_hint(capsys):
    code, out, err = run(capsys, "show", "Clop")
    assert code == 2 and out == ""
    assert "no op named 'Clop'" in err
    hint = err.split("did you mean ")[1]
    assert "'Clip'" in hint


def test_show_case_insensitive_and_domain(capsys):
    code, out, _ = run(capsys, "show", "trilu", "--domain", "ai.onnx")
    assert code == 0 and out.startswith("Trilu  (ai.onnx, version 14)")
    code, _, err = run(capsys, "show", "Trilu", "--domain", "ai.onnx.mll")
    assert code == 2 and "not in domain 'ai.onnx.mll'" in err


def test_show_ambiguous_name_prefers_default_domain(capsys):
    code, out, err = run(capsys, "show", "DequantizeLinear")
    assert code == 0 and "(ai.onnx," in out.splitlines()[0]
    assert "also in com.microsoft" in err
    code, out, _ = run(capsys, "show", "DequantizeLinear", "--domain", "com.microsoft")
    assert code == 0 and "(com.microsoft," in out.splitlines()[0]


def test_show_ml_domain(capsys):
    code, out, _ = run(capsys, "show", "LabelEncoder", "--domain", "ai.onnx.ml")
    assert code == 0 and out.startswith("LabelEncoder  (ai.onnx.ml, version 4)")


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_show_machine_formats(capsys, fmt):
    code, out, _ = run(capsys, "show", "Clip", "--version", "11", "--format", fmt)
    assert code == 0
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert data["op"] == "Clip" and data["domain"] == "ai.onnx"
    assert [v["since"] for v in data["versions"]] == [11]
    assert [i["name"] for i in data["versions"][0]["inputs"]] == ["input", "min", "max"]


# ---------------------------------------------------------------------------------------------
# diff


def test_diff_clip_attributes_become_inputs(capsys):
    code, out, _ = run(capsys, "diff", "Clip", "6", "11")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Clip 6 -> 11 (ai.onnx)"
    assert "  - min: float, default -3.4028235e+38  [moved to inputs]" in lines
    assert "  - max: float, default 3.4028235e+38  [moved to inputs]" in lines
    assert "  + min: T, optional  [moved from attributes]" in lines
    assert "  + max: T, optional  [moved from attributes]" in lines
    assert "  ~ inputs (arity) 1..1 -> 1..3" in lines
    assert "doc:" in lines and "  +specified by the inputs 'min' and 'max'. They default to" in lines


def test_diff_is_always_old_to_new(capsys):
    code, out, err = run(capsys, "diff", "Clip", "11", "6")
    assert code == 0 and out.startswith("Clip 6 -> 11") and "swapped" in err


def test_diff_type_constraints(capsys):
    code, out, _ = run(capsys, "diff", "Abs", "1", "6")
    assert code == 0
    assert "  - consumed_inputs: ints, optional" in out
    assert "  ~ T: doc changed; types added: tensor(uint8)," in out


def test_diff_markdown(capsys):
    code, out, _ = run(capsys, "diff", "Clip", "6", "11", "--format", "markdown")
    assert code == 0
    assert out.startswith("#### Clip 6 → 11\n")
    assert "- removed `min`: `float, default -3.4028235e+38` (moved to inputs)" in out
    assert "- added `max`: `T, optional` (moved from attributes)" in out
    assert "```diff\n--- Clip-6\n+++ Clip-11\n" in out


def test_diff_single_version_op_is_usage_error(capsys):
    code, _, err = run(capsys, "diff", "Trilu", "14", "14")
    assert code == 2 and "only one version" in err


def test_diff_unknown_op(capsys):
    code, _, err = run(capsys, "diff", "Clipp", "6", "11")
    assert code == 2 and "'Clip'" in err.split("did you mean ")[1]


def test_diff_every_consecutive_pair_renders():
    """Every op with several versions: consecutive diffs compute and render, and are never empty
    unless the two versions really are equal in every compared field."""
    from opkit.spec.load import load_specs

    specs, diags = load_specs([SPECS])
    assert not diags
    pairs = 0
    for s in specs:
        for old, new in zip(s.versions, s.versions[1:]):
            d = diff_versions(old, new, op=s.name, domain=s.domain)
            assert render_diff_text(d).startswith(f"{s.name} {old.since} -> {new.since}")
            render_diff_markdown(d)
            pairs += 1
    assert pairs > 400


def test_diff_versions_pure_model():
    old = OpVersion(
        since=1, doc="same\n",
        attributes=(Attribute("alpha", "float", default=0.5), Attribute("gone", "int", default=1)),
        inputs=(FormalParameter("X", "T", differentiable=True),),
        outputs=(FormalParameter("Y", "T"),),
        type_constraints=(TypeConstraint("T", ("tensor(float)", "tensor(double)")),),
    )
    new = OpVersion(
        since=7, doc="same\n",
        attributes=(Attribute("alpha", "float", default=1.0), Attribute("beta", "string", required=True)),
        inputs=(FormalParameter("X", "T", differentiable=True), FormalParameter("gone", "tensor(int64)",
                                                                               option="optional")),
        outputs=(FormalParameter("Y", "T", option="variadic", homogeneous=False),),
        type_constraints=(TypeConstraint("T", ("tensor(float)", "tensor(bfloat16)")),),
    )
    d = diff_versions(old, new, op="Op")
    assert d.doc == ()
    assert [a.name for a in d.attributes.added] == ["beta"]
    assert [a.name for a in d.attributes.removed] == ["gone"]
    assert d.attributes.changed[0].name == "alpha"
    assert [(c.field, c.old, c.new) for c in d.attributes.changed[0].changes] == [("default", 0.5, 1.0)]
    assert d.moved_to_inputs == ("gone",)
    assert d.type_constraints.changed[0].types_added == ("tensor(bfloat16)",)
    assert d.type_constraints.changed[0].types_removed == ("tensor(double)",)
    assert {c.field for c in d.outputs.changed[0].changes} == {"option", "homogeneous"}
    with pytest.raises(AttributeError):
        d.op = "x"  # frozen
    same = diff_versions(old, old, op="Op")
    assert same.empty and "no differences" in render_diff_text(same)
