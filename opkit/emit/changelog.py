"""ONNX's ``Changelog.md`` and ``Changelog-ml.md``, rendered from the specs.

The output is byte-identical to what ``onnx/defs/gen_doc.py`` (onnx 1.23.2) writes, quirks included:
the stray ``</a>`` after each heading, ``<dl>`` lists, floats shown as float32 rounded to 5 digits
(or ``(%e)`` when that is longer than 10 characters), ``&#8734;`` for unbounded arity, no
"Other versions" line (gen_doc hands each changelog entry a one-element version list), and
deprecated entries that stop after their "Version" paragraph. ``tests/test_changelog.py`` runs
gen_doc and diffs.

Because the files must equal ONNX's byte for byte, they cannot carry opkit's ``@generated`` header
(gen_doc's first line is the SPDX comment). Their provenance goes in the sidecar
``generated/docs/Changelog.source.txt`` instead.

Only the domains ONNX itself defines are rendered (``ai.onnx``, ``ai.onnx.ml``, ``ai.onnx.preview*``);
``com.microsoft``, ``directml`` and other domains have no ONNX changelog.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.model import Attribute, FormalParameter, OpSpec, OpVersion
from ..core.onnx_types import INFINITE_ARITY
from . import GenContext, header
from ..core.templating import environment

NAME = "changelog"
OWNED_DIRS: tuple[str, ...] = ()  # generated/docs is shared with the other docs emitters

CHANGELOG = "generated/docs/Changelog.md"
CHANGELOG_ML = "generated/docs/Changelog-ml.md"
SIDECAR = "generated/docs/Changelog.source.txt"
ML_DOMAIN = "ai.onnx.ml"


def docs_template(name: str) -> Any:
    """A Jinja2 template from opkit/templates/docs."""
    return environment("docs").get_template(name)


# ---------------------------------------------------------------------------------------------
# fragments, as gen_doc formats them


def is_onnx_domain(domain: str) -> bool:
    """The domains onnx.defs defines (and so the ones ONNX's changelog covers)."""
    return domain == "ai.onnx" or domain.startswith("ai.onnx.")


def display_domain(proto: str) -> str:
    return f"the '{proto}' operator set" if proto else "the default ONNX operator set"


def display_domain_short(proto: str) -> str:
    return proto or "ai.onnx (default)"


def name_with_domain(proto: str, name: str) -> str:
    return f"{proto}.{name}" if proto else name


def display_number(n: int) -> str:
    return "&#8734;" if n == INFINITE_ARITY else str(n)


def arity(low: int, high: int) -> str:
    """' (1 - &#8734;)' when the count of inputs/outputs varies, else ''."""
    return f" ({display_number(low)} - {display_number(high)})" if low != high else ""


def attr_type(atype: str) -> str:
    return f"list of {atype}" if atype.endswith("s") else atype


def format_float(value: float) -> str:
    """A float attribute default as gen_doc prints it: the float32 value, rounded to 5 decimals."""
    value = float(np.float32(value))  # specs hold the shortest float32 literal; ONNX has the float32
    text = str(np.round(value, 5))
    return f"({value:e})" if len(text) > 10 else text


def format_default(attr: Attribute) -> str:
    def one(value: Any) -> str:
        if isinstance(value, float) or (attr.type in ("float", "floats") and isinstance(value, int)
                                         and not isinstance(value, bool)):
            return format_float(value)
        return str(value)

    value = attr.default
    if isinstance(value, (list, tuple)):
        return str([one(v) for v in value])
    return one(value)


def attr_option(attr: Attribute) -> str:
    if attr.required:
        return " (required)"
    if attr.has_default:
        return f" (default is {format_default(attr)})"
    return ""


def param_tags(p: FormalParameter) -> str:
    tags = []
    if p.option == "optional":
        tags = ["optional"]
    elif p.option == "variadic":
        tags = ["variadic"] if p.homogeneous else ["variadic", "heterogeneous"]
    if p.differentiable is True:
        tags.append("differentiable")
    elif p.differentiable is False:
        tags.append("non-differentiable")
    return f" ({', '.join(tags)})" if tags else ""


def doc_lines(doc: str) -> list[str]:
    return [("  " + line).rstrip() for line in doc.lstrip().splitlines()] if doc else []


# ---------------------------------------------------------------------------------------------
# view model


@dataclass(frozen=True)
class _Item:
    name: str
    tags: str
    type: str
    doc: str


@dataclass(frozen=True)
class _Section:
    title: str
    arity: str
    items: tuple[_Item, ...]


def _params(params: tuple[FormalParameter, ...]) -> tuple[_Item, ...]:
    return tuple(_Item(p.name, param_tags(p), p.type, p.doc) for p in params)


def entry(spec: OpSpec, version: OpVersion) -> dict[str, Any]:
    """One changelog entry (gen_doc's display_schema with versions=[schema])."""
    proto = spec.proto_domain
    sections = (
        _Section("Inputs", arity(version.min_input, version.max_input), _params(version.inputs)),
        _Section("Outputs", arity(version.min_output, version.max_output), _params(version.outputs)),
        _Section("Type Constraints", "", tuple(_Item(tc.name, "", ", ".join(tc.types), tc.doc)
                                               for tc in version.type_constraints)),
    )
    return {
        "anchor": f"{name_with_domain(proto, spec.name)}-{version.since}",
        "since": version.since,
        "deprecated": version.deprecated,
        "experimental": version.support_level == "experimental",
        "doc_lines": doc_lines(version.doc),
        "attributes": [
            {"name": a.name, "type": attr_type(a.type), "option": attr_option(a), "doc": a.doc}
            for a in sorted(version.attributes, key=lambda a: a.name)
        ],
        "sections": sections,
    }


def changelog_domains(specs: tuple[OpSpec, ...] | list[OpSpec], ml: bool) -> list[dict[str, Any]]:
    """domain -> version -> entries, in gen_doc's order (domains and names by code point)."""
    index: dict[str, dict[int, list[tuple[str, OpSpec, OpVersion]]]] = defaultdict(lambda: defaultdict(list))
    for spec in specs:
        if not is_onnx_domain(spec.domain) or (spec.domain == ML_DOMAIN) != ml:
            continue
        for version in spec.versions:
            index[spec.proto_domain][version.since].append((spec.name, spec, version))
    domains = []
    for proto, versionmap in sorted(index.items()):
        groups = [
            {"version": since, "entries": [entry(spec, v) for _, spec, v in sorted(items, key=lambda t: t[0])]}
            for since, items in sorted(versionmap.items())
        ]
        domains.append({"short": display_domain_short(proto), "long": display_domain(proto), "groups": groups})
    return domains


def render_changelog(specs: tuple[OpSpec, ...] | list[OpSpec], ml: bool = False) -> str:
    return docs_template("changelog.md.j2").render(domains=changelog_domains(specs, ml))


def _sidecar(specs: list[OpSpec]) -> str:
    sources = sorted({f"{k} {v}" for s in specs for k, v in s.source})
    domains = sorted({s.domain for s in specs})
    return docs_template("changelog_source.txt.j2").render(
        header=header(f"{len(specs)} spec files under specs/ ({', '.join(domains)})"),
        sources=sources, files=(CHANGELOG, CHANGELOG_ML),
    )


def emit(ctx: GenContext) -> dict[str, str]:
    onnx_specs = [s for s in ctx.specs if is_onnx_domain(s.domain)]
    return {
        CHANGELOG: render_changelog(onnx_specs, ml=False),
        CHANGELOG_ML: render_changelog(onnx_specs, ml=True),
        SIDECAR: _sidecar(onnx_specs),
    }

