"""The comparisons a version's rules state, measured on a case, and the quantities that move them.

A rule such as ``1 <= int(K[0]) <= X.shape[axis]`` states relations between quantities of a case
(TopK's k and the length of its axis); implementations diverge where such a relation sits at its
boundary (k equal to the axis length), which plain draws reach by chance only. This module reads
the relations off ``parse_rules(version)`` and measures them: each comparison of a rule becomes a
call that records ``left - right`` whenever both sides are numbers (once per iteration when the
comparison sits in a comprehension, ``all(... for i in range(data.ndim))``) and returns what the
comparison returns, so evaluating the instrumented rules also says whether the case is valid.

The quantities a variant may move are ``Knob``s: an int attribute, one item of an ints attribute,
one value of a small integer input (k, pads, starts/ends, repeats, a shape), or one extent of an
input (its values kept, cut or repeated along that axis). ``boundaries`` solves, knob by knob, for
the values that put a relation at 0 (equal) or one step either side, from the slope each knob
gives the measured differences, and keeps those the rules still allow. Deterministic: a function
of (case, version).

The rules are evaluated as the generated kernel evaluates them: in the kernel module's namespace
(math, ml_dtypes, np and the kernel helpers), with the inputs and attributes by their ``pyname``.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import operator
import re
from dataclasses import dataclass

import numpy as np

from ..core.onnx_types import INT_RANGES
from ..core.values import runtime_value
from ..spec.rules import parse_rules
from ..spec.scopes import pyname
from .case import TYPE_FIXING, Case, NotGeneratable, input_parameter, param_elem
from .derived import with_attribute
from .draws import fill
from .memo import cache_by_identity

MAX_EXTENT = 16  # the largest extent a variant gives an input
MAX_ELEMENTS = 4096  # the most elements a variant gives an input
MAX_VALUE = 64  # the largest |value| a variant gives an integer input or attribute (no huge outputs)
MAX_VALUES = 8  # an integer input with more values than this is data, not a knob

_COMPARE = {ast.Lt: ("<", operator.lt), ast.LtE: ("<=", operator.le), ast.Gt: (">", operator.gt),
            ast.GtE: (">=", operator.ge), ast.Eq: ("==", operator.eq), ast.NotEq: ("!=", operator.ne)}
_FUNCS = {name: fn for name, fn in _COMPARE.values()}


@dataclass(frozen=True)
class Relation:
    """One comparison a rule states (``left op right``; a chain gives one per pair)."""

    key: tuple  # (rule index, comparison index, pair index): stable per version
    label: str  # the rule's label
    text: str  # "left op right", as written
    op: str
    constant_side: bool  # one side is a constant (``1 <= k``): a bound, not a relation of two quantities


@dataclass(frozen=True)
class Instrumented:
    code: tuple  # per rule: compiled instrumented expression, or None (does not parse)
    relations: tuple[Relation, ...]


class _Instrument(ast.NodeTransformer):
    def __init__(self, rule: int, label: str):
        self.rule, self.label, self.count, self.relations = rule, label, 0, []

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        ops = [_COMPARE.get(type(op)) for op in node.ops]
        if any(op is None for op in ops):  # in, is ...: not a relation of quantities
            return node
        cid = (self.rule, self.count)
        self.count += 1
        sides = [node.left, *node.comparators]
        for p, (name, _) in enumerate(ops):
            left, right = sides[p], sides[p + 1]
            const = isinstance(left, ast.Constant) or isinstance(right, ast.Constant) or \
                (isinstance(left, ast.UnaryOp) and isinstance(left.operand, ast.Constant)) or \
                (isinstance(right, ast.UnaryOp) and isinstance(right.operand, ast.Constant))
            self.relations.append(Relation((*cid, p), self.label, f"{ast.unparse(left)} {name} {ast.unparse(right)}",
                                           name, const))
        thunks = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), s)
                  for s in sides]
        return ast.Call(ast.Name("__relation__", ast.Load()),
                        [ast.Constant(cid), ast.Constant(tuple(name for name, _ in ops)), *thunks], [])


@cache_by_identity
def instrumented(version) -> Instrumented:
    """The version's rules with every comparison recording its sides (see the module doc)."""
    codes, relations = [], []
    for i, rule in enumerate(parse_rules(version)):
        if rule.tree is None:
            codes.append(None)
            continue
        tree = ast.parse(rule.expression, mode="eval")
        tool = _Instrument(i, rule.label)
        tree = ast.fix_missing_locations(tool.visit(tree))
        try:
            codes.append(compile(tree, f"<rule {rule.label}>", "eval"))
        except (SyntaxError, ValueError):
            codes.append(None)
            continue
        relations += tool.relations
    return Instrumented(tuple(codes), tuple(relations))


