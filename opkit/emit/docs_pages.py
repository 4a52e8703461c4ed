"""Operator pages: one MyST page per op (``generated/docs/operators/<domain>/<Op>.md``).

The page follows the layout of ONNX's operator pages (labels ``(l-onnx-doc-Trilu)=`` and
``(l-onnx-op-trilu-14)=``, sections Version, Summary, Attributes, Inputs, Outputs, Type
Constraints, Examples, newest version first) and adds what that site lacks: differentiability and
homogeneity of every input and output, attribute defaults and value domains, rank rules, links
between the versions of an op, each version's change note and its diff against the previous
version (old -> new), the semantics formula, labelled rules, properties, lowerings, function bodies,
kernels, tolerances, examples as data plus a runnable snippet, and per-backend conformance status
when reports exist.

The emitter also writes ``generated/docs/operators/index.md`` (the toctree of every page, per
domain) and ``generated/docs/spec-fields.md`` (the spec field reference, rendered from the
published JSON Schema).

Everything here is a pure function of the loaded specs, plus the committed conformance reports
the scoreboard reads (``conformance/reports/*.json``, in file-name order; absent reports render
nothing): each version's Conformance section (opkit/emit/op_conformance.py) sums them up and links
the scoreboard's page of the op and the runtimes' findings pages.

This module assembles the pages; their parts are built by ``version_view`` (one version of an op),
``page_examples`` (examples and runnable snippets), ``version_diff``, ``page_values``,
``page_text`` (spec text made safe) and ``page_links`` (labels and links).
"""

from __future__ import annotations

from typing import Any

import os
import re

import jinja2

from ..core.markdown import safe_markdown
from ..core.templating import environment
from ..spec.model import OpSpec
from . import GenContext, header
from .page_links import PAGES_DIR, absolute_links, doc_label, page_path, spec_path
from .page_text import _dedent, doc_markdown
from .version_view import _version_view

NAME = "docs_pages"
OWNED_DIRS = ("generated/docs/operators",)

SPEC_FIELDS_PATH = "generated/docs/spec-fields.md"
REPORTS_GLOB = "conformance/reports/*.json"  # the scoreboard's inputs (opkit test --report), not under generated/


def _env() -> jinja2.Environment:
    """The templates' environment (built once: compiling the page template dominates a page)."""
    return environment("docs")


# ---------------------------------------------------------------------------------------------
# conformance reports


def load_reports(root: str) -> list[dict[str, Any]]:
    """The committed reports, read the way the scoreboard reads them (one loader: a report the
    scoreboard shows is the report the op pages sum up)."""
    from .scoreboard import load

    return load(root)


def project_reports() -> list[dict[str, Any]]:
    """A project's own reports, for the Conformance sections of its op pages: the JSON reports in
    its ``[tool.opkit] reports`` folder (where ``opkit test --report reports/...`` writes) and in
    ``conformance/reports/``, read by the scoreboard's loader (one file once)."""
    from ..core.project import active
    from .scoreboard import load_folder

    try:
        project = active()
    except Exception:  # noqa: BLE001 - no project: no reports
        return []
    found, seen = [], set()
    for folder in (project.reports, os.path.join(project.root, "conformance", "reports")):
        for report in load_folder(project.root, folder):
            if report["_path"] not in seen:
                seen.add(report["_path"])
                found.append(report)
    return found


def _scoreboard_built() -> bool:
    """Whether this ``opkit gen`` writes the scoreboard (opkit's own checkout): a project's site has
    no scoreboard pages for the section to link."""
    from ..core.project import active

    try:
        return active().builtin
    except Exception:  # noqa: BLE001 - no project to speak of: no scoreboard either
        return False


# ---------------------------------------------------------------------------------------------
# the page


def render_page(ctx: GenContext, spec: OpSpec, reports=None, env: jinja2.Environment | None = None) -> str:
    """One op page: its newest version in full, the older ones linked (``render_pages``)."""
    return render_pages(ctx, spec, reports, env)[page_path(spec.domain, spec.name)]


