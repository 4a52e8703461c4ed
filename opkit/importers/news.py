"""What a re-import would bring (``opkit import SOURCE --check``): new, changed and removed op versions.

The test suite compares specs/ only with the release recorded in their ``source`` (the dev extra
pins it), so a newer registry never turns tests red; this report is where its news shows up
instead. ``import_news`` is pure: it compares the importer's specs with the specs on disk exactly
as ``opkit import`` would merge them, so "changed" means "the import would rewrite this version"
and never "only the recorded release number moves". ``render_news`` turns it into plain lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..spec.diff import MemberDiff, diff_versions
from ..spec.load import load_specs
from ..spec.model import OpSpec, OpVersion
from .merge import merge_spec


@dataclass(frozen=True, order=True)
class VersionRef:
    """One op version, ``domain::Op-since``; ``since=0`` stands for the op as a whole."""

    domain: str
    op: str
    since: int = 0

    def __str__(self) -> str:
        return f"{self.domain}::{self.op}" + (f"-{self.since}" if self.since else "")


@dataclass(frozen=True, order=True)
class Changed:
    ref: VersionRef
    what: tuple[str, ...]  # e.g. ("doc", "attributes: +foo, -bar", "type constraints: T")


@dataclass(frozen=True)
class ImportNews:
    source: str  # the importer, which is also the key it writes into ``source``
    installed: str  # the release the importer read
    recorded: tuple[str, ...]  # the releases the specs on disk name (several after partial imports)
    domains: tuple[str, ...]
    new: tuple[VersionRef, ...]  # op versions the specs on disk do not have
    new_ops: frozenset[VersionRef]  # the ops (since=0) that have no spec on disk at all
    changed: tuple[Changed, ...]
    removed: tuple[VersionRef, ...]

    @property
    def empty(self) -> bool:
        return not (self.new or self.changed or self.removed)

    @property
    def up_to_date(self) -> bool:
        return self.empty and self.recorded == (self.installed,)


def _members(title: str, diff: MemberDiff) -> str:
    """'attributes: +foo, -bar, baz (doc, default)': added, removed, then changed in place with
    what changed, so a doc rewrite reads differently from a type change."""
    names = [f"+{m.name}" for m in diff.added] + [f"-{m.name}" for m in diff.removed]
    for c in diff.changed:
        what = [f.field for f in c.changes]
        what += [f"+{t}" for t in c.types_added] + [f"-{t}" for t in c.types_removed]
        names.append(f"{c.name} ({', '.join(what)})")
    return f"{title}: {', '.join(names)}"


def _what_changed(old: OpVersion, new: OpVersion, op: str) -> tuple[str, ...]:
    diff = diff_versions(old, new, op=op)
    what = [c.field for c in diff.fields]
    if diff.doc:
        what.append("doc")
    for title, members in (("attributes", diff.attributes), ("inputs", diff.inputs),
                           ("outputs", diff.outputs), ("type constraints", diff.type_constraints)):
        if members:
            what.append(_members(title, members))
    # diff_versions matches members by name, so e.g. a reordering of attributes alone shows nothing
    return tuple(what) or ("details opkit diff ignores, e.g. the order of attributes",)


def _other_sources(spec: OpSpec, key: str) -> tuple[tuple[str, str], ...]:
    """``source`` without the importer's own release number: a bump of that alone is not news."""
    return tuple((k, "" if k == key else v) for k, v in spec.source)


