"""One version of an op as its operator page's template reads it: the header, attributes, inputs and
outputs, type constraints, rules, semantics, properties, lowerings, kernel, accuracy, examples and
conformance (the template is opkit/templates/docs/page.md.j2)."""

from __future__ import annotations

from typing import Any

from ..cases.edges import EDGE_SHARE
from ..cases.edges import applicable as applicable_edges
from ..core.markdown import fence
from ..core.onnx_types import INFINITE_ARITY
from ..spec.model import Attribute, FormalParameter, OpSpec, OpVersion
from ..spec.rules import parse_rules
from . import GenContext
from .page_examples import _examples, runner
from .page_links import _UPSTREAM_DOCS, _upstream_link, upstream_url, version_label
from .page_text import _block, _code, _dedent, _indent, _span, _text, _wrapped_fence, doc_markdown, plain
from .page_values import _attr_value
from .version_diff import render_version_diff


def _default_text(a: Attribute) -> str:
    if a.required:
        return "required"
    if a.has_default:
        return f"default is {_code(_attr_value(a.default))}"
    return "optional, no default"


def _attribute(a: Attribute, prose=None) -> dict[str, Any]:
    notes = []
    if a.domain is not None:
        notes.append("Allowed values: " + _text(a.domain.describe()) + ".")
    return {
        "name": _text(a.name),
        "type": a.type.upper(),
        "default": _default_text(a),
        "doc": _indent((prose or doc_markdown)(_dedent(a.doc))),
        "notes": notes,
    }


def _differentiability(p: FormalParameter) -> str:
    if p.differentiable is None:
        return "undefined differentiability"
    return "differentiable" if p.differentiable else "non-differentiable"


def _param(p: FormalParameter, prose=None) -> dict[str, Any]:
    flags = []
    if p.option == "optional":
        flags.append("optional")
    elif p.option == "variadic":
        flags.append(f"variadic, at least {p.min_arity}")
    else:
        flags.append("single")
    flags.append("homogeneous" if p.homogeneous else "heterogeneous")
    flags.append(_differentiability(p))
    if p.rank is not None:
        flags.append(p.rank.describe())
    return {"name": _text(p.name), "type": _text(p.type), "flags": ", ".join(flags),
            "doc": _indent((prose or doc_markdown)(_dedent(p.doc)))}


def _count(low: int, high: int, what: str) -> str:
    """ONNX's arity sentence: 'Between 1 and 2 inputs.'"""
    if high == INFINITE_ARITY:
        return f"Between {low} and {INFINITE_ARITY} {what}."
    if low == high:
        return ""
    return f"Between {low} and {high} {what}."


def _conformance(table, spec: OpSpec, since: int):
    """The version's Conformance section (None: no report has a case of it)."""
    if table is None:
        return None
    return table.version((spec.domain, spec.proto_domain or "ai.onnx"), spec.name, since)


def _version_view(ctx: GenContext, spec: OpSpec, v: OpVersion, previous: OpVersion | None,
                  newer: OpVersion | None, reports: list[dict[str, Any]]) -> dict[str, Any]:
    domain_text = "`main`" if spec.domain == "ai.onnx" else f"`{spec.domain}`"
    prose = _prose(spec)
    upstream = _upstream_link(spec)
    since_text = (f"**since version {v.since}**" if spec.domain == "ai.onnx"
                  else f"**since version {v.since} of domain {spec.domain}**")
    if v.deprecated:
        since_text = since_text.replace("since", "deprecated since", 1)
    others = [s.since for s in reversed(spec.versions) if s.since != v.since]
    return {
        "since": v.since,
        "label": version_label(spec, v.since),
        "title": f"{spec.name} - {v.since}",
        "upstream": upstream,
        "domain_text": domain_text,
        "function": "True" if v.has_function else "False",
        "support_level": f"SupportType.{v.support_level.upper()}",
        "shape_inference": "True" if v.shape_inference else "False",
        "data_propagation": "True" if v.data_propagation else "False",
        "determinism": v.determinism,
        "deprecated": v.deprecated,
        "since_text": since_text,
        "others": [(f"{spec.name} - {s}", version_label(spec, s)) for s in others],
        "previous": (f"{spec.name} - {previous.since}", version_label(spec, previous.since)) if previous else None,
        "newer": (f"{spec.name} - {newer.since}", version_label(spec, newer.since)) if newer else None,
        "changes": plain(_dedent(v.changes)),
        # the diff quotes names and values from the specs in its markdown: made safe like a doc
        "diff": doc_markdown(render_version_diff(spec, previous, v)) if previous is not None else "",
        "doc": doc_markdown(_dedent(v.doc)),
        "semantics": _wrapped_fence(_block(v.semantics), "text") if v.semantics else "",
        "attributes": [_attribute(a, prose) for a in v.attributes],
        "inputs_count": _count(v.min_input, v.max_input, "inputs"),
        "inputs": [_param(p, prose) for p in v.inputs],
        "outputs_count": _count(v.min_output, v.max_output, "outputs"),
        "outputs": [_param(p, prose) for p in v.outputs],
        "arity": _arity_note(v),
        "type_constraints": [
            {"name": _text(t.name), "types": ", ".join(_span(x) for x in sorted(t.types)),
             "doc": _indent(prose(_dedent(t.doc)))}
            for t in v.type_constraints
        ],
        "rules": [{"label": _text(r.label), "holds": _code(r.expression), "doc": plain(_dedent(r.doc), inline=True)}
                  for r in parse_rules(v)],
        "family": v.family,  # a closed vocabulary (spec.types.FAMILIES): safe as text
        # opkit's own text (opkit.cases.edges), chosen by what the version can hold
        "edges": [{"name": e.name, "doc": e.doc} for e in applicable_edges(v, swept=True)],
        "edges_drawn": bool(applicable_edges(v)),  # False: a family version, swept only
        "edge_share": EDGE_SHARE,
        "accuracy": _accuracy_line(spec, v),
        "functions": [{"opset": f.opset, "text": fence(_block(f.text))} for f in v.function],
        "context_dependent": ", ".join(str(o) for o in v.context_dependent_function),
        "properties": [{"name": _text(p.name), "types": _text(p.types or ""), "doc": plain(_dedent(p.doc), inline=True),
                        "holds": _wrapped_fence(_block(p.holds), "python")} for p in v.properties],
        "lowerings": _lowerings(ctx, v),
        "kernel": _kernel(spec, v),
        "tolerances": [{"dtype": _span(t.dtype), "rtol": repr(t.rtol), "atol": repr(t.atol)} for t in v.tolerances],
        "examples": _examples(spec, v),
        "runner": runner(v),
        "conformance": _conformance(reports, spec, v.since),
    }