def render_pages(ctx: GenContext, spec: OpSpec, reports=None, env: jinja2.Environment | None = None) -> dict[str, str]:
    """The op's page (its newest version in full, the older versions one click away, as onnx.ai's
    changelog does: a page of thousands of screens helps no reader) and a page per older version.
    ``reports``: loaded conformance reports, or the OpConformance built from them once for all
    pages (building it means folding every report)."""
    from .op_conformance import OpConformance

    env = env or _env()
    if reports and not isinstance(reports, OpConformance):
        reports = OpConformance(ctx.root, list(reports))
    reports = reports or None
    versions = list(spec.versions)
    views = []
    for i, v in enumerate(versions):
        previous = versions[i - 1] if i > 0 else None
        newer = versions[i + 1] if i + 1 < len(versions) else None
        views.append(_version_view(ctx, spec, v, previous, newer, reports))
    views.reverse()  # newest first
    path = spec_path(ctx, spec)
    common = dict(
        header=header(path, "<!--") + " -->",
        doc_label=doc_label(spec),
        name=spec.name,
        domain=spec.domain,
        proto_domain=spec.proto_domain,
        spec_path=path,
        source=", ".join(safe_markdown(f"{k} {v}", inline=True) for k, v in spec.source),
        op_doc=doc_markdown(_dedent(spec.doc)),
        scoreboard=reports.has_page((spec.domain, spec.proto_domain or "ai.onnx"), spec.name) if reports else "",
        all_versions=views,
        older=[(v["since"], version_doc(spec.name, v["since"])) for v in views[1:]],
    )
    template = env.get_template("page.md.j2")

    def page(shown, newest_doc: str = "") -> str:
        return absolute_links(tidy(template.render(**common, versions=shown, newest_doc=newest_doc)), spec.source)

    out = {page_path(spec.domain, spec.name): page(views[:1])}
    for view in views[1:]:
        out[page_path(spec.domain, version_doc(spec.name, view["since"]))] = page([view], spec.name)
    return out


def version_doc(name: str, since: int) -> str:
    """The document name of an older version's page, beside the op's page (``Resize-11``): a file
    name, and a line of the op page's toctree, so only letters, digits, ``_``, ``.`` and ``-`` of
    the op's name (a spec's text is data, even in a file name)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") + f"-{since}"


def tidy(text: str) -> str:
    """Collapse runs of blank lines and strip trailing spaces outside fenced code blocks."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            out.append(line)
            if stripped.startswith(fence) and stripped.strip("`") == "":
                fence = ""
            continue
        if stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            out.append(line.rstrip())
            continue
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def render_index(specs: list[OpSpec], env: jinja2.Environment | None = None) -> str:
    env = env or _env()
    domains: dict[str, list[OpSpec]] = {}
    for spec in specs:
        domains.setdefault(spec.domain, []).append(spec)
    groups = [
        {"domain": d, "ops": [{"name": s.name, "versions": ", ".join(str(v.since) for v in s.versions)}
                              for s in sorted(ops, key=lambda s: s.name)]}
        for d, ops in sorted(domains.items(), key=lambda kv: (kv[0] != "ai.onnx", kv[0]))
    ]
    return env.get_template("page_index.md.j2").render(
        header=header(f"{len(specs)} spec files under specs/", "<!--") + " -->", groups=groups)


def emit(ctx: GenContext) -> dict[str, str]:
    env = _env()
    from .op_conformance import OpConformance

    builtin = _scoreboard_built()
    reports = load_reports(ctx.root) if builtin else project_reports()
    reports = OpConformance(ctx.root, reports, linked=builtin) if reports else None
    specs = sorted(ctx.specs, key=lambda s: (s.domain, s.name))
    out = {}
    for s in specs:
        out.update(render_pages(ctx, s, reports, env))
    out[f"{PAGES_DIR}/index.md"] = render_index(specs, env)
    from .spec_fields import render_spec_fields

    out[SPEC_FIELDS_PATH] = render_spec_fields(env)
    return out
