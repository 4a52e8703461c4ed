"""Rules that constrain only the type binding.

Some ONNX definitions allow fewer type combinations than their type constraints list: the
function body of RMSNormalization-23 computes ``Y`` in ``X``'s type although the schema types it
``V``, so ONNX's own inference refuses every binding with ``T != V``. A spec says so with an
ordinary labelled rule that reads inputs only through ``.dtype`` (``holds: X.dtype ==
scale.dtype``). The kernel enforces it like any rule; the case generator, seeing that the rule
depends on the binding alone, never draws a binding it excludes, so opkit does not spend a run on
cases it knows are invalid and does not report them as "could not draw".
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from .model import OpVersion, Rule
from .scopes import pyname


@dataclass(frozen=True)
class _TypeOnly:
    """A stand-in for an input in a type-only rule: it has a dtype and nothing else."""

    dtype: object


def _reads_only_dtypes(tree: ast.AST, inputs: frozenset[str], attributes: frozenset[str]) -> bool:
    """True when every input name in ``tree`` is used as ``NAME.dtype``, no attribute is read, and
    at least one input is."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    seen = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name):
            continue
        if node.id in attributes:
            return False
        if node.id in inputs:
            parent = parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.attr == "dtype"):
                return False
            seen = True
    return seen


@functools.lru_cache(maxsize=None)
def _compiled(holds: str):
    return compile(ast.parse(holds.strip(), mode="eval"), "<type rule>", "eval")


_TYPE_RULES: dict[int, tuple] = {}  # id(version) -> (version, its type rules): parsing them per binding cost
                                    # the sweep a fifth of its time (CastLike-21's 381 bindings each asked)


def type_rules(version: OpVersion) -> tuple[Rule, ...]:
    """The version's rules that depend on the type binding alone (computed once per version; the
    version is kept with the result, so its id is not reused while cached)."""
    hit = _TYPE_RULES.get(id(version))
    if hit is None or hit[0] is not version:
        hit = _TYPE_RULES[id(version)] = (version, _find_type_rules(version))
    return hit[1]


def _find_type_rules(version: OpVersion) -> tuple[Rule, ...]:
    inputs = frozenset(pyname(p.name) for p in version.inputs)
    attributes = frozenset(pyname(a.name) for a in version.attributes) - inputs
    found = []
    for rule in version.rules:
        try:
            tree = ast.parse(rule.holds.strip(), mode="eval")
        except SyntaxError:  # the validator reports it; here it is simply not a type rule
            continue
        if _reads_only_dtypes(tree, inputs, attributes):
            found.append(rule)
    return tuple(found)


def binding_violation(version: OpVersion, binding: dict[str, str]) -> Rule | None:
    """The first type-only rule the binding breaks, or None. Inputs whose type parameter is not
    in the binding (fixed types) get their own element type."""
    rules = type_rules(version)
    if not rules:
        return None
    import numpy as np

    from ..core.numpy_types import NUMPY_DTYPES
    from ..core.onnx_types import tensor_element

    scope: dict[str, object] = {"np": np}
    for p in version.inputs:
        elem = tensor_element(binding.get(p.type, p.type))
        dtype = NUMPY_DTYPES.get(elem) if elem else None
        if dtype is not None:
            scope[pyname(p.name)] = _TypeOnly(np.dtype(dtype))
    for rule in rules:
        try:
            if not eval(_compiled(rule.holds), scope):  # noqa: S307 - spec rules are code by design
                return rule
        except Exception:  # noqa: BLE001 - a rule over an input this binding leaves untyped
            continue
    return None


__all__ = ["binding_violation", "type_rules"]
