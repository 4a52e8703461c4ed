"""Relational edge strategies: cases where one quantity meets another it is combined with.

Implementations take another path where a relation between two quantities of a case sits at its
boundary: k equal to the length of TopK's axis, pads as large as the dimension they crop, a slice
end at or past the extent, a window as large as its padded input (an output extent of 1), an output
extent of 0, a zero-size extent broadcast against 1 or against a missing dimension. Each strategy
here turns a drawn valid case into one such case, derived from the version's own rules and
reference kernel, never from a list per op:

- ``rule_boundary``: a comparison a rule states put at equality, or one step either side
  (``opkit.cases.relational``);
- ``at_extent``: an integer input or attribute value set to an extent of another input, or one past;
- ``output_extent``: one knob moved so that an output extent becomes 0 or 1 (slopes read off the
  reference kernel's output shapes);
- ``zero_broadcast``: an extent of 0 against 1 or against a missing leading dimension.

Each variant is checked before it is returned: the rules must hold and the reference kernel must
accept it (at most a few candidates per variant), so the edge sweep also applies these to a family
hook's cases. Deterministic: a function of (case, version, seed, variant).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .case import Case
from .relational import Knob, boundaries, get, knobs, moved, resized, valid

RULE_VARIANTS = 3  # rule boundaries the sweep runs per binding
KERNEL_TRIES = 6  # candidates checked with the reference kernel per variant
MAX_KNOBS = 10  # knobs whose slope ``output_extent`` reads (two kernel calls each)
_MEMO_SIZE = 256


# ---------------------------------------------------------------------------------------------
# the reference kernel's view


def outputs(case: Case) -> tuple | None:
    """The shapes of the reference kernel's outputs for ``case`` (None for an output that is not
    a tensor); None when the kernel rejects the inputs or there is none."""
    from ..kernels.registry import get_kernel

    fn = get_kernel(case.domain, case.op, case.since)
    if fn is None:
        return None
    extra = {"_n_outputs": case.n_outputs} if case.n_outputs else {}
    try:
        with np.errstate(all="ignore"):
            out = fn(*case.positional(), **case.kernel_attributes(), **extra)
    except Exception:  # noqa: BLE001 - rejected (a rule, a shape that does not fit): not a variant
        return None
    out = out if isinstance(out, tuple) else (out,)
    return tuple(tuple(o.shape) if isinstance(o, np.ndarray) else None for o in out)


_MEMO: dict = {}


def _memo(kind: str, case: Case, version, frozen, compute):
    """One computation per (kind, case, version, frozen) while the case is alive (the sweep asks
    each base for several variants)."""
    key = (kind, id(case), id(version), frozen)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is case and hit[1] is version:
        return hit[2]
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    value = compute()
    _MEMO[key] = (case, version, value)
    return value


def holds(case: Case, version) -> bool:
    """The rules of the version hold for ``case``, and so does what its family hook keeps valid by
    construction beyond them (``families.edge_check``: pooling pads below the kernel, Pad's reflect
    below the axis size)."""
    if not valid(case, version):
        return False
    if case.n_outputs:  # a node that declares its outputs: the moved case must still give that many
        # (Split-18's num_outputs moved to 1 with two outputs declared aborts ONNX's own shape
        # inference, in this process: a model ONNX calls invalid, never a test input)
        shapes = outputs(case)
        if shapes is None or len(shapes) != case.n_outputs:
            return False
    from .families import edge_check

    check = edge_check(getattr(version, "family", None))
    return check is None or bool(check(case, version))


def _note(case: Case, text: str) -> Case:
    """The variant, saying what it changed (``apply_edge`` puts the strategy's name in front)."""
    return dataclasses.replace(case, edge=text, siblings=0)


def _safe(fn):
    """A strategy that returns None, never raises, where a spec shape it did not foresee makes it
    fail (an edge is an extra case: it must not stop the draw or the sweep)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001
            return None

    return wrapper


def _pick(found: list, rng, variant):
    if not found:
        return None
    if variant is None:
        return found[int(rng.integers(0, len(found)))]
    return found[variant] if isinstance(variant, int) and variant < len(found) else None


# ---------------------------------------------------------------------------------------------
# rule boundaries


def _checked_boundaries(case: Case, version, frozen) -> list:
    out, tries = [], 0
    for b in boundaries(case, version, frozen):
        if len(out) >= RULE_VARIANTS or tries >= RULE_VARIANTS + KERNEL_TRIES:
            break
        tries += 1
        if holds(b.case, version) and outputs(b.case) is not None:
            out.append(b)
    return out


@_safe
def rule_boundary(case: Case, version, rng, frozen=frozenset(), variant=None) -> Case | None:
    """A relation a rule of the version states (``k <= x.shape[axis]``, ``pads[i] < dim``) put
    at equality or one step either side, by moving one side (variant: the k-th such case in the
    order of ``relational.boundaries``: relations of two quantities at equality first)."""
    found = _memo("rules", case, version, frozen, lambda: _checked_boundaries(case, version, frozen))
    b = _pick(found, rng, variant)
    return None if b is None else _note(b.case, b.text)


def has_relations(version) -> bool:
    """A comparison that is not an equality with a constant, over a quantity a variant can move:
    an extent (``.shape``), an int or ints attribute, or the values of an input (not only its
    ``.ndim``, ``.size`` or ``.dtype``)."""
    import re

    from ..spec.scopes import pyname
    from .relational import relations

    attrs = {pyname(a.name) for a in version.attributes if a.type in ("int", "ints")}
    inputs = {pyname(p.name) for p in version.inputs}
    for r in relations(version):
        if r.op == "==" and r.constant_side:
            continue
        text = re.sub(r"\b(\w+)\.(ndim|dtype|size)\b|np\.(ndim|size)\(\w+\)", " ", r.text)
        names = set(re.findall(r"[A-Za-z_]\w*", text))
        if "shape" in names or names & attrs or names & inputs:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# an integer operand at an extent


def _value_knobs(case: Case, version, frozen) -> list[Knob]:
    return [k for k in knobs(case, version, frozen, ("attribute", "item", "value"), flags=False) if not k.is_axis]


def _extents(case: Case, exclude: str | None) -> list[int]:
    found = sorted({d for name, arr in case.inputs if name != exclude and isinstance(arr, np.ndarray)
                    and not (arr.dtype.kind in "iu" and arr.size <= 8) for d in arr.shape if d >= 1})
    return found


def _shape_related(version) -> set[str]:
    """Names (pynames) that a rule compares with an extent: ``k`` in ``k <= x.shape[axis]``."""
    import re

    from .relational import relations

    out = set()
    for r in relations(version):
        if "shape" in r.text:
            out |= set(re.findall(r"[A-Za-z_]\w*", r.text))
    return out


def _at_extent_candidates(case: Case, version, frozen, past: bool) -> list:
    """(knob, value, extent): a scalar int attribute only where a rule compares it with an extent
    (not a code such as softmax_precision, nor a norm order); a negative value only for a knob
    whose input or attribute holds a negative value already (pads that crop, starts counted from
    the end), never for a count or a length."""
    from ..spec.scopes import pyname

    related = _shape_related(version)
    given = case.kernel_attributes()
    out = []
    for knob in _value_knobs(case, version, frozen):
        if knob.kind == "attribute" and pyname(knob.name) not in related:
            continue
        group = given.get(knob.name) if knob.kind != "value" else dict(case.inputs).get(knob.name)
        signed = any(int(v) < 0 for v in np.ravel(np.asarray(group, dtype=object)))
        v0 = get(case, knob)
        for e in _extents(case, knob.name if knob.kind == "value" else None):
            for value in ((e + 1, -e - 1) if past else (e, -e)):
                if value != v0 and (value >= 0 or signed):
                    out.append((knob, value, e))
    return out


@_safe
def at_extent(case: Case, version, rng, frozen=frozenset(), variant=None) -> Case | None:
    """One integer input value or int attribute (k, pads, starts, ends, repeats ...; not an axis)
    set to an extent of another input, or its negative (variant "equal"), or one past (variant
    "past"), kept when the rules hold and the reference kernel accepts it."""
    if variant not in (None, "equal", "past"):
        return None
    past = rng.random() < 0.5 if variant is None else variant == "past"
    candidates = _memo(f"extent {past}", case, version, frozen,
                       lambda: _at_extent_candidates(case, version, frozen, past))
    if not candidates:
        return None
    start = int(rng.integers(0, len(candidates)))
    tries = 0
    for j in range(len(candidates)):
        knob, value, e = candidates[(start + j) % len(candidates)]
        other = moved(case, version, knob, value)
        if other is None or not holds(other, version):
            continue
        tries += 1
        if outputs(other) is not None:
            return _note(other, f"{knob.describe()}={value} against an extent of {e}")
        if tries >= KERNEL_TRIES:
            break
    return None


def has_integer_operand(version) -> bool:
    """An integer input (or int/ints attribute) that is not an axis, next to another input; for a
    version a family hook builds, only where the family states what it keeps valid beyond the
    rules (``families.edge_check``: the window and shape families), since these variants move the
    hook's sizes (RNN sequence lengths past the sequence, Attention's lengths) where only the rules
    would check them."""
    from ..core.onnx_types import INT_RANGES

    from .families import edge_check
    from .relational import is_flag

    if getattr(version, "family", None) and edge_check(version.family) is None:
        return False

    tensor_inputs = len(version.inputs)
    ints = any(a.type in ("int", "ints") and "axis" not in a.name and "axes" not in a.name and not is_flag(a)
               and not (a.domain is not None and a.domain.values is not None) for a in version.attributes)
    for p in version.inputs:
        tc = version.type_constraint(p.type)
        types = {t[7:-1] for t in (tc.types if tc is not None else [p.type]) if t.startswith("tensor(")}
        if types and types <= set(INT_RANGES) and "axis" not in p.name and "axes" not in p.name:
            ints = ints or tensor_inputs > 1
    return ints


# ---------------------------------------------------------------------------------------------
# output extents of 0 and 1


def _output_candidates(case: Case, version, frozen) -> dict[int, list]:
    """Per target extent (0, 1): (knob, value, (output, axis)) that the kernel's output shapes say
    reach it, by the slope each knob gives them (two kernel calls per knob)."""
    base = outputs(case)
    found: dict[int, list] = {0: [], 1: []}
    if base is None:
        return found
    chosen = [k for k in knobs(case, version, frozen, flags=False) if not k.is_axis]
    chosen = ([k for k in chosen if k.kind != "extent"] + [k for k in chosen if k.kind == "extent"])[:MAX_KNOBS]
    for knob in chosen:
        v0 = get(case, knob)
        for step in (1, -1):
            other = moved(case, version, knob, v0 + step)
            after = outputs(other) if other is not None else None
            if after is None:
                continue
            for i, (s0, s1) in enumerate(zip(base, after)):
                if s0 is None or s1 is None or len(s0) != len(s1):
                    continue
                for axis, (d0, d1) in enumerate(zip(s0, s1)):
                    if d0 == d1:
                        continue
                    slope = (d1 - d0) / step
                    for target in (0, 1):
                        dv = (target - d0) / slope
                        if d0 == target or dv * step <= 0 or dv != int(dv):
                            continue
                        value = v0 + int(dv)
                        if knob.kind == "extent" and value < 2:
                            continue  # an input extent of 0 or 1 is drawn already
                        found[target].append((knob, value, (i, axis)))
    return found


def _output_extent_variant(case: Case, version, frozen, target: int):
    candidates = _memo("outputs", case, version, frozen, lambda: _output_candidates(case, version, frozen))[target]
    seen, tries = set(), 0
    for knob, value, (i, axis) in candidates:
        if (knob, value) in seen:
            continue
        seen.add((knob, value))
        other = moved(case, version, knob, value)
        if other is None or not holds(other, version):
            continue
        tries += 1
        shapes = outputs(other)
        if shapes is not None and i < len(shapes) and shapes[i] is not None and axis < len(shapes[i]) \
                and shapes[i][axis] == target:
            return _note(other, f"{knob.describe()}={value}: output {i} extent {axis} is {target}")
        if tries >= KERNEL_TRIES:
            break
    return None


@_safe
def output_extent(case: Case, version, rng, frozen=frozenset(), variant=None) -> Case | None:
    """One knob (an int attribute, an integer input value, an input extent of 2 or more) moved so
    that an extent of an output becomes 0 (variant "0") or 1 (variant "1"): a window as large as
    its padded input, a slice whose start meets its end, k of 1 ..."""
    if variant not in (None, "0", "1"):
        return None
    target = (0 if rng.random() < 0.5 else 1) if variant is None else int(variant)
    found = _memo(f"output {target}", case, version, frozen,
                  lambda: _output_extent_variant(case, version, frozen, target))
    return found


# ---------------------------------------------------------------------------------------------
# zero-size extents against broadcasting


def broadcasts(version) -> bool:
    """A text that speaks of broadcasting, over two or more inputs that take any rank (no rank
    rule) and hold more than one value (not Clip's min and max)."""
    from ..spec.scopes import pyname
    from .relational import scalar_inputs

    if "broadcast" not in (version.doc or "").lower():
        return False
    scalars = scalar_inputs(version)
    free = [p for p in version.inputs if p.rank is None and pyname(p.name) not in scalars]
    return len(free) >= 2 or any(p.option == "variadic" for p in free)


def _zero_candidates(case: Case, version, frozen, missing: bool) -> list[Case]:
    from .relational import scalar_inputs

    scalars = scalar_inputs(version)
    tensors = [(i, arr) for i, (name, arr) in enumerate(case.inputs)
               if name not in frozen and name not in scalars and isinstance(arr, np.ndarray)]
    if len(tensors) < 2 or any(name in frozen for name, _ in case.inputs):
        return []
    out = []
    top = max(arr.ndim for _, arr in tensors)
    if missing:
        if top >= 6:
            return []
        for i, arr in tensors:
            if arr.ndim == top:
                inputs = list(case.inputs)
                inputs[i] = (inputs[i][0], np.zeros((0,) + arr.shape, dtype=arr.dtype))
                out.append((dataclasses.replace(case, inputs=tuple(inputs), siblings=0),
                            f"{case.inputs[i][0]} gets a leading extent of 0 the other inputs lack"))
        return out
    for p in range(1, top + 1):  # the p-th axis from the right
        having = [(i, arr) for i, arr in tensors if arr.ndim >= p]
        if len(having) < 2:
            continue
        for i, arr in having:
            inputs = list(case.inputs)
            shape = list(arr.shape)
            shape[-p] = 0
            inputs[i] = (inputs[i][0], np.zeros(shape, dtype=arr.dtype))
            for j, other in having:
                if j != i:
                    inputs[j] = (inputs[j][0], resized(other, other.ndim - p, 1, None))
            out.append((dataclasses.replace(case, inputs=tuple(inputs), siblings=0),
                        f"{case.inputs[i][0]} has extent 0 against 1 at axis {-p}"))
    return out


@_safe
def zero_broadcast(case: Case, version, rng, frozen=frozenset(), variant=None) -> Case | None:
    """An extent of 0 in one input against an extent of 1 at the same axis of the others (variant
    "against 1"), or a leading extent of 0 the other inputs lack (variant "against missing")."""
    if variant not in (None, "against 1", "against missing"):
        return None
    missing = rng.random() < 0.5 if variant is None else variant == "against missing"
    candidates = _zero_candidates(case, version, frozen, missing)
    if not candidates:
        return None
    start = int(rng.integers(0, len(candidates)))
    tries = 0
    for j in range(len(candidates)):
        other, text = candidates[(start + j) % len(candidates)]
        if not holds(other, version):
            continue
        tries += 1
        shapes = outputs(other)
        if shapes is not None and any(s is not None and 0 in s for s in shapes):
            return _note(other, text)
        if tries >= KERNEL_TRIES:
            break
    return None


__all__ = ["rule_boundary", "at_extent", "output_extent", "zero_broadcast", "has_relations", "has_integer_operand",
           "broadcasts", "outputs"]
