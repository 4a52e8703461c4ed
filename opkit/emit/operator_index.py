"""``generated/docs/Operators.md``: the operator index of every domain in specs/ (MyST markdown).

Like the table of contents of ONNX's Operators.md: one table per domain, ops linking to their pages
(``operators/<domain>/<Op>.md``, written by the docs pages emitter), the since-versions newest first,
ops that are ONNX functions in a table of their own with their function versions, and marks for
experimental and deprecated ops. Unlike ONNX, an op name shared by two domains is listed in both.
"""

from __future__ import annotations

from typing import Any

from ..spec.model import OpSpec
from ..core.onnx_types import DEFAULT_DOMAIN
from . import GenContext, header
from .changelog import docs_template

NAME = "operator_index"
OWNED_DIRS: tuple[str, ...] = ()  # generated/docs is shared with the other docs emitters

INDEX = "generated/docs/Operators.md"
SUPPORT_ORDER = {"common": 0, "experimental": 1}


def op_page(spec: OpSpec) -> str:
    """The op page's path relative to generated/docs (where Operators.md lives)."""
    return f"operators/{spec.domain}/{spec.name}.md"


def domain_order(domain: str) -> tuple[int, str]:
    """ai.onnx first, then the other domains by name."""
    return (0 if domain == DEFAULT_DOMAIN else 1, domain)


def domain_label(domain: str) -> str:
    return "opkit-operators-" + domain.replace(".", "-")


def function_versions(spec: OpSpec) -> tuple[int, ...]:
    """Opset versions of the newest version's function bodies (plain and context dependent)."""
    latest = spec.latest
    return tuple(sorted({b.opset for b in latest.function} | set(latest.context_dependent_function)))


def is_function(spec: OpSpec) -> bool:
    return bool(function_versions(spec))


def _row(spec: OpSpec) -> dict[str, Any]:
    latest = spec.latest
    return {
        "name": spec.name,
        "link": op_page(spec),
        "mark": "<sub>experimental</sub> " if latest.support_level == "experimental" else "",
        "deprecated": " (deprecated)" if latest.deprecated else "",
        "since": ", ".join(str(v.since) for v in reversed(spec.versions)),
        "function_versions": ", ".join(str(v) for v in function_versions(spec)),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _domain(domain: str, specs: list[OpSpec]) -> dict[str, Any]:
    specs = sorted(specs, key=lambda s: (SUPPORT_ORDER.get(s.latest.support_level, 2), s.name))
    ops = [_row(s) for s in specs if not is_function(s)]
    functions = [_row(s) for s in specs if is_function(s)]
    versions = sum(len(s.versions) for s in specs)
    newest = max(v.since for s in specs for v in s.versions)
    title = f"{domain} (default domain)" if domain == DEFAULT_DOMAIN else domain
    sources = sorted({f"{k} {v}" for s in specs for k, v in s.source})
    summary = (f"{_plural(len(specs), 'operator')}, {_plural(versions, 'version')}, "
               f"newest opset version {newest}." + (f" Specs from: {', '.join(sources)}." if sources else ""))
    return {"name": domain, "title": title, "label": domain_label(domain), "ops": ops,
            "functions": functions, "versions": versions, "summary": summary}


def render_index(specs: tuple[OpSpec, ...] | list[OpSpec]) -> str:
    by_domain: dict[str, list[OpSpec]] = {}
    for spec in specs:
        by_domain.setdefault(spec.domain, []).append(spec)
    domains = [_domain(d, by_domain[d]) for d in sorted(by_domain, key=domain_order)]
    return docs_template("operator_index.md.j2").render(
        header=header(f"{len(specs)} spec files under specs/", comment="<!--") + " -->",
        domains=domains,
        total_ops=len(specs),
        total_versions=sum(len(s.versions) for s in specs),
    )


def emit(ctx: GenContext) -> dict[str, str]:
    return {INDEX: render_index(ctx.specs)}