def relations(version) -> tuple[Relation, ...]:
    return instrumented(version).relations


def _number(value):
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if np.isfinite(v) else None
    return None


class _Recorder:
    """``__relation__``: evaluates one (possibly chained) comparison as Python does, recording
    ``left - right`` of each numeric pair under (comparison, pair, occurrence)."""

    def __init__(self):
        self.seen: dict = {}
        self.counts: dict = {}

    def __call__(self, cid, ops, *thunks):
        left = thunks[0]()
        result = True
        for p, name in enumerate(ops):
            right = thunks[p + 1]()
            n = self.counts.get((cid, p), 0)
            self.counts[(cid, p)] = n + 1
            a, b = _number(left), _number(right)
            if a is not None and b is not None:
                self.seen[(*cid, p, n)] = a - b
            result = _FUNCS[name](left, right)
            if len(ops) > 1 and not result:
                return result
            left = right
        return result


@functools.lru_cache(maxsize=None)
def _kernel_globals(domain: str, op: str, since: int) -> dict | None:
    try:
        from ..kernels.registry import get_kernel
    except ImportError:  # pragma: no cover - the kernels layer is part of the package
        return None
    fn = get_kernel(domain, op, since)
    fn = getattr(fn, "__wrapped__", fn)
    return getattr(fn, "__globals__", None)


def namespace(case: Case, version) -> dict | None:
    """The names a rule of ``version`` sees for ``case`` (None: no generated kernel to take the
    helpers from)."""
    base = _kernel_globals(case.domain, case.op, case.since)
    if base is None:
        return None
    names = dict(base)
    variadic: dict[str, list] = {}
    for p in version.inputs:
        names[pyname(p.name)] = None
    for name, value in case.inputs:
        param = input_parameter(version, name)
        if param is None:
            continue
        if param.option == "variadic":
            variadic.setdefault(pyname(param.name), []).append(runtime_value(value))
        else:
            names[pyname(param.name)] = runtime_value(value)
    names.update(variadic)
    for a in version.attributes:
        names[pyname(a.name)] = None
    for k, v in case.kernel_attributes().items():
        names[pyname(k)] = v
    return names


@dataclass(frozen=True)
class Measure:
    valid: bool  # every rule holds
    seen: dict  # (rule, comparison, pair, occurrence) -> left - right


def measure(case: Case, version) -> Measure | None:
    """Evaluate every rule of ``version`` on ``case``; None when the rules cannot be evaluated here."""
    inst = instrumented(version)
    names = namespace(case, version)
    if names is None:
        return None
    recorder = _Recorder()
    names["__relation__"] = recorder
    valid = True
    with np.errstate(all="ignore"):
        for code in inst.code:
            if code is None:
                continue
            try:
                if not eval(code, names):  # noqa: S307 - the spec's own rule, as the kernel runs it
                    valid = False
            except Exception:  # noqa: BLE001 - a rule that raises rejects the case, as in the kernel
                valid = False
    return Measure(valid, recorder.seen)


def valid(case: Case, version) -> bool:
    m = measure(case, version)
    return m is not None and m.valid


_SCALAR_RULE = re.compile(r"(?:np\.ndim\((\w+)\)|(\w+)\.ndim)\s*==\s*0|(?:np\.size\((\w+)\)|(\w+)\.size)\s*==\s*1")


@cache_by_identity
def scalar_inputs(version) -> frozenset:
    """Inputs a rule says hold one value (``np.ndim(min) == 0``, ``np.size(x) == 1``)."""
    names = set()
    for rule in parse_rules(version):
        for m in _SCALAR_RULE.finditer(rule.expression):
            names |= {g for g in m.groups() if g}
    return frozenset(names & {pyname(p.name) for p in version.inputs})


# ---------------------------------------------------------------------------------------------
# knobs: what a variant may move


