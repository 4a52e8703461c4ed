"""Re-importing keeps what people wrote: imported fields are refreshed, opkit extensions kept.

The extensions (semantics, rules, kernels, properties, lowerings, tolerances, the accuracy class
and its tolerance, examples, change notes, attribute value domains, parameter ranks, the op-level
doc) never come from an importer, so they are copied from the spec already on disk, version by
version (matched on ``since``) and field by field (matched on name). Versions that exist only on
disk are kept as they are.
"""

from __future__ import annotations

from dataclasses import replace

from ..spec.model import OpSpec, OpVersion

VERSION_EXTENSIONS = ("changes", "semantics", "family", "rules", "kernel", "properties", "lowerings", "tolerances",
                      "examples", "accuracy", "tolerance")


def _merge_version(new: OpVersion, old: OpVersion) -> OpVersion:
    old_attrs = {a.name: a for a in old.attributes}
    old_inputs = {p.name: p for p in old.inputs}
    old_outputs = {p.name: p for p in old.outputs}
    return replace(
        new,
        attributes=tuple(replace(a, domain=old_attrs[a.name].domain) if a.name in old_attrs else a
                         for a in new.attributes),
        inputs=tuple(replace(p, rank=old_inputs[p.name].rank) if p.name in old_inputs else p for p in new.inputs),
        outputs=tuple(replace(p, rank=old_outputs[p.name].rank) if p.name in old_outputs else p
                      for p in new.outputs),
        **{key: getattr(old, key) for key in VERSION_EXTENSIONS},
    )


SEMANTICS_SOURCE = "semantics"  # the ``source`` key that says where a spec's semantics come from


def merge_spec(new: OpSpec, old: OpSpec | None) -> OpSpec:
    if old is None:
        return new
    old_versions = {v.since: v for v in old.versions}
    versions = [(_merge_version(v, old_versions[v.since]) if v.since in old_versions else v) for v in new.versions]
    imported = {v.since for v in new.versions}
    versions.extend(v for v in old.versions if v.since not in imported)
    versions.sort(key=lambda v: v.since)
    # the import writes its own release (onnxruntime: 1.31.1); where people took the semantics from
    # when the schema text is thin (``semantics``: an op's contrib tests) is kept beside it
    written = dict(new.source)
    source = tuple(new.source) + tuple((k, v) for k, v in old.source if k == SEMANTICS_SOURCE and k not in written)
    return replace(new, versions=tuple(versions), doc=old.doc or new.doc, source=source)
