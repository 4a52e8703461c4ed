"""Field-level differences between two versions of an operator, old -> new.

``diff_versions`` is pure and returns a frozen ``VersionDiff``; ``render_diff_text`` (terminal,
``opkit diff``) and ``render_diff_markdown`` (op pages) format it. Attributes, inputs, outputs and
type constraints are matched by name; an attribute that became an input of the same name (Clip 6 ->
11: ``min``/``max``) is reported as moved rather than as an unrelated removal and addition.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from ..core.markdown import fence

from .model import Attribute, FormalParameter, OpVersion, TypeConstraint
from ..core.onnx_types import INFINITE_ARITY


@dataclass(frozen=True, slots=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class MemberChange:
    """One attribute, parameter or type constraint present in both versions, and what changed."""

    name: str
    changes: tuple[FieldChange, ...] = ()
    types_added: tuple[str, ...] = ()  # type constraints only
    types_removed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberDiff:
    """Added / removed / changed members of one kind (attributes, inputs, outputs, constraints)."""

    added: tuple[Any, ...] = ()  # Attribute | FormalParameter | TypeConstraint of the new version
    removed: tuple[Any, ...] = ()  # ... of the old version
    changed: tuple[MemberChange, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


@dataclass(frozen=True, slots=True)
class VersionDiff:
    op: str
    domain: str
    old_since: int
    new_since: int
    doc: tuple[str, ...] = ()  # unified diff lines of the docs (empty: unchanged)
    attributes: MemberDiff = MemberDiff()
    inputs: MemberDiff = MemberDiff()
    outputs: MemberDiff = MemberDiff()
    type_constraints: MemberDiff = MemberDiff()
    moved_to_inputs: tuple[str, ...] = ()  # attributes that became inputs of the same name
    moved_to_attributes: tuple[str, ...] = ()  # inputs that became attributes of the same name
    fields: tuple[FieldChange, ...] = ()  # version-level fields: support level, arity, function ...
    changes: str = ""  # the new version's own ``changes:`` note, when the spec has one

    @property
    def empty(self) -> bool:
        return not (self.doc or self.attributes or self.inputs or self.outputs or self.type_constraints
                    or self.fields)


# ---------------------------------------------------------------------------------------------
# computing


def _field_changes(pairs: list[tuple[str, Any, Any]]) -> tuple[FieldChange, ...]:
    return tuple(FieldChange(name, old, new) for name, old, new in pairs if old != new)


def _describe(obj: Any) -> Any:
    return obj.describe() if obj is not None else None


def _attribute_change(old: Attribute, new: Attribute) -> MemberChange:
    return MemberChange(old.name, _field_changes([
        ("type", old.type, new.type),
        ("required", old.required, new.required),
        ("default", _plain(old.default), _plain(new.default)),
        ("values", _describe(old.domain), _describe(new.domain)),
        ("doc", old.doc, new.doc),
    ]))


def _param_change(old: FormalParameter, new: FormalParameter, old_pos: int, new_pos: int) -> MemberChange:
    return MemberChange(old.name, _field_changes([
        ("position", old_pos, new_pos),
        ("type", old.type, new.type),
        ("option", old.option, new.option),
        ("homogeneous", old.homogeneous, new.homogeneous),
        ("differentiability", differentiability(old.differentiable), differentiability(new.differentiable)),
        ("min_arity", old.min_arity, new.min_arity),
        ("rank", _describe(old.rank), _describe(new.rank)),
        ("doc", old.doc, new.doc),
    ]))


def differentiability(value: bool | None) -> str:
    return {True: "differentiable", False: "non-differentiable"}.get(value, "undefined")


def _constraint_change(old: TypeConstraint, new: TypeConstraint) -> MemberChange:
    added = tuple(t for t in new.types if t not in old.types)
    removed = tuple(t for t in old.types if t not in new.types)
    return MemberChange(old.name, _field_changes([("doc", old.doc, new.doc)]), added, removed)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _members(old: tuple, new: tuple, change) -> MemberDiff:
    old_names = {m.name: (i, m) for i, m in enumerate(old)}
    new_names = {m.name: (i, m) for i, m in enumerate(new)}
    changed = []
    for name, (i, m) in old_names.items():
        if name in new_names:
            j, n = new_names[name]
            c = change(m, n, i, j)
            if c.changes or c.types_added or c.types_removed:
                changed.append(c)
    return MemberDiff(
        added=tuple(m for m in new if m.name not in old_names),
        removed=tuple(m for m in old if m.name not in new_names),
        changed=tuple(changed),
    )


def _arity(low: int, high: int) -> str:
    return f"{low}..{'inf' if high == INFINITE_ARITY else high}"


def doc_diff(old: str, new: str, old_label: str, new_label: str, context: int = 2) -> tuple[str, ...]:
    if old == new:
        return ()
    return tuple(difflib.unified_diff(old.strip("\n").splitlines(), new.strip("\n").splitlines(),
                                      old_label, new_label, n=context, lineterm=""))


def diff_versions(old: OpVersion, new: OpVersion, *, op: str = "", domain: str = "") -> VersionDiff:
    """What changed from ``old`` to ``new`` (two versions of one op; ``op``/``domain`` label it)."""
    name = op or "op"
    attributes = _members(old.attributes, new.attributes, lambda a, b, i, j: _attribute_change(a, b))
    inputs = _members(old.inputs, new.inputs, _param_change)
    outputs = _members(old.outputs, new.outputs, _param_change)
    constraints = _members(old.type_constraints, new.type_constraints, lambda a, b, i, j: _constraint_change(a, b))
    added_inputs = {p.name for p in inputs.added}
    added_attrs = {a.name for a in attributes.added}
    fields = _field_changes([
        ("support_level", old.support_level, new.support_level),
        ("deprecated", old.deprecated, new.deprecated),
        ("inputs (arity)", _arity(old.min_input, old.max_input), _arity(new.min_input, new.max_input)),
        ("outputs (arity)", _arity(old.min_output, old.max_output), _arity(new.min_output, new.max_output)),
        ("function", [b.opset for b in old.function], [b.opset for b in new.function]),
        ("context_dependent_function", list(old.context_dependent_function), list(new.context_dependent_function)),
        ("shape_inference", old.shape_inference, new.shape_inference),
        ("data_propagation", old.data_propagation, new.data_propagation),
        ("determinism", old.determinism, new.determinism),
        ("semantics", old.semantics, new.semantics),
    ])
    return VersionDiff(
        op=name, domain=domain, old_since=old.since, new_since=new.since,
        doc=doc_diff(old.doc, new.doc, f"{name}-{old.since}", f"{name}-{new.since}"),
        attributes=attributes, inputs=inputs, outputs=outputs, type_constraints=constraints,
        moved_to_inputs=tuple(a.name for a in attributes.removed if a.name in added_inputs),
        moved_to_attributes=tuple(p.name for p in inputs.removed if p.name in added_attrs),
        fields=fields,
        changes=new.changes,
    )


# ---------------------------------------------------------------------------------------------
# rendering


def _short(value: Any, limit: int = 60) -> str:
    text = "(none)" if value is None else value if isinstance(value, str) else repr(value)
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _attr_summary(a: Attribute) -> str:
    extra = "required" if a.required else f"default {_plain(a.default)!r}" if a.has_default else "optional"
    return f"{a.type}, {extra}"


def _param_summary(p: FormalParameter) -> str:
    parts = [p.type]
    if p.option != "single":
        parts.append(p.option if p.homogeneous or p.option != "variadic" else "variadic, heterogeneous")
    return ", ".join(parts)


def _change_words(c: FieldChange) -> str:
    if c.field == "doc":
        return "doc changed"
    return f"{c.field} {_short(c.old)} -> {_short(c.new)}"


def _summary(member: Any) -> str:
    if isinstance(member, Attribute):
        return _attr_summary(member)
    if isinstance(member, FormalParameter):
        return _param_summary(member)
    return ", ".join(member.types)


def _member_lines(d: MemberDiff, moved: dict[str, str]) -> list[str]:
    """Plain lines '+ name: ...', '- name: ...', '~ name: ...' (no markup)."""
    lines = []
    for m in d.removed:
        note = f"  [{moved[m.name]}]" if m.name in moved else ""
        lines.append(f"- {m.name}: {_summary(m)}{note}")
    for m in d.added:
        note = f"  [{moved[m.name]}]" if m.name in moved else ""
        lines.append(f"+ {m.name}: {_summary(m)}{note}")
    for c in d.changed:
        words = [_change_words(f) for f in c.changes]
        if c.types_added:
            words.append("types added: " + ", ".join(c.types_added))
        if c.types_removed:
            words.append("types removed: " + ", ".join(c.types_removed))
        lines.append(f"~ {c.name}: " + "; ".join(words))
    return lines


def _sections(diff: VersionDiff) -> list[tuple[str, MemberDiff, dict[str, str]]]:
    attr_moves = {n: "moved to inputs" for n in diff.moved_to_inputs}
    attr_moves.update({n: "moved from inputs" for n in diff.moved_to_attributes})
    input_moves = {n: "moved from attributes" for n in diff.moved_to_inputs}
    input_moves.update({n: "moved to attributes" for n in diff.moved_to_attributes})
    return [
        ("attributes", diff.attributes, attr_moves),
        ("inputs", diff.inputs, input_moves),
        ("outputs", diff.outputs, {}),
        ("type constraints", diff.type_constraints, {}),
    ]


def render_diff_text(diff: VersionDiff) -> str:
    """The diff for a terminal: one section per kind of change, doc as a unified diff."""
    where = f" ({diff.domain})" if diff.domain else ""
    out = [f"{diff.op} {diff.old_since} -> {diff.new_since}{where}"]
    if diff.changes:
        out.append(f"  changes: {' '.join(diff.changes.split())}")
    if diff.empty:
        out.append("  no differences")
        return "\n".join(out) + "\n"
    if diff.fields:
        out.append("version:")
        out.extend(f"  ~ {_change_words(c)}" for c in diff.fields)
    for title, members, moves in _sections(diff):
        if members:
            out.append(f"{title}:")
            out.extend("  " + line for line in _member_lines(members, moves))
    if diff.doc:
        out.append("doc:")
        out.extend("  " + line for line in diff.doc)
    return "\n".join(out) + "\n"


def _md_code(text: Any) -> str:
    text = _short(text, 80)
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_diff_markdown(diff: VersionDiff, heading_level: int = 4, heading: bool = True) -> str:
    """The diff as markdown (MyST/CommonMark): bullet lists per kind, the doc as a ```diff block."""
    out: list[str] = []
    if heading:
        out += [f"{'#' * heading_level} {diff.op} {diff.old_since} → {diff.new_since}", ""]
    if diff.changes:
        out += [f"*{' '.join(diff.changes.split())}*", ""]
    if diff.empty:
        out += ["No differences in the spec fields.", ""]
        return "\n".join(out)
    if diff.fields:
        out += ["**Version**", ""]
        out += [f"- {c.field}: {_md_code(c.old)} → {_md_code(c.new)}" if c.field != "semantics"
                else "- semantics changed" for c in diff.fields]
        out.append("")
    for title, members, moves in _sections(diff):
        if not members:
            continue
        out += [f"**{title[0].upper()}{title[1:]}**", ""]
        for m in members.removed:
            note = f" ({moves[m.name]})" if m.name in moves else ""
            out.append(f"- removed `{m.name}`: {_md_code(_summary(m))}{note}")
        for m in members.added:
            note = f" ({moves[m.name]})" if m.name in moves else ""
            out.append(f"- added `{m.name}`: {_md_code(_summary(m))}{note}")
        for c in members.changed:
            words = []
            for f in c.changes:
                words.append("doc changed" if f.field == "doc" else f"{f.field} {_md_code(f.old)} → {_md_code(f.new)}")
            if c.types_added:
                words.append("added " + ", ".join(f"`{t}`" for t in c.types_added))
            if c.types_removed:
                words.append("removed " + ", ".join(f"`{t}`" for t in c.types_removed))
            out.append(f"- changed `{c.name}`: " + "; ".join(words))
        out.append("")
    if diff.doc:
        out += ["**Documentation**", "", fence("\n".join(diff.doc), "diff"), ""]
    return "\n".join(out)