@dataclass(frozen=True)
class Knob:
    kind: str  # "attribute" (an int), "item" (of an ints attribute), "value" (of an integer input), "extent"
    name: str
    index: int = 0

    def describe(self) -> str:
        if self.kind == "attribute":
            return self.name
        if self.kind == "extent":
            return f"{self.name}.shape[{self.index}]"
        return f"{self.name}[{self.index}]"

    @property
    def is_axis(self) -> bool:
        return "axis" in self.name or "axes" in self.name


def _input_index(case: Case, name: str) -> int | None:
    return next((i for i, (n, _) in enumerate(case.inputs) if n == name), None)


def is_flag(attr) -> bool:
    """An int attribute defaulting to 0 or 1 (keepdims, sorted, saturate ...): a switch, not a quantity."""
    return attr.type == "int" and attr.has_default and attr.default in (0, 1) and not isinstance(attr.default, bool)


def knobs(case: Case, version, frozen=frozenset(), kinds=("attribute", "item", "value", "extent"),
          flags: bool = True) -> list[Knob]:
    """The quantities of ``case`` a variant may move, in a fixed order (attributes, then input
    values, then extents); none of the ``frozen`` names, no type attribute and no enumerated one
    (and, without ``flags``, no flag)."""
    out: list[Knob] = []
    given = case.kernel_attributes()
    for a in version.attributes:
        if a.name in frozen or a.name in TYPE_FIXING or (a.domain is not None and a.domain.values is not None):
            continue
        if not flags and is_flag(a):
            continue
        value = given.get(a.name)
        if "attribute" in kinds and a.type == "int" and isinstance(value, (int, np.integer)) \
                and not isinstance(value, bool):
            out.append(Knob("attribute", a.name))
        elif "item" in kinds and a.type == "ints" and isinstance(value, (list, tuple)) and 0 < len(value) <= MAX_VALUES:
            out += [Knob("item", a.name, i) for i in range(len(value))]
    for name, arr in case.inputs:
        if name in frozen or not isinstance(arr, np.ndarray):
            continue
        if "value" in kinds and arr.dtype.kind in "iu" and 0 < arr.size <= MAX_VALUES:
            out += [Knob("value", name, i) for i in range(arr.size)]
    if "extent" in kinds:
        for name, arr in case.inputs:
            if name in frozen or not isinstance(arr, np.ndarray) or arr.dtype.kind in "iu" and arr.size <= MAX_VALUES:
                continue
            out += [Knob("extent", name, axis) for axis in range(arr.ndim)]
    return out


def get(case: Case, knob: Knob) -> int:
    if knob.kind == "attribute":
        return int(case.kernel_attributes()[knob.name])
    if knob.kind == "item":
        return int(case.kernel_attributes()[knob.name][knob.index])
    arr = case.inputs[_input_index(case, knob.name)][1]
    return int(arr.shape[knob.index]) if knob.kind == "extent" else int(arr.reshape(-1)[knob.index])


def _with_input(case: Case, index: int, arr) -> Case:
    inputs = list(case.inputs)
    inputs[index] = (inputs[index][0], arr)
    return dataclasses.replace(case, inputs=tuple(inputs), siblings=0)


def resized(arr: np.ndarray, axis: int, n: int, elem: str | None, seed: int = 0) -> np.ndarray:
    """``arr`` with ``n`` entries along ``axis``: its own values cut, or repeated in turn (an empty
    axis is filled with small values of its type)."""
    old = arr.shape[axis]
    if n <= old:
        return np.ascontiguousarray(np.take(arr, np.arange(n), axis=axis))
    if old > 0:
        return np.ascontiguousarray(np.take(arr, np.arange(n) % old, axis=axis))
    shape = list(arr.shape)
    shape[axis] = n
    if elem is None:
        return np.zeros(shape, dtype=arr.dtype)
    return fill(elem, tuple(shape), "small", seed).astype(arr.dtype, copy=False)


def input_elem(case: Case, version, name: str) -> str | None:
    """The element type of the formal input ``name`` in the case's binding (None: no such input,
    or its type cannot be generated)."""
    param = input_parameter(version, name)
    try:
        return param_elem(param, case.type_map) if param is not None else None
    except NotGeneratable:
        return None