def import_news(source: str, imported: Iterable[OpSpec], on_disk: Iterable[OpSpec]) -> ImportNews:
    """Compare the importer's specs with the specs on disk (both unmerged; the merge is done here)."""
    imported = sorted(imported, key=lambda s: (s.domain, s.name))
    disk = {(s.domain, s.name): s for s in on_disk}
    new, new_ops, changed = [], set(), []
    for spec in imported:
        old = disk.get((spec.domain, spec.name))
        if old is None:
            new_ops.add(VersionRef(spec.domain, spec.name))
            new.extend(VersionRef(spec.domain, spec.name, v.since) for v in spec.versions)
            continue
        merged = merge_spec(spec, old)
        if _other_sources(merged, source) != _other_sources(old, source):
            # e.g. a hand-written spec that the registry now has: the import would take it over
            changed.append(Changed(VersionRef(spec.domain, spec.name), (
                f"source: {', '.join(k for k, _ in old.source)} -> {', '.join(k for k, _ in merged.source)}",)))
        for version in spec.versions:
            before = old.version(version.since)
            ref = VersionRef(spec.domain, spec.name, version.since)
            if before is None:
                new.append(ref)
            elif merged.version(version.since) != before:
                changed.append(Changed(ref, _what_changed(before, merged.version(version.since), spec.name)))
    # Only a whole op that the registry dropped is "removed". A version on disk that the registry
    # lacks, beside versions it has, is hand-written as far as the merge is concerned (it keeps
    # it), and specs whose ``source`` lacks the importer's key were never imported from it.
    names = {(s.domain, s.name) for s in imported}
    removed = [VersionRef(s.domain, s.name, v.since) for key, s in disk.items()
               if key not in names and source in dict(s.source) for v in s.versions]
    installed = {dict(s.source).get(source, "") for s in imported}
    recorded = {dict(s.source)[source] for s in disk.values() if source in dict(s.source)}
    return ImportNews(
        source=source, installed=", ".join(sorted(installed)), recorded=tuple(sorted(recorded)),
        domains=tuple(sorted({s.domain for s in imported} | {s.domain for s in disk.values()})),
        new=tuple(sorted(new)), new_ops=frozenset(new_ops), changed=tuple(sorted(changed)),
        removed=tuple(sorted(removed)),
    )


def render_news(news: ImportNews, specs_dir: str = "specs", command: str = "") -> list[str]:
    """Plain lines for a terminal, most important first. ``command`` is how to take the news."""
    command = command or f"opkit import {news.source}"
    folders = ", ".join(os.path.join(specs_dir, d) for d in news.domains) or specs_dir
    recorded = ", ".join(news.recorded) or "nothing (no imported spec on disk)"
    was = "were" if len(news.domains) > 1 else "was"
    if news.recorded == (news.installed,):
        head = f"{news.source} {news.installed} is installed, the release {folders} {was} imported from"
    else:
        head = f"{news.source} {news.installed} is installed; {folders} {was} imported from {recorded}"
    if news.up_to_date:
        return [f"{head}: up to date"]
    if news.empty:
        return [head, f"nothing is new, changed or removed; `{command}` would only record "
                      f"{news.source} {news.installed} in each spec's source"]
    lines = [head]
    lines += [f"new: {ref}" + (" (new op)" if replace(ref, since=0) in news.new_ops else "")
              for ref in news.new]
    lines += [f"changed: {c.ref} ({'; '.join(c.what)})" for c in news.changed]
    lines += [f"removed: {ref}" for ref in news.removed]
    todo = [f"run `{command}` to take the new and changed ones"] if news.new or news.changed else []
    if news.removed:  # the import only ever writes the specs the registry has
        todo.append("import never deletes a spec: delete the removed ones by hand")
    counts = f"{len(news.new)} new, {len(news.changed)} changed, {len(news.removed)} removed"
    return lines + [f"{counts}: {'; '.join(todo)}"]


def load_on_disk(specs_dir: str, domains: Iterable[str]) -> list[OpSpec]:
    """The specs in ``specs_dir/<domain>/`` (the one function here that reads files). Files that do
    not load are left out: ``import_specs`` has already reported them."""
    folders = [os.path.join(specs_dir, d) for d in sorted(set(domains))]
    specs, _diags = load_specs([f for f in folders if os.path.isdir(f)])
    return specs