def _kernel(spec: OpSpec, v: OpVersion) -> dict[str, Any] | None:
    """The version's kernel: its template and parameters, or its Python, or the version it reuses."""
    if v.kernel is None:
        return None
    k = v.kernel
    return {
        "template": _span(k.template) if k.template else "",
        "params": [_span(f"{n} = {_attr_value(p)}") for n, p in k.params],
        "python": fence(_block(k.python), "python") if k.python else "",
        "same_as": k.same_as,
        "same_as_label": version_label(spec, k.same_as) if k.same_as is not None and spec.version(k.same_as) else "",
    }


def _lowerings(ctx: GenContext, v: OpVersion) -> list[dict[str, Any]]:
    """The version's lowerings, each linked to the page of the op version it lowers to."""
    lowerings = []
    for lo in v.lowerings:
        target_label = target_url = ""
        if "::" in lo.to:
            tdomain, rest = lo.to.split("::", 1)
            tname, _, tver = rest.rpartition("-")
            target = ctx.spec(tdomain, tname)
            if target is not None and tver.isdigit():
                target_version = target.version_at(int(tver))
                if target_version is not None:
                    target_label = version_label(target, target_version.since)
            elif target is None:
                # a project op lowering to a built-in op: its page is not in this site, link upstream's
                target_url = upstream_url(tdomain, tname)
        lowerings.append({"name": _text(lo.name), "to": lo.to, "to_code": _span(lo.to), "target_label": target_label,
                          "target_url": target_url,
                          "doc": plain(_dedent(lo.doc), continues=True), "python": fence(_block(lo.python), "python")})
    return lowerings


def _accuracy_line(spec: OpSpec, v: OpVersion) -> str:
    """One line: the accuracy class backends are held to, what it allows and where it comes from."""
    from ..spec.accuracy import accuracy_of

    acc = accuracy_of(spec.domain, spec.name, v)
    origin = {"spec": "stated by the spec", "default": "opkit's default for this op",
              "outputs": "no output holds floats", "unclassified": "unclassified, so the widest class"}[acc.source]
    line = f"Accuracy: {_span(acc.name)}, {acc.summary} ({origin})"
    t = v.tolerance
    if t is not None:
        amounts = [f"{t.ulps:g} ulp" if t.ulps else "", f"rtol {t.rtol:g}" if t.rtol else "",
                   f"atol {t.atol:g}" if t.atol else ""]
        line += f"; tolerance {' + '.join(a for a in amounts if a)}: {plain(_dedent(t.doc), inline=True)}"
    return line if line.endswith(".") else line + "."


def _prose(spec: OpSpec):
    """How to print attribute, parameter and type constraint docs: imported ones (onnx,
    onnxruntime) are markdown as upstream writes them (made safe: :func:`doc_markdown`);
    hand-written ones are text (``_Maybenull_`` is a C annotation, not emphasis)."""
    imported = any(k in _UPSTREAM_DOCS for k, _ in spec.source)
    return doc_markdown if imported else plain


def _arity_note(v: OpVersion) -> str:
    notes = []
    if v.input_range is not None:
        notes.append(f"inputs {_range(v.input_range)}")
    if v.output_range is not None:
        notes.append(f"outputs {_range(v.output_range)}")
    return "; ".join(notes)


def _range(r: tuple[int, int]) -> str:
    high = "unbounded" if r[1] == INFINITE_ARITY else str(r[1])
    return f"{r[0]} to {high}"
