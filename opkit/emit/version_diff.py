"""The difference between consecutive versions of an op (old -> new), as an operator page shows it."""

from __future__ import annotations

import dataclasses
import difflib

from ..core.markdown import fence
from ..spec.model import OpSpec, OpVersion


def _version_text(v: OpVersion) -> list[str]:
    """A version as YAML lines, the way its spec file reads (without `since` and `changes`)."""
    import yaml

    from ..spec import dump

    data = dump._version(v)  # noqa: SLF001 - the spec dumper is the one faithful text form
    data = {k: val for k, val in data.items() if k not in ("since", "changes")}
    if not data:
        return []
    text = yaml.dump(data, Dumper=dump._Dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)
    return text.splitlines()


def render_version_diff(spec: OpSpec, old: OpVersion, new: OpVersion) -> str:
    """The difference between two consecutive versions as markdown, old -> new.

    Uses ``opkit.spec.diff`` when it is there; otherwise a unified diff of the spec text.
    """
    try:
        from ..spec.diff import diff_versions, render_diff_markdown  # type: ignore[attr-defined]
    except ImportError:
        diff_versions = render_diff_markdown = None
    if diff_versions is not None and render_diff_markdown is not None:
        try:
            diff = diff_versions(old, new, op=spec.name, domain=spec.domain)
            doc_lines = tuple(getattr(diff, "doc", ()) or ())
            # the change note is printed by the page itself; the doc diff is fenced here, with a
            # fence longer than any backtick run inside it (ONNX docs hold ``` blocks)
            diff = dataclasses.replace(diff, changes="", doc=())
            text = render_diff_markdown(diff, heading=False).strip()
            if getattr(diff, "empty", False) and doc_lines:
                text = ""
            if doc_lines:
                text = (text + "\n\n" if text else "") + "**Documentation**\n\n" + fence("\n".join(doc_lines), "diff")
            return text
        except (TypeError, AttributeError, ValueError):
            pass
    return _fallback_diff(spec, old, new)


def _fallback_diff(spec: OpSpec, old: OpVersion, new: OpVersion) -> str:
    old_name, new_name = f"{spec.name}-{old.since}", f"{spec.name}-{new.since}"
    lines = list(difflib.unified_diff(_version_text(old), _version_text(new), old_name, new_name,
                                      n=2, lineterm=""))
    if not lines:
        return "No differences in the spec besides the version number."
    return fence("\n".join(lines), "diff")
