"""Attribute levels of an op version and a pairwise covering array over them.

Runtimes break on combinations of attribute values: two values that each work alone (a mode and
a flag), or a value that matters only with another. Drawn independently, a given pair of values
of two attributes is rarely met in a few dozen examples. This module names the values worth
combining (the *levels* of each attribute, read from the spec) and a small set of rows (attribute
-> level) in which every level appears and every pair of levels of two attributes appears at least
once (``covering_rows``). The conformance runner pins each row in the case generator
(``cases(..., pinned=row)``) and runs one case of it.

Levels (``attribute_levels``), per attribute of the version:

- an enumerated attribute (``values:``): every value its domain allows;
- a flag (an int attribute with values [0, 1], or defaulting to 0 or 1, that is not an axis): 0, 1;
- any other int or float attribute: its boundary values: the domain's min and max, the default,
  and where a rule changes branch (``alpha > 0`` gives 0 and a value just across it; where the
  comparison must hold for the rule to hold at all, only the side it admits), at most
  MAX_NUMERIC_LEVELS;
- an optional attribute also ABSENT (the default applies) when its default is not a level already.

Left out: the type attributes (``to``...), ``axis``/``axes`` (valid values depend on the rank),
lists, strings, graphs and tensors without a finite domain, and every attribute with fewer than
two levels (nothing to combine). All pure functions over the spec model; records are frozen.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ..spec.model import Attribute, OpVersion
from ..spec.rules import parse_rules
from ..spec.scopes import pyname
from .case import ABSENT, TYPE_FIXING

MAX_ROWS = 64  # rows per op version; the pairs beyond are reported as left out
MAX_NUMERIC_LEVELS = 5  # levels of a numeric attribute that is not a flag
FLOAT_STEP = 0.5  # "just across" a float boundary
RANK_DEPENDENT = ("axis", "axes")


@dataclass(frozen=True)
class Levels:
    """The levels of one attribute: ``values`` (ABSENT: the attribute left off the node, its
    default applies), and where they come from (``enumerated``, ``flag``, ``boundaries``)."""

    name: str
    values: tuple
    kind: str


@dataclass(frozen=True)
class CoveringArray:
    """Rows over the levels: each row a tuple of (attribute, value), one per attribute of
    ``levels`` in order. ``left_out``: the pairs no row covers (the row cap was reached)."""

    levels: tuple[Levels, ...]
    rows: tuple[tuple[tuple[str, Any], ...], ...]
    left_out: tuple[tuple[tuple[str, Any], tuple[str, Any]], ...] = ()

    def row(self, i: int) -> dict[str, Any]:
        return dict(self.rows[i])

    def pairs(self) -> tuple[tuple[tuple[str, Any], tuple[str, Any]], ...]:
        """Every pair of levels of two attributes, in a fixed order."""
        return all_pairs(self.levels)


def label(value: Any) -> str:
    """A level as the report and the pages write it."""
    if value is ABSENT:
        return "absent"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return repr(value)
    return str(value)


def pair_label(pair) -> str:
    (a, va), (b, vb) = pair
    return f"{a}={label(va)}, {b}={label(vb)}"


# ---------------------------------------------------------------------------------------------
# levels


def attribute_levels(version: OpVersion) -> tuple[Levels, ...]:
    """The levels of every attribute of ``version`` worth combining, in spec order (see the module doc)."""
    thresholds = _rule_thresholds(version)
    out = []
    for attr in version.attributes:
        levels = _levels(attr, thresholds.get(pyname(attr.name), ()))
        if levels is not None and len(levels.values) >= 2:
            out.append(levels)
    return tuple(out)


def _levels(attr: Attribute, thresholds) -> Levels | None:
    if attr.name in TYPE_FIXING or attr.name in RANK_DEPENDENT:
        return None
    dom = attr.domain
    if dom is not None and dom.values is not None:
        values = [v for v in dom.values if dom.allows(v)]
        kind = "enumerated"
    elif attr.type == "int" and (attr.default in (0, 1) and not isinstance(attr.default, bool)):
        values = [v for v in (0, 1) if dom is None or dom.allows(v)]
        kind = "flag"
    elif attr.type in ("int", "float"):
        values = _numeric(attr, thresholds)
        kind = "boundaries"
    else:
        return None
    # what a rule that must hold excludes whatever the inputs are is no level (Conv's group >= 1)
    values = [v for v in values if all(_admits(op, const, v) for op, const, must in thresholds if must)]
    values = _unique(values)
    if not attr.required and not (attr.has_default and any(_same(attr.default, v) for v in values)):
        values.append(ABSENT)
    return Levels(attr.name, tuple(values), kind)


def _numeric(attr: Attribute, thresholds) -> list:
    dom = attr.domain
    as_type = int if attr.type == "int" else float
    step = 1 if attr.type == "int" else FLOAT_STEP
    cands = []
    if attr.has_default:
        cands.append(attr.default)
    if dom is not None:
        cands += [v for v in (dom.min, dom.max) if v is not None]
    for op, const, must in thresholds:
        if attr.type == "int" and not float(const).is_integer():
            const = math.floor(const) if op in (">", "<=") else math.ceil(const)
        if must:  # only the side the rule admits: its nearest value
            cands.append(next(v for v in (const, const + step, const - step) if _admits(op, const, v)))
        elif op in ("<", ">="):
            cands += [const, const - step]
        else:
            cands += [const, const + step]
    out = []
    for v in cands:
        try:
            v = as_type(v)
        except (TypeError, ValueError, OverflowError):
            continue
        if isinstance(v, float) and not math.isfinite(v):
            continue
        if dom is not None and not dom.allows(v):
            continue
        out.append(v)
    return _unique(out)[:MAX_NUMERIC_LEVELS]


def _admits(op: str, const, value) -> bool:
    if value is ABSENT:
        return True
    try:
        return {"<": value < const, "<=": value <= const, ">": value > const, ">=": value >= const,
                "==": value == const, "!=": value != const}[op]
    except TypeError:
        return True


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _rule_thresholds(version: OpVersion) -> dict[str, tuple[tuple[str, float, bool], ...]]:
    """pyname -> (op, constant, must) for every comparison of an attribute with a numeric
    constant in the version's rules, normalised to ``attr op constant``; ``must`` when the
    comparison is the rule or one of its top-level ``and`` terms (it has to hold)."""
    names = {pyname(a.name) for a in version.attributes}
    found: dict[str, list] = {}
    for rule in parse_rules(version):
        if rule.tree is None:
            continue
        must_nodes = _must_hold(rule.tree.body)
        for node in ast.walk(rule.tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                sym = _OPS.get(type(op))
                if sym is None:
                    continue
                left, right = operands[i], operands[i + 1]
                name, const = _name(left, names), _constant(right)
                if name is None:
                    name, const, sym = _name(right, names), _constant(left), _FLIP[sym]
                if name is None or const is None:
                    continue
                item = (sym, const, node in must_nodes)
                if item not in found.setdefault(name, []):
                    found[name].append(item)
    return {k: tuple(v) for k, v in found.items()}


def _must_hold(node) -> set:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        out = set()
        for value in node.values:
            out |= _must_hold(value)
        return out
    return {node}


def _name(node, names) -> str | None:
    return node.id if isinstance(node, ast.Name) and node.id in names else None


def _constant(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    return None


def _same(a, b) -> bool:
    """Equal levels: 1 and 1.0 are, 1 and True or "1" are not."""
    if a is ABSENT or b is ABSENT:
        return a is b
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    return a == b if numbers else (type(a) is type(b) and a == b)


def _unique(values) -> list:
    out = []
    for v in values:
        if not any(_same(v, w) for w in out):
            out.append(v)
    return out


# ---------------------------------------------------------------------------------------------
# the covering array


def all_pairs(levels) -> tuple:
    """Every pair ((a, va), (b, vb)) of levels of two attributes, a before b in ``levels``."""
    out = []
    for la, lb in combinations(levels, 2):
        out += [((la.name, va), (lb.name, vb)) for va in la.values for vb in lb.values]
    return tuple(out)


def covering_rows(levels, max_rows: int = MAX_ROWS) -> CoveringArray:
    """A greedy pairwise covering array (AETG-style, deterministic) over ``levels``: each new row
    starts from the level in the most uncovered pairs, then gives each other attribute (those
    with the most uncovered pairs with what the row has first) the level completing the most
    uncovered pairs with the row so far. Each row covers at least one new pair, so it ends; at
    ``max_rows`` rows the uncovered pairs are returned as ``left_out``. With one attribute, a row
    per level."""
    levels = tuple(levels)
    if not levels:
        return CoveringArray((), ())
    if len(levels) == 1:
        only = levels[0]
        return CoveringArray(levels, tuple(((only.name, v),) for v in only.values[:max_rows]))
    # pairs as index tuples (i, vi, j, vj), i < j; values by position in their level list
    uncovered = {(i, vi, j, vj) for i, j in combinations(range(len(levels)), 2)
                 for vi in range(len(levels[i].values)) for vj in range(len(levels[j].values))}
    rows = []
    while uncovered and len(rows) < max_rows:
        rows.append(_next_row(levels, uncovered))
        row = rows[-1]
        for i, j in combinations(range(len(levels)), 2):
            uncovered.discard((i, row[i], j, row[j]))
    named = tuple(tuple((lv.name, lv.values[row[k]]) for k, lv in enumerate(levels)) for row in rows)
    left = tuple(((levels[i].name, levels[i].values[vi]), (levels[j].name, levels[j].values[vj]))
                 for i, vi, j, vj in sorted(uncovered))
    return CoveringArray(levels, named, left)


def _next_row(levels, uncovered: set) -> list[int]:
    n = len(levels)
    counts: dict[tuple[int, int], int] = {}
    for i, vi, j, vj in uncovered:
        counts[(i, vi)] = counts.get((i, vi), 0) + 1
        counts[(j, vj)] = counts.get((j, vj), 0) + 1
    start = max(sorted(counts), key=lambda k: counts[k])  # the first of the most frequent: deterministic
    row: list[int | None] = [None] * n
    row[start[0]] = start[1]
    while any(v is None for v in row):
        # the attribute with the most uncovered pairs with the levels chosen so far goes next
        best = None
        for k in range(n):
            if row[k] is not None:
                continue
            gains = [_gain(k, v, row, uncovered) for v in range(len(levels[k].values))]
            top = max(range(len(gains)), key=lambda v: (gains[v], -v))
            score = (gains[top], -k)
            if best is None or score > best[0]:
                best = (score, k, top)
        if best[0][0] == 0:  # nothing left to gain against the row: the level in most uncovered pairs
            k = best[1]
            top = max(range(len(levels[k].values)), key=lambda v: (counts.get((k, v), 0), -v))
            row[k] = top
        else:
            row[best[1]] = best[2]
    return row


def _gain(k: int, v: int, row, uncovered: set) -> int:
    gain = 0
    for other, w in enumerate(row):
        if w is None:
            continue
        key = (other, w, k, v) if other < k else (k, v, other, w)
        gain += key in uncovered
    return gain


def covering_array(version: OpVersion, max_rows: int = MAX_ROWS) -> CoveringArray:
    """The covering array of ``version``'s attribute levels."""
    return covering_rows(attribute_levels(version), max_rows)


def pairs_of(row) -> list:
    """The pairs a row (a tuple or dict of attribute -> value, in levels order) covers."""
    items = list(row.items()) if isinstance(row, dict) else list(row)
    return [(items[a], items[b]) for a, b in combinations(range(len(items)), 2)]


__all__ = ["Levels", "CoveringArray", "MAX_ROWS", "attribute_levels", "covering_rows", "covering_array",
           "all_pairs", "pairs_of", "label", "pair_label"]
