"""Unit tests of the operator page emitter (opkit/emit/docs_pages.py).

The central check: every field of a spec is visible on its page. It walks the loaded model of
ai.onnx Trilu, com.microsoft Trilu and directml DiagonalMatrix1 (whatever their curators put in
them) and looks for each value in the rendered markdown; a meta-test makes sure every key the spec
format declares has a check here, so a new spec field cannot silently go missing from the pages.
"""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from opkit.emit import GenContext
from opkit.emit import docs_pages as dp
from opkit.emit import page_examples, page_links, page_text, page_values, version_diff, version_view
from opkit.emit.json_schema import json_schema
from opkit.emit.spec_fields import objects as schema_objects
from opkit.spec.accuracy import accuracy_of
from opkit.spec.fields import OBJECTS
from opkit.spec.load import load_specs
from opkit.spec.model import (
    Approximation, Attribute, Example, FormalParameter, FunctionBody, Kernel, OpSpec, OpVersion, Property,
    RankRule, Rule, TensorValue, Tolerance, TypeConstraint, ValueDomain,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = {
    "ai.onnx/Trilu": "specs/ai.onnx/Trilu.yaml",
    "com.microsoft/Trilu": "specs/com.microsoft/Trilu.yaml",
    "directml/DiagonalMatrix1": "specs/directml/DiagonalMatrix1.yaml",
}


def _load(rel: str) -> OpSpec:
    path = os.path.join(ROOT, rel)
    if not os.path.exists(path):
        pytest.skip(f"{rel} is not there")
    specs, diags = load_specs([path])
    assert not diags, "\n".join(map(str, diags))
    return specs[0]


@pytest.fixture(scope="module")
def all_specs() -> tuple[OpSpec, ...]:
    specs, diags = load_specs([os.path.join(ROOT, "specs")])
    assert not diags
    return tuple(specs)


@pytest.fixture(scope="module")
def ctx(all_specs) -> GenContext:
    return GenContext(all_specs, ROOT)


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def _has(page: str, text: str, what: str) -> None:
    """``text`` (whitespace-normalised) occurs on the page."""
    if text in ("", None):
        return
    assert _flat(text) in _flat(page), f"{what}: {str(text)[:120]!r} is not on the page"


# ------------------------------------------------------------------------------------------------
# every spec field on the page


def _rendered(ctx, spec) -> str:
    """Every page of the op (its page with the newest version, then a page per older version), in
    order, as one text."""
    return "\n".join(dp.render_pages(ctx, spec).values())


def _section(page: str, spec: OpSpec, since: int) -> str:
    """The part of the page for one version."""
    label = f"({page_links.version_label(spec, since)})="
    start = page.index(label)
    following = [page.index(f"({page_links.version_label(spec, v.since)})=") for v in spec.versions
                 if page.index(f"({page_links.version_label(spec, v.since)})=") > start]
    return page[start: min(following) if following else len(page)]


PROSE = [page_text._dedent]  # how the spec being checked prints attribute and parameter docs


def _use(spec: OpSpec) -> bool:
    PROSE[0] = version_view._prose(spec)
    return True


def _check_param(sec: str, p: FormalParameter) -> None:
    _has(sec, f"**{p.name}**", "parameter name")
    _has(sec, f"**{p.type}**", f"type of {p.name}")
    _has(sec, PROSE[0](page_text._dedent(p.doc)), f"doc of {p.name}")
    line = next(l for l in sec.splitlines() if l.startswith(f"- **{p.name}** ("))
    option = {"single": "single", "optional": "optional", "variadic": f"variadic, at least {p.min_arity}"}[p.option]
    assert option in line, line
    assert ("homogeneous" if p.homogeneous else "heterogeneous") in line, line
    assert version_view._differentiability(p) in line, line
    if p.rank is not None:
        assert p.rank.describe() in line, line


def _check_tensor(sec: str, t: TensorValue | None, what: str) -> None:
    if t is None:
        _has(sec, "left empty", what)
        return
    _has(sec, f"`{t.dtype}`", f"{what} dtype")
    _has(sec, page_values.format_tensor(t.value), f"{what} value")
    if t.shape:
        _has(sec, "[" + ", ".join(map(str, t.shape)) + "]", f"{what} shape")


VERSION_CHECKS = {
    "since": lambda sec, v, spec: _has(sec, f"## {spec.name} - {v.since}", "version heading"),
    "support_level": lambda sec, v, spec: _has(sec, f"SupportType.{v.support_level.upper()}", "support level"),
    "deprecated": lambda sec, v, spec: _has(sec, "deprecated" if v.deprecated else "available", "deprecated"),
    "doc": lambda sec, v, spec: _has(sec, page_links.absolute_links(page_text._dedent(v.doc), spec.source), "doc"),
    "attributes": lambda sec, v, spec: [_check_attribute(sec, a) for a in v.attributes if _use(spec)],
    "inputs": lambda sec, v, spec: [_check_param(sec, p) for p in v.inputs if _use(spec)],
    "outputs": lambda sec, v, spec: [_check_param(sec, p) for p in v.outputs if _use(spec)],
    "type_constraints": lambda sec, v, spec: [
        (_has(sec, f"**{t.name}** in (", "type constraint"), _has(sec, version_view._prose(spec)(page_text._dedent(t.doc)), "constraint doc"),
         [_has(sec, f"`{x}`", "allowed type") for x in t.types]) for t in v.type_constraints],
    "input_range": lambda sec, v, spec: _has(sec, f"inputs {version_view._range(v.input_range)}", "input range")
    if v.input_range else None,
    "output_range": lambda sec, v, spec: _has(sec, f"outputs {version_view._range(v.output_range)}", "output range")
    if v.output_range else None,
    "function": lambda sec, v, spec: [(_has(sec, f"opset {f.opset}", "function opset"),
                                       _has(sec, page_text._block(f.text), "function body")) for f in v.function],
    "context_dependent_function": lambda sec, v, spec: [
        _has(sec, str(o), "context-dependent opset") for o in v.context_dependent_function],
    "shape_inference": lambda sec, v, spec: _has(sec, f"**shape inference**: `{v.shape_inference}`", "shape inference"),
    "data_propagation": lambda sec, v, spec: _has(sec, f"**data propagation**: `{v.data_propagation}`", "data propagation"),
    "determinism": lambda sec, v, spec: _has(sec, f"**determinism**: `{v.determinism}`", "determinism"),
    "changes": lambda sec, v, spec: _has(sec, page_text.plain(page_text._dedent(v.changes)), "changes"),
    "semantics": lambda sec, v, spec: _has(sec, page_text._block(v.semantics), "semantics"),
    "family": lambda sec, v, spec: v.family is None or _has(sec, f"by the `{v.family}` family", "family hook"),
    "rules": lambda sec, v, spec: [(_has(sec, f"**{r.label}**", "rule label"),
                                    _has(sec, r.holds.replace("|", "\\|"), "rule"),
                                    _has(sec, page_text.plain(page_text._dedent(r.doc)).replace("|", "\\|"), "rule doc")) for r in v.rules],
    "kernel": lambda sec, v, spec: _check_kernel(sec, v.kernel) if v.kernel else None,
    "properties": lambda sec, v, spec: [(_has(sec, f"**{p.name}**", "property"), _has(sec, page_text._block(p.holds), "holds"),
                                         _has(sec, page_text.plain(page_text._dedent(p.doc)), "property doc"),
                                         _has(sec, p.types or "", "property types")) for p in v.properties],
    "lowerings": lambda sec, v, spec: [(_has(sec, f"**{lo.name}**", "lowering"), _has(sec, lo.to, "lowering target"),
                                        _has(sec, page_text.plain(page_text._dedent(lo.doc)), "lowering doc"),
                                        _has(sec, page_text._block(lo.python), "lowering body")) for lo in v.lowerings],
    "tolerances": lambda sec, v, spec: [(_has(sec, f"`{t.dtype}`", "tolerance dtype"),
                                         _has(sec, f"{t.rtol!r} | {t.atol!r}", "tolerance")) for t in v.tolerances],
    "examples": lambda sec, v, spec: [_check_example(sec, e) for e in v.examples],
    "accuracy": lambda sec, v, spec: _has(sec, f"Accuracy: `{accuracy_of(spec.domain, spec.name, v).name}`",
                                          "accuracy class"),
    "tolerance": lambda sec, v, spec: v.tolerance is None or (
        _has(sec, page_text.plain(page_text._dedent(v.tolerance.doc), inline=True), "tolerance doc"),
        _has(sec, f"atol {v.tolerance.atol:g}" if v.tolerance.atol else "tolerance", "tolerance amount")),
}


def _check_attribute(sec: str, a: Attribute) -> None:
    _has(sec, f"**{a.name} - {a.type.upper()}**", "attribute")
    _has(sec, PROSE[0](page_text._dedent(a.doc)), f"doc of {a.name}")
    line = next(l for l in sec.splitlines() if l.startswith(f"* **{a.name} - "))
    if a.required:
        assert "(required)" in line, line
    elif a.has_default:
        assert f"default is `{page_values._attr_value(a.default)}`" in line, line
    else:
        assert "no default" in line, line
    if a.domain is not None:
        _has(sec, a.domain.describe(), f"value domain of {a.name}")


def _check_kernel(sec: str, k: Kernel) -> None:
    _has(sec, "### Kernel", "kernel section")
    if k.template:
        _has(sec, f"`{k.template}`", "kernel template")
        for name, value in k.params:
            _has(sec, f"`{name} = {page_values._attr_value(value)}`", "kernel parameter")
    if k.python:
        _has(sec, page_text._block(k.python), "kernel body")
    if k.same_as is not None:
        _has(sec, f"- {k.same_as}", "kernel same_as")


def _check_example(sec: str, e: Example) -> None:
    _has(sec, f"#### {e.name}", "example")
    _has(sec, page_text.plain(page_text._dedent(e.doc)), "example doc")
    for name, value in e.attributes:
        _has(sec, f"`{name} = {page_values._attr_value(value)}`", "example attribute")
    for name, t in e.inputs:
        _check_tensor(sec, t, f"example {e.name} input {name}")
    for name, t in e.outputs:
        _check_tensor(sec, t, f"example {e.name} output {name}")
    _has(sec, "<summary>Run it (", "runnable snippet")


def test_every_version_field_has_a_check():
    assert set(OBJECTS["Version"]) == set(VERSION_CHECKS), (
        "a spec field without a docs-page check: add it to VERSION_CHECKS (and to the page)")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_spec_field_is_on_the_page(page, ctx):
    spec = _load(PAGES[page])
    text = dp.render_page(ctx, spec)
    assert text.startswith(f"<!-- @generated by opkit from {PAGES[page]} -- do not edit; run `opkit gen` -->\n")
    _has(text, f"# {spec.name}", "title")
    _has(text, f"`{spec.domain}`", "domain")
    for key, value in spec.source:
        _has(text, f"{key} {value}", "source")
    _has(text, page_text._dedent(spec.doc), "op doc")
    for v in spec.versions:
        sec = _section(text, spec, v.since)
        for key, check in VERSION_CHECKS.items():
            check(sec, v, spec)


def test_labels(ctx):
    onnx = dp.render_page(ctx, _load(PAGES["ai.onnx/Trilu"]))
    assert "\n(l-onnx-doc-Trilu)=\n\n# Trilu\n" in onnx
    assert "\n(l-onnx-op-trilu-14)=\n\n## Trilu - 14\n" in onnx
    ms = dp.render_page(ctx, _load(PAGES["com.microsoft/Trilu"]))
    assert "\n(l-onnx-doc-com.microsoft-Trilu)=\n\n# Trilu\n" in ms
    assert "\n(l-onnx-op-com.microsoft-trilu-1)=\n\n## Trilu - 1\n" in ms


def test_sections_in_onnx_order(ctx):
    sec = _section(dp.render_page(ctx, _load(PAGES["ai.onnx/Trilu"])), _load(PAGES["ai.onnx/Trilu"]), 14)
    order = ["### Version", "### Summary", "### Attributes", "### Inputs", "### Outputs", "### Type Constraints",
             "### Examples"]
    positions = [sec.index(h) for h in order]
    assert positions == sorted(positions)


def test_attribute_defaults_always_printed(ctx):
    text = dp.render_page(ctx, _load(PAGES["com.microsoft/Trilu"]))
    assert "* **upper - INT** (default is `1`):" in text


# ------------------------------------------------------------------------------------------------
# order, links and diffs between versions


def _two_versions() -> OpSpec:
    t = TypeConstraint("T", ("tensor(float)", "tensor(int64)"), "Numeric.")
    x = FormalParameter("X", "T", "Input.", differentiable=True, rank=RankRule(1, None))
    y = FormalParameter("Y", "T", "Output.", differentiable=True)
    v1 = OpVersion(1, doc="Scale X.", inputs=(x,), outputs=(y,), type_constraints=(t,),
                   attributes=(Attribute("alpha", "float", "Factor.", default=1.0),),
                   semantics="Y = alpha * X", changes="First version.")
    v2 = dataclasses.replace(
        v1, since=3, doc="Scale and shift X.",
        attributes=v1.attributes + (Attribute("beta", "float", "Shift.", default=0.0,
                                              domain=ValueDomain(min=-1.0, max=1.0)),),
        semantics="Y = alpha * X + beta", changes="Added the beta attribute.",
        rules=(Rule("C1", "X.ndim >= 1", "X is not a scalar."),),
        properties=(Property("zero_shift", "equal(op(X, beta=0.0), op(X))", "numeric", "beta 0 is v1."),),
        kernel=Kernel(python="return alpha * X + beta"),
        tolerances=(Tolerance("float", 1e-6, 0.0),),
        accuracy="approximate", tolerance=Approximation(atol=1e-3, doc="The text allows a cubic approximation."),
        function=(FunctionBody(3, "<domain: \"test\", opset_import: [\"\" : 18]>\nScaleShift (X) => (Y) {\n  Y = Identity(X)\n}"),),
        examples=(Example("shift", "Shift by one.", (("beta", 1.0),),
                          (("X", TensorValue("float", (2,), (1.0, 2.0))),),
                          (("Y", TensorValue("float", (2,), (2.0, 3.0))),)),),
    )
    v3 = dataclasses.replace(v2, since=7, changes="Kernel unchanged.", kernel=Kernel(same_as=3), examples=())
    return OpSpec("ScaleShift", "test.domain", (v1, v2, v3), source=(("hand-written", "unit test"),),
                  doc="A test op.")


def test_newest_version_first_and_linked(ctx):
    spec = _two_versions()
    text = _rendered(ctx, spec)
    heads = [int(m.group(1)) for m in re.finditer(r"^## ScaleShift - (\d+)$", text, re.M)]
    assert heads == [7, 3, 1]
    assert "(l-onnx-doc-test.domain-ScaleShift)=" in text
    for v in spec.versions:
        sec = _section(text, spec, v.since)
        others = [o.since for o in spec.versions if o.since != v.since]
        for o in others:  # "other versions" links from every version to every other
            assert f"<{page_links.version_label(spec, o)}>`" in sec
    assert "It is superseded by {ref}`ScaleShift - 3 <l-onnx-op-test.domain-scaleshift-3>`" in _section(text, spec, 1)
    assert "Same kernel as {ref}`ScaleShift - 3" in _section(text, spec, 7)


def test_the_op_page_shows_the_newest_version_and_links_the_older_pages(ctx):
    spec = _two_versions()
    pages = dp.render_pages(ctx, spec)
    main = pages[page_links.page_path("test.domain", "ScaleShift")]
    assert re.findall(r"^## ScaleShift - (\d+)$", main, re.M) == ["7"]  # the newest in full, nothing else
    assert "```{toctree}\n:hidden:\n\nScaleShift-3\nScaleShift-1\n```" in main
    older = pages[page_links.page_path("test.domain", "ScaleShift-1")]
    assert older.startswith("<!-- @generated by opkit from")
    assert "# ScaleShift (version 1)" in older and "An older version of {doc}`ScaleShift <ScaleShift>`" in older
    assert re.findall(r"^## ScaleShift - (\d+)$", older, re.M) == ["1"]
    assert set(pages) == {page_links.page_path("test.domain", n) for n in ("ScaleShift", "ScaleShift-3", "ScaleShift-1")}


def test_consecutive_diffs_old_to_new(ctx):
    spec = _two_versions()
    text = _rendered(ctx, spec)
    v3 = _section(text, spec, 3)
    assert "Differences from {ref}`ScaleShift - 1 <l-onnx-op-test.domain-scaleshift-1>` to ScaleShift - 3 (old -> new)" in v3
    assert "Added the beta attribute." in v3
    diff = v3[v3.index("(old -> new)"):]
    assert "beta" in diff
    assert "removed `beta`" not in diff  # the direction is old -> new: beta was added
    # the version with no predecessor has a change note but no diff
    v1 = _section(text, spec, 1)
    assert "First version." in v1 and "Differences from" not in v1
    # diffs only between neighbours: 7 is compared with 3, never with 1
    v7 = _section(text, spec, 7)
    assert "Differences from {ref}`ScaleShift - 3" in v7 and "ScaleShift - 1 <l-onnx-op-test.domain-scaleshift-1>` to" not in v7


def test_fallback_diff_direction():
    spec = _two_versions()
    old, new = spec.versions[0], spec.versions[1]
    text = version_diff._fallback_diff(spec, old, new)
    assert "--- ScaleShift-1" in text and "+++ ScaleShift-3" in text
    assert re.search(r"^\+\s+beta:", text, re.M), text


def test_synthetic_spec_every_field(ctx):
    spec = _two_versions()
    text = _rendered(ctx, spec)
    for v in spec.versions:
        sec = _section(text, spec, v.since)
        for check in VERSION_CHECKS.values():
            check(sec, v, spec)


def test_deterministic(ctx):
    spec = _load(PAGES["ai.onnx/Trilu"])
    assert dp.render_page(ctx, spec) == dp.render_page(ctx, spec)
    small = GenContext(tuple(s for s in ctx.specs if s.name in ("Trilu", "DiagonalMatrix1", "Pad")), ROOT)
    assert dp.emit(small) == dp.emit(small)


def test_headings_never_skip_a_level(ctx):
    """MyST's heading-level check is off for the (byte-for-byte ONNX) changelogs; op pages keep
    a clean outline: # op, ## version, ### section, #### example or diff part."""
    for spec in ctx.specs:
        level = 0
        fence = ""
        for line in dp.render_page(ctx, spec).splitlines():
            stripped = line.strip()
            if fence:
                if stripped.startswith(fence) and not stripped.strip("`"):
                    fence = ""
                continue
            if stripped.startswith("```"):
                fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
                continue
            m = re.match(r"^(#{1,6}) ", line)
            if m:
                new = len(m.group(1))
                assert new <= level + 1, f"{spec.domain}/{spec.name}: {line!r} after level {level}"
                level = new


def test_imported_relative_links_point_upstream():
    text = "see [the doc](Broadcasting.md) and [IR](IR.md#attributes), [x](https://a.b/c.md), [y](#z)"
    out = page_links.absolute_links(text, (("onnx", "1.23.2"),))
    assert "(https://github.com/onnx/onnx/blob/main/docs/Broadcasting.md)" in out
    assert "(https://github.com/onnx/onnx/blob/main/docs/IR.md#attributes)" in out
    assert "(https://a.b/c.md)" in out and "(#z)" in out
    assert page_links.absolute_links(text, (("hand-written", "x"),)) == text


def test_plain_prose_is_escaped_outside_code():
    assert page_text.plain("2**31 - 1 and `a*b`") == "2\\*\\*31 - 1 and `a*b`"
    assert page_text.plain("x < y, [a, b)") == "x \\< y, \\[a, b)"


def test_hand_written_docs_are_text(ctx):
    text = dp.render_page(ctx, _load(PAGES["directml/DiagonalMatrix1"]))
    assert "(DirectML: \\_Maybenull\\_)" in text


def test_format_tensor():
    assert page_values.format_tensor(((4, 7), (10, 2))) == "[[ 4,  7],\n [10,  2]]"
    assert page_values.format_tensor((((1,), (2,)), ((3,), (4,)))) == "[[[1],\n  [2]],\n\n [[3],\n  [4]]]"
    assert page_values.format_tensor(()) == "[]"
    assert page_values.format_tensor(float("nan")) == "nan"
    assert page_values.format_tensor((True, False)) == "[ True, False]"


# ------------------------------------------------------------------------------------------------
# conformance reports


def _case(backend, types, outcome, message="", repro=None, op="Trilu", version=14, suite="differential"):
    return {"backend": backend, "suite": suite, "op": op, "domain": "ai.onnx", "version": version,
            "types": {"T": f"tensor({types})"}, "example": "differential", "outcome": outcome,
            "message": message, "repro": repro}


BUNDLE = "docs/findings/rt-a/ai.onnx/Trilu-14/int64-differential-mismatch"


def _report():
    return {"format": "opkit-conformance-report/1",
            "target": {"backends": [{"name": "rt-a", "version": "1.0"}]},
            "cases": [
                _case("rt-a", "float", "pass"), _case("rt-a", "double", "pass"),
                _case("rt-a", "float", "pass", suite="examples"),
                _case("rt-a", "string", "unsupported", "NOT_IMPLEMENTED: string"),
                _case("rt-a", "int64", "mismatch", "Y: 1/6 elements differ", repro=BUNDLE),
                _case("rt-a", "int32", "mismatch", "Y: 2/6 elements differ"),
                _case("rt-a", "int8", "error", "boom <script>alert(1)</script> | {download}`x </etc/passwd>`"),
                _case("rt-a", "uint8", "untested", "could not draw valid inputs"),
                dict(_case("rt-a", "uint16", "xfail", "NOT_IMPLEMENTED"), expected={"reason": "no uint16 kernel"}),
                _case("rt-a", "float", "pass", op="Abs", version=13),
            ]}


def _root_with_report(tmp_path, report):
    import json

    folder = tmp_path / "conformance" / "reports"
    folder.mkdir(parents=True)
    (folder / "rt-a.json").write_text(json.dumps(report))
    bundle = tmp_path / BUNDLE
    bundle.mkdir(parents=True)
    (bundle / "repro.py").write_text("# repro\n")
    return str(tmp_path)


def _conformance_section(text: str, since: int = 14) -> str:
    part = text.split(f"## Trilu - {since}", 1)[1]
    return part[part.index("### Conformance"):]


def test_conformance_section(all_specs, tmp_path):
    """Per version: a row per runtime with types grouped by outcome and case counts, the root
    causes of its failures with the repro bundle's zip, links to the scoreboard and findings."""
    spec = _load(PAGES["ai.onnx/Trilu"])
    root = _root_with_report(tmp_path, _report())
    ctx = GenContext(all_specs, root)
    reports = dp.load_reports(root)  # the scoreboard's loader: conformance/reports/*.json
    assert [r["_path"] for r in reports] == ["conformance/reports/rt-a.json"]
    text = dp.render_page(ctx, spec, reports)
    assert "- **conformance**: how third-party runtimes do on it, on the " \
           "{doc}`scoreboard <../../scoreboard/op-ai.onnx-Trilu>`" in text
    sec = _conformance_section(text)
    assert "{doc}`scoreboard page <../../scoreboard/op-ai.onnx-Trilu>`" in sec
    # each binding under its worst outcome, in the words of opkit test and the scoreboard
    # a report that recorded neither its code nor its date is flagged, and the list under the table says so
    assert ("| rt-a 1.0 **older report** | `float`, `double` (3 cases) | error: `int8` (1 case); mismatch: `int32`, `int64` (2 cases) "
            "| `uint16` (1 case): no uint16 kernel | `string` (1 case) | `uint8` (1 case) "
            "| {doc}`findings <../../findings/rt-a>` |") in sec
    assert "- rt-a, mismatch: Y: values differ (2 cases), {opkit-bundle}`repro <" + BUNDLE + ">`" in sec
    assert "- rt-a 1.0 (`conformance/reports/rt-a.json`): report made by opkit" in sec
    assert "**made by an opkit that did not record its code or date**" in sec
    assert "- rt-a, error: boom" in sec and "(1 case)" in sec
    # report text is data: no HTML, no role that reads files, no table-breaking pipe
    assert "<script>" not in sec and "{download}`" not in sec
    # deterministic: the same reports give the same page
    assert dp.render_page(ctx, spec, dp.load_reports(root)) == text


def test_the_committed_pages_cells_say_what_their_reports_say():
    """Trilu's page, per runtime: the types in each column are the bindings whose worst outcome
    (the scoreboard's order) in the committed reports is that column's outcome."""
    from opkit.emit.op_conformance import SHOWN_FAILING, OpConformance
    from opkit.results.outcomes import SEVERITY
    from opkit.results.record import report_records

    reports = dp.load_reports(ROOT)
    if not reports:
        pytest.skip("no committed reports")
    row_of = {r.runtime.split(" ")[0]: r for r in OpConformance(ROOT, reports).version(("ai.onnx",), "Trilu", 14).rows}
    worst: dict = {}
    for report in reports:
        for case in report_records(report):
            if (case.op, case.domain, case.version) == ("Trilu", "ai.onnx", 14):
                worst.setdefault(case.backend, {}).setdefault(case.types["T"][7:-1], set()).add(case.outcome)
    assert set(row_of) == set(worst) - {"spec", "opkit"}  # (backend-independent records: lowerings)
    for runtime, row in row_of.items():
        types = worst[runtime]
        for t, outcomes in types.items():
            # what the runtime answered decides; nothing answered: the converter's if it failed, else opkit's
            tested = outcomes - {"untested", "unconverted"}
            outcome = next(o for o in SEVERITY if o in (tested or ({"unconverted"} & outcomes) or {"untested"}))
            column = {"pass": row.passed, "xfail": row.expected, "unsupported": row.unsupported,
                      "unconverted": row.unsupported, "untested": row.untested}.get(outcome, row.failing)
            if outcome == "unconverted":
                column = column.split("unconverted (the converter's): ", 1)[1]
            cell = column.split(f"{outcome}: ", 1)[1].split(";")[0] if outcome in SHOWN_FAILING else column
            assert f"`{t}`" in cell, (runtime, t, outcome, row)


def test_no_conformance_section_without_a_report(all_specs, tmp_path):
    spec = _load(PAGES["ai.onnx/Trilu"])
    plain_page = dp.render_page(GenContext(all_specs, ROOT), spec, [])
    assert "### Conformance" not in plain_page and "scoreboard" not in plain_page
    # a report of another op: Trilu's page neither gets a section nor links a scoreboard page
    report = _report()
    report["cases"] = [c for c in report["cases"] if c["op"] == "Abs"]
    root = _root_with_report(tmp_path, report)
    text = dp.render_page(GenContext(all_specs, root), spec, dp.load_reports(root))
    assert "### Conformance" not in text and "scoreboard" not in text


def test_every_op_page_with_a_scoreboard_page_links_it(ctx):
    from opkit.emit import scoreboard

    reports = scoreboard.load(ROOT)
    if not reports:
        pytest.skip("no committed reports")
    boards = {p for p in scoreboard.render(ROOT, reports) if "/op-" in p}
    pages = dp.emit(ctx)
    linked = set()
    for path, text in pages.items():
        found = re.search(r"\{doc\}`scoreboard <\.\./\.\./scoreboard/(op-[^>]+)>`", text)
        if found:
            linked.add(f"generated/docs/scoreboard/{found.group(1)}.md")
    assert boards and linked == boards
    # one loader for both: the op pages' reports are the scoreboard's
    assert dp.REPORTS_GLOB == f"{scoreboard.REPORTS}/*.json"


# ------------------------------------------------------------------------------------------------
# runnable snippets, spec field reference, index


@pytest.mark.parametrize("page", sorted(PAGES))
def test_snippets_run(page, ctx):
    pytest.importorskip("opkit.backends.reference")
    spec = _load(PAGES[page])
    text = dp.render_page(ctx, spec)
    snippets = re.findall(r"<summary>Run it \([^)]*\)</summary>\n\n```(?:python|text)\n(.*?)\n```", text, re.S)
    assert len(snippets) == sum(len(v.examples) for v in spec.versions)
    for code in snippets:
        exec(compile(code, f"<{page} snippet>", "exec"), {})


def _float_example(spec: OpSpec):
    for v in spec.versions:
        for e in v.examples:
            if e.outputs and e.outputs[0][1].dtype == "float":
                return v, e
    pytest.skip("no example with a float output")


def test_snippet_compares_floats_with_a_tolerance():
    pytest.importorskip("opkit.backends.reference")
    spec = _load(PAGES["ai.onnx/Trilu"])
    v, e = _float_example(spec)
    code = page_examples.snippet(spec, v, e)
    assert "np.testing.assert_allclose(results[0], expected_output, rtol=1e-05, atol=1e-05)" in code
    exec(compile(code, "<float snippet>", "exec"), {})
    # off by a rounding error (1.2e-7 relative in float32): exact equality would fail, the tolerance passes
    name, t = e.outputs[0]
    nudged = dataclasses.replace(t, value=_scale(t.value, 1 + 2e-7))
    code = page_examples.snippet(spec, v, dataclasses.replace(e, outputs=((name, nudged),)))
    exec(compile(code, "<nudged snippet>", "exec"), {})
    with pytest.raises(AssertionError):
        exec(compile(code.replace("assert_allclose", "assert_array_equal").split(", rtol=")[0] + ")",
                     "<exact snippet>", "exec"), {})


def _scale(value, factor):
    if isinstance(value, (list, tuple)):
        return [_scale(x, factor) for x in value]
    return value * factor if isinstance(value, float) and value not in (0.0,) else value


def test_snippet_tolerance_per_type():
    v = OpVersion(since=1, tolerances=(Tolerance("float16", rtol=0.01, atol=0.002),))
    assert page_examples.snippet_tolerance(OpVersion(since=1), "float") == (1e-5, 1e-5)
    assert page_examples.snippet_tolerance(OpVersion(since=1), "float16") == (1e-3, 1e-3)
    assert page_examples.snippet_tolerance(OpVersion(since=1), "double") == (1e-12, 1e-12)
    assert page_examples.snippet_tolerance(v, "float16") == (0.01, 0.002)  # the spec's own tolerance wins
    for exact in ("int64", "uint8", "bool", "string"):
        assert page_examples.snippet_tolerance(v, exact) is None
    spec = _load(PAGES["ai.onnx/Trilu"])
    for v in spec.versions:
        for e in v.examples:
            if e.outputs[0][1].dtype == "int64":
                assert "np.testing.assert_array_equal(results[0]" in page_examples.snippet(spec, v, e)


def test_spec_fields_page():
    text = dp.emit(GenContext((), ROOT))["generated/docs/spec-fields.md"]
    assert text.startswith("<!-- @generated by opkit from opkit/spec/schema.json")
    objs = schema_objects(json_schema())
    assert [o["name"] for o in objs][0] == "Spec"
    for obj in objs:
        assert f"\n## {obj['name']}\n" in text
        section = text.split(f"\n## {obj['name']}\n", 1)[1].split("\n## ", 1)[0]
        for f in obj["fields"]:
            row = next(l for l in section.splitlines() if l.startswith(f"| `{f['name']}`"))
            assert f["doc"][:30] in row
    for name, fields in OBJECTS.items():
        for key, field in fields.items():
            assert f"| `{key}`" in text
    # kinds, defaults, required and extension flags
    assert re.search(r"^\| `since`<br>\*required\* \| integer[^|]* \| - \|", text, re.M)
    assert "| `semantics`<br>*extension* | string | - |" in text
    assert '| `support_level` | one of `common`, `experimental` | `"common"` |' in text


def test_index_lists_every_page(ctx):
    out = dp.emit(ctx)
    index = out["generated/docs/operators/index.md"]
    for spec in ctx.specs:
        assert f"[{spec.name}]({spec.domain}/{spec.name}.md)" in index
        assert f"generated/docs/operators/{spec.domain}/{spec.name}.md" in out


# ------------------------------------------------------------------------------------------------
# opkit docs


def test_docs_command_without_sphinx(monkeypatch, capsys):
    from opkit.cli import main
    from opkit.commands import docs

    monkeypatch.setattr(docs, "missing_packages", lambda: ["sphinx", "furo"])
    assert main(["docs", "--no-gen"]) == 2
    err = capsys.readouterr().err
    assert "sphinx, furo" in err and "opkit-onnx[docs]" in err


def test_docs_command_is_registered():
    from opkit.cli import build_parser

    args = build_parser().parse_args(["docs", "--output", "site", "--jobs", "2"])
    assert args.output == "site" and args.jobs == 2 and callable(args.func)


def test_cli_reference_lists_every_command_and_option():
    import argparse

    from opkit.cli import build_parser
    from opkit.emit.cli_reference import render_cli_reference

    parser = build_parser()
    text = render_cli_reference(parser)
    assert "specs/\\<domain>/\\<Op>.yaml" in text  # help text is escaped, not read as HTML
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        assert f"\n## opkit {name}\n" in text and f"(l-opkit-cmd-{name})=" in text
        section = text.split(f"\n## opkit {name}\n", 1)[1].split("\n## ", 1)[0]
        for action in p._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            flag = action.option_strings[0] if action.option_strings else (
                action.metavar or ("{" + ",".join(action.choices) + "}" if action.choices else action.dest))
            assert str(flag) in section, (name, flag)
    assert render_cli_reference(parser) == text