def moved(case: Case, version, knob: Knob, value: int) -> Case | None:
    """``case`` with ``knob`` at ``value``; None when the value does not fit (a negative extent, an
    integer out of its type, more than MAX_ELEMENTS elements ...)."""
    value = int(value)
    if knob.kind == "extent":
        if not 0 <= value <= MAX_EXTENT:
            return None
    elif abs(value) > MAX_VALUE:
        return None
    if knob.kind in ("attribute", "item"):
        attr = version.attribute(knob.name)
        dom = attr.domain if attr is not None else None
        if dom is not None and ((dom.min is not None and value < dom.min) or (dom.max is not None and value > dom.max)):
            return None
        if knob.kind == "attribute":
            return with_attribute(case, knob.name, value)
        items = list(case.kernel_attributes()[knob.name])
        items[knob.index] = value
        return with_attribute(case, knob.name, items)
    i = _input_index(case, knob.name)
    arr = case.inputs[i][1]
    if knob.kind == "value":
        lo, hi = INT_RANGES.get(input_elem(case, version, knob.name) or "", (np.iinfo(arr.dtype).min, np.iinfo(arr.dtype).max))
        if not lo <= value <= hi:
            return None
        flat = arr.reshape(-1).copy()
        flat[knob.index] = value
        return _with_input(case, i, flat.reshape(arr.shape))
    shape = list(arr.shape)
    shape[knob.index] = value
    if int(np.prod(shape)) > MAX_ELEMENTS:
        return None
    return _with_input(case, i, resized(arr, knob.index, value, input_elem(case, version, knob.name), value))


# ---------------------------------------------------------------------------------------------
# boundaries


@dataclass(frozen=True)
class Boundary:
    """A variant that puts one relation at ``left - right == target``."""

    relation: Relation
    target: int  # 0: equal; -1/+1: one step below/above
    knob: Knob
    value: int
    case: Case

    @property
    def text(self) -> str:
        where = {0: "at", 1: "one past", -1: "one short of"}[self.target]
        return f"{self.knob.describe()}={self.value}: {self.relation.text} {where} equality"


TARGETS = (0, -1, 1)


def boundaries(case: Case, version, frozen=frozenset()) -> list[Boundary]:
    """Variants of ``case`` that put a relation its rules state at its boundary (equal) or one step
    either side, each moving one knob, kept when every rule still holds; in a fixed order: first
    the relations between two quantities at equality, then those against a constant, then one step
    either side, taking the relations in turn."""
    base = measure(case, version)
    if base is None or not base.valid or not base.seen:
        return []
    by_key = {r.key: r for r in relations(version)}
    found: dict[tuple, list] = {}  # (tier, relation key) -> [(knob, value, occurrence key)]
    for knob in knobs(case, version, frozen):
        v0 = get(case, knob)
        for step in (1, -1):
            other = moved(case, version, knob, v0 + step)
            after = measure(other, version) if other is not None else None
            if after is None:
                continue
            for occ, d0 in base.seen.items():
                d1 = after.seen.get(occ)
                relation = by_key.get(occ[:3])
                if d1 is None or relation is None or d1 == d0:
                    continue
                slope = (d1 - d0) / step
                for target in TARGETS:
                    if d0 == target:
                        continue
                    dv = (target - d0) / slope
                    if dv * step <= 0 or dv != int(dv):
                        continue  # the solution lies on the other side of v0, or between integers
                    tier = (0 if not relation.constant_side else 1) if target == 0 else 2
                    found.setdefault((tier, relation.key, target), []).append((knob, v0 + int(dv), occ))
    # tier by tier; within a tier in turn: the first candidate of each relation, then the second ...
    order, seen = [], set()
    for tier in sorted({k[0] for k in found}):
        keys = sorted(k for k in found if k[0] == tier)
        depth = 0
        while any(depth < len(found[k]) for k in keys):
            order += [(k, *found[k][depth]) for k in keys if depth < len(found[k])]
            depth += 1
    out = []
    for (tier, rkey, target), knob, value, occ in order:
        if (knob, value) in seen:
            continue
        seen.add((knob, value))
        variant = moved(case, version, knob, value)
        m = measure(variant, version) if variant is not None else None
        if m is None or not m.valid or m.seen.get(occ) != target:
            continue
        out.append(Boundary(by_key[rkey], target, knob, value, variant))
    return out


__all__ = ["Relation", "Knob", "Boundary", "Measure", "relations", "measure", "valid", "knobs", "get", "moved",
           "resized", "boundaries", "instrumented", "namespace", "scalar_inputs", "is_flag"]
