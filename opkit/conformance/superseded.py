"""Which op versions a sweep may search lightly: those a newer version in the same run computes the
same way.

Most older versions of an op differ from the newest only in the types they allow (Cast-21 and
Cast-23, If-11 and If-25; a rule's list of type names counts as a type list), or in an optional
attribute the newer one adds, whose default keeps the older behaviour (Cast-19's ``saturate``): the
spec says the kernel is shared with ``kernel: {same_as: N}``. A sweep of every
version searched each of them in full, so the older versions took 63 % of the onnxruntime sweep's
time for bindings the newest version searches too. When the newer version whose kernel an older one
reuses is in the same run, with the same parameters and rules and the older version's attributes
(names and defaults; added attributes optional, with a default),
the older version's bindings that the newer one also has are *probed* (a few examples, as the
bindings past ``--max-bindings`` are: does the runtime register and compute the op at this opset)
and left out of the robustness suite; its bindings of types only it allows get the full search. A
run that selects the older version alone (``--op Cast@13``, ``--opset 13``) searches it in full.
"""

from __future__ import annotations

import ast
import functools

from ..core.onnx_types import ELEMENT_TYPES
from ..spec.model import OpSpec, OpVersion

_TYPE_NAMES = frozenset(ELEMENT_TYPES)
TYPE_LIST = "TYPE_LIST"  # what a rule's list of element type names reads as in a contract


def kernel_body(spec: OpSpec, version: OpVersion) -> tuple | None:
    """What ``version``'s kernel computes with, following ``same_as``: (template, params, python
    body), or None when it has no kernel (or the chain is broken)."""
    seen = set()
    current = version
    while current is not None and current.kernel is not None and current.kernel.same_as is not None:
        if current.since in seen:
            return None
        seen.add(current.since)
        current = next((v for v in spec.versions if v.since == current.kernel.same_as), None)
    if current is None or current.kernel is None:
        return None
    return current.kernel.template, current.kernel.params, current.kernel.python


class _TypeLists(ast.NodeTransformer):
    """Rewrites every tuple, list or set literal of ONNX element type names as one name."""

    def _visit_literal(self, node):
        items = node.elts
        if items and all(isinstance(e, ast.Constant) and e.value in _TYPE_NAMES for e in items):
            return ast.copy_location(ast.Name(TYPE_LIST, ast.Load()), node)
        return self.generic_visit(node)

    visit_Tuple = visit_List = visit_Set = _visit_literal


@functools.lru_cache(maxsize=None)
def rule_contract(holds: str) -> str:
    """A rule as a contract compares it: its lists of element type names (Cast's ``element_name(to)
    in ('float', ...)``, which grows with each opset's new types) read as one name, since a list
    of types a rule allows is a type list like a constraint's. Within the bindings two versions
    share, the allowed types are the binding's either way."""
    try:
        tree = ast.parse(holds, mode="eval")
    except SyntaxError:
        return holds
    return ast.unparse(_TypeLists().visit(tree))


def _attributes(version: OpVersion) -> dict[str, tuple]:
    return {a.name: (a.type, repr(a.default), a.required) for a in version.attributes}


def _contract(version: OpVersion) -> tuple:
    """What, besides the type lists and the attributes, decides a version's valid calls and results."""
    return (tuple((p.name, p.option) for p in version.inputs), tuple((p.name, p.option) for p in version.outputs),
            tuple(rule_contract(r.holds) for r in version.rules))


def _covers(newer: OpVersion, older: OpVersion) -> bool:
    """Whether every call of ``older`` is a call of ``newer`` that the shared kernel computes the
    same way: the same parameters and rules, and ``older``'s attributes (names, types, defaults)
    with, at most, attributes ``newer`` adds that are optional and have a default. A call of
    ``older`` cannot set those, so the kernel computes it with their defaults, as it computes the
    call of ``newer`` that leaves them unset (Cast-13 is Cast-19 with ``saturate`` at 1; ArgMax-11
    is ArgMax-13 with ``select_last_index`` at 0)."""
    if _contract(newer) != _contract(older):
        return False
    mine, theirs = _attributes(older), _attributes(newer)
    if any(theirs.get(name) != value for name, value in mine.items()):
        return False
    return all(not required and default != "None"
               for name, (_, default, required) in theirs.items() if name not in mine)


def superseding(spec: OpSpec, version: OpVersion, selected: frozenset[int] | None) -> OpVersion | None:
    """The newest version of ``spec`` among ``selected`` (None: all of them), newer than ``version``,
    that runs the same kernel (its own or through ``same_as``) and covers its calls (``_covers``); None
    when there is none (``version`` is then searched in full)."""
    body = kernel_body(spec, version)
    if body is None:
        return None
    for newer in reversed(spec.versions):
        if newer.since <= version.since:
            break
        if newer.deprecated or (selected is not None and newer.since not in selected):
            continue
        if kernel_body(spec, newer) == body and _covers(newer, version):
            return newer
    return None


def version_groups(spec: OpSpec, selected: frozenset[int] | None) -> list[tuple[int, ...]]:
    """The versions of ``spec`` among ``selected`` (None: all), in the order a run takes them: each
    version that no newer one supersedes, newest first, followed by the versions it supersedes
    (newest first). A group is searched together (a Dask task holds one group), so the older
    versions' probes always know what the newer one's search reached."""
    chosen = [v for v in spec.versions if selected is None or v.since in selected]
    groups: dict[int, list[int]] = {}
    for version in reversed(chosen):
        newer = None if version.deprecated else superseding(spec, version, selected)
        groups.setdefault(newer.since if newer is not None else version.since, []).append(version.since)
    return [tuple(members) for members in groups.values()]
