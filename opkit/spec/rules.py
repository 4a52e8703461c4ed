"""The one parsed form of a version's labelled ``rules``, read by every consumer.

A rule (``{label: C1, holds: "k <= x.shape[axis]"}``) is a Python expression over the version's
inputs and attributes. The kernel emitter pastes it into the kernel's checks, the case generator
keeps only the type bindings that its type-only rules allow (type_rules.py), and the hostile and
edge generators read which inputs it bounds and which functions it calls. They all start from
``parse_rules(version)``: each rule parsed once with ``ast``, per version.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from types import CodeType

from .model import OpVersion, Rule
from .scopes import pyname


@dataclass(frozen=True)
class ParsedRule:
    """A rule of the model (``rule``: label, holds, doc, location) with what its text says."""

    rule: Rule
    expression: str  # ``holds`` without surrounding whitespace: what the kernel checks
    names: frozenset[str]  # the identifiers it reads: names, and attribute names (np.isnan: np, isnan)
    # reads inputs only through ``.dtype``, no attribute, and at least one input: it depends on
    # the type binding alone (see type_rules.py)
    type_only: bool
    tree: ast.Expression | None = field(compare=False, repr=False)  # None: it does not parse
    code: CodeType | None = field(compare=False, repr=False)  # compiled, for type-only rules

    @property
    def label(self) -> str:
        return self.rule.label

    @property
    def doc(self) -> str:
        return self.rule.doc

    @property
    def message(self) -> str:
        """What the kernel's failure says: the doc, or the expression, on one line."""
        return (self.rule.doc or self.rule.holds).strip().replace("\n", " ")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _parse(expression: str) -> ast.Expression | None:
    try:
        return ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the validator reports it
        return None


def _names(tree: ast.Expression | None, expression: str) -> frozenset[str]:
    if tree is None:  # what a reader of the text would take for names
        return frozenset(_IDENTIFIER.findall(expression))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return frozenset(out)


def _is_none_test(node: ast.AST, parent: ast.AST | None) -> bool:
    """``NAME is None`` / ``NAME is not None``, NAME being ``node``."""
    return (isinstance(parent, ast.Compare) and parent.left is node and len(parent.ops) == 1
            and isinstance(parent.ops[0], (ast.Is, ast.IsNot)) and isinstance(parent.comparators[0], ast.Constant)
            and parent.comparators[0].value is None)


def _reads_only_dtypes(tree: ast.AST, inputs: frozenset[str], attributes: frozenset[str],
                       guardable: frozenset[str] = frozenset()) -> bool:
    """True when every input name in ``tree`` is used as ``NAME.dtype`` (or, for a ``guardable``
    input, tested with ``NAME is None`` / ``is not None``), no attribute is read, and at least one
    input is read through ``.dtype``."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    seen = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name):
            continue
        if node.id in attributes:
            return False
        if node.id in inputs:
            parent = parents.get(node)
            if node.id in guardable and _is_none_test(node, parent):
                continue
            if not (isinstance(parent, ast.Attribute) and parent.attr == "dtype"):
                return False
            seen = True
    return seen


def _parse_rule(rule: Rule, inputs: frozenset[str], attributes: frozenset[str],
                guardable: frozenset[str] = frozenset()) -> ParsedRule:
    expression = (getattr(rule, "holds", "") or "").strip()
    tree = _parse(expression)
    type_only = tree is not None and _reads_only_dtypes(tree, inputs, attributes, guardable)
    code = compile(tree, "<type rule>", "eval") if type_only else None
    return ParsedRule(rule, expression, _names(tree, expression), type_only, tree, code)


_PARSED: dict[int, tuple] = {}  # id(version) -> (version, its parsed rules): kept with the result,
                                # so its id is not reused while cached


def parse_rules(version: OpVersion) -> tuple[ParsedRule, ...]:
    """The version's rules, parsed (once per version)."""
    hit = _PARSED.get(id(version))
    if hit is None or hit[0] is not version:
        inputs = frozenset(pyname(p.name) for p in version.inputs)
        attributes = frozenset(pyname(a.name) for a in version.attributes) - inputs
        # an optional input whose type parameter also types an output: its binding decides the
        # output's type when the input is left out, so a rule may guard it with ``is None`` and
        # still be about the binding alone (type_rules.py)
        output_types = {p.type for p in version.outputs}
        guardable = frozenset(pyname(p.name) for p in version.inputs if p.type in output_types)
        parsed = tuple(_parse_rule(r, inputs, attributes, guardable) for r in (version.rules or ()))
        hit = _PARSED[id(version)] = (version, parsed)
    return hit[1]


__all__ = ["ParsedRule", "parse_rules"]
