"""Labels and links of the operator pages: page and version labels, page paths, upstream pages.

Imported docs link to pages of their own repository; ``absolute_links`` points those at upstream.
"""

from __future__ import annotations

import os
import re

from ..spec.model import OpSpec
from . import GenContext

PAGES_DIR = "generated/docs/operators"


def doc_label(spec: OpSpec) -> str:
    """The page label: ONNX's ``l-onnx-doc-Trilu``; other domains add theirs for uniqueness."""
    if spec.domain == "ai.onnx":
        return f"l-onnx-doc-{spec.name}"
    return f"l-onnx-doc-{spec.domain}-{spec.name}"


def version_label(spec: OpSpec, since: int) -> str:
    """The label of one version: ONNX's ``l-onnx-op-trilu-14`` (lower case, as Sphinx stores it)."""
    if spec.domain == "ai.onnx":
        return f"l-onnx-op-{spec.name.lower()}-{since}"
    return f"l-onnx-op-{spec.domain.lower()}-{spec.name.lower()}-{since}"


def page_path(domain: str, name: str) -> str:
    return f"{PAGES_DIR}/{domain}/{name}.md"


def spec_path(ctx: GenContext, spec: OpSpec) -> str:
    if spec.path:
        rel = os.path.relpath(spec.path, ctx.root) if os.path.isabs(spec.path) else spec.path
        return rel.replace(os.sep, "/")
    return f"specs/{spec.domain}/{spec.name}.yaml"


def _upstream_link(spec: OpSpec) -> str:
    """Where the op's upstream documentation lives (ONNX, ORT contrib); the spec file otherwise."""
    return upstream_url(spec.domain, spec.name)


def upstream_url(domain: str, name: str) -> str:
    """The public page of a built-in op of ONNX's or onnxruntime's domains ("" for other domains)."""
    if domain == "ai.onnx":
        return f"https://github.com/onnx/onnx/blob/main/docs/Operators.md#{name}"
    if domain.startswith("ai.onnx."):
        return f"https://github.com/onnx/onnx/blob/main/docs/Operators-ml.md#{domain}.{name}"
    if domain == "com.microsoft":
        return f"https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md#{domain}.{name}"
    return ""


_RELATIVE_LINK = re.compile(r"\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:|#|/)([^)\s]+?\.md)(#[^)\s]*)?\)")
_UPSTREAM_DOCS = {
    "onnx": "https://github.com/onnx/onnx/blob/main/docs/",
    "onnxruntime": "https://github.com/microsoft/onnxruntime/blob/main/docs/",
}


def absolute_links(text: str, source: tuple[tuple[str, str], ...]) -> str:
    """Imported docs link to pages of their own repository (``[broadcasting](Broadcasting.md)``);
    on our site those links would dangle, so they point at the upstream repository instead."""
    base = next((_UPSTREAM_DOCS[k] for k, _ in source if k in _UPSTREAM_DOCS), None)
    if base is None or "](" not in text:
        return text
    return _RELATIVE_LINK.sub(lambda m: f"]({base}{m.group(1)}{m.group(2) or ''})", text)
