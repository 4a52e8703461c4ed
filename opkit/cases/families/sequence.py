"""Family ``sequence``: the ops whose inputs or outputs are sequences or optionals.

Values are held as ``opkit.core.values`` says: a sequence is a list of arrays of the element type its
type parameter is bound to (0 to 4 of them), an empty optional is ``EMPTY_OPTIONAL``. Per op:

- SequenceLength, SequenceConstruct: tensors of any shapes (a sequence need not be homogeneous
  in shape); SequenceEmpty has nothing to draw (its ``dtype`` follows the binding).
- SequenceAt, SequenceErase: at least one tensor; ``position`` a scalar in [-n, n-1] (Erase may
  leave it out: the last tensor goes).
- SequenceInsert: 0 to 4 tensors, the inserted tensor of the same element type, ``position``
  absent or in [-n, n].
- ConcatFromSequence: 1 to 4 tensors of one rank r whose shapes agree except along ``axis`` in
  [-r, r-1]; with ``new_axis`` = 1 identical shapes (any rank, scalars too) and ``axis`` in
  [-r-1, r].
- SplitToSequence: a rank >= 1 input, ``axis`` in [-r, r-1]; ``split`` absent (chunks of 1,
  ``keepdims`` applies), a positive scalar, or positive lengths summing to the axis' size.
- Optional: an input tensor or sequence (the ``type`` attribute sometimes given too, naming the
  input's type) or no input and ``type`` naming the element type.
- OptionalHasElement: an optional holding a value or empty; from version 18 also a plain tensor
  or sequence, or no input at all.
- OptionalGetElement: an optional that holds a value (an empty one is an error whose behaviour
  ONNX leaves undefined), from version 18 also a plain tensor or sequence.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..case import ABSENT, NotGeneratable
from ...core.values import element_of
from ..containers import MAX_SEQUENCE, draw_value
from ..context import Context, Draft, axis_in, by_op, dims, int_tensor, values

MAX_TENSORS = MAX_SEQUENCE
MAX_RANK = 3
_BOOL = st.booleans()


def _bound(ctx: Context, name: str) -> str:
    """The type string the binding gives input ``name`` (``seq(tensor(float))``, ``tensor(int32)`` ...)."""
    param = ctx.input(name)
    return ctx.binding.get(param.type, param.type)


def _elem(ctx: Context, name: str) -> str:
    elem = element_of(_bound(ctx, name))
    if elem is None:
        raise NotGeneratable(f"{ctx.op}-{ctx.since}: input {name!r} is bound to {_bound(ctx, name)}")
    return elem


def _shape(draw, rank: int | None = None, low: int = 0) -> list[int]:
    rank = draw(st.integers(0, MAX_RANK)) if rank is None else rank
    return dims(draw, rank, low=low, high=3)


def _tensors(draw, elem: str, count: int) -> list:
    """``count`` tensors: one shared shape, or a shape each (ranks may differ)."""
    if count and draw(_BOOL):
        shape = _shape(draw)
        return [values(draw, elem, shape) for _ in range(count)]
    return [values(draw, elem, _shape(draw)) for _ in range(count)]


def _sequence(draw, ctx: Context, name: str, min_len: int = 0) -> list:
    return _tensors(draw, _elem(ctx, name), draw(st.integers(min_len, MAX_TENSORS)))


def _position(draw, ctx: Context, name: str, low: int, high: int):
    """A scalar of the position input's integer type in [low, high]."""
    return int_tensor(ctx.elem(name), draw(st.integers(low, high)), ())


def _value(draw, type_str: str, allow_empty: bool):
    """A tensor, sequence or optional value of ``type_str`` (an optional empty when allowed and drawn)."""
    return draw_value(draw, type_str, lambda elem, count: _tensors(draw, elem, count), allow_empty=allow_empty)


# ---------------------------------------------------------------------------------------------
# per op


def _length(draw, ctx: Context) -> Draft:
    return Draft(inputs={"input_sequence": _sequence(draw, ctx, "input_sequence")})


def _construct(draw, ctx: Context) -> Draft:
    param = ctx.input("inputs")
    count = draw(st.integers(max(1, param.min_arity), MAX_TENSORS))
    return Draft(inputs={"inputs": _tensors(draw, ctx.elem("inputs"), count)})


def _empty(draw, ctx: Context) -> Draft:
    return Draft()


def _at(draw, ctx: Context) -> Draft:
    seq = _sequence(draw, ctx, "input_sequence", min_len=1)
    n = len(seq)
    return Draft(inputs={"input_sequence": seq, "position": _position(draw, ctx, "position", -n, n - 1)})


def _erase(draw, ctx: Context) -> Draft:
    seq = _sequence(draw, ctx, "input_sequence", min_len=1)  # erasing from an empty sequence is an error
    n = len(seq)
    position = _position(draw, ctx, "position", -n, n - 1) if draw(_BOOL) else None
    return Draft(inputs={"input_sequence": seq, "position": position})


def _insert(draw, ctx: Context) -> Draft:
    seq = _sequence(draw, ctx, "input_sequence")
    n = len(seq)
    tensor = values(draw, ctx.elem("tensor"), _shape(draw))
    position = _position(draw, ctx, "position", -n, n) if draw(_BOOL) else None
    return Draft(inputs={"input_sequence": seq, "tensor": tensor, "position": position})


def _concat(draw, ctx: Context) -> Draft:
    elem = _elem(ctx, "input_sequence")
    new_axis = draw(st.sampled_from((ABSENT, 0, 1)))
    count = draw(st.integers(1, MAX_TENSORS))  # concatenating nothing is an error
    if new_axis == 1:  # stacking: identical shapes, the new axis anywhere in [-r-1, r]
        shape = _shape(draw)
        axis = axis_in(draw, len(shape), end=True)
        seq = [values(draw, elem, shape) for _ in range(count)]
    else:  # concatenating: one rank >= 1, shapes equal except along axis
        shape = _shape(draw, draw(st.integers(1, MAX_RANK)))
        axis = axis_in(draw, len(shape))
        seq = []
        for _ in range(count):
            own = list(shape)
            own[axis] = draw(st.integers(0, 3))
            seq.append(values(draw, elem, own))
    return Draft(attributes={"new_axis": new_axis, "axis": axis}, inputs={"input_sequence": seq})


def _split(draw, ctx: Context) -> Draft:
    shape = _shape(draw, draw(st.integers(1, MAX_RANK)))
    axis = axis_in(draw, len(shape))
    mode = draw(st.sampled_from(("absent", "scalar", "lengths")))
    length = draw(st.integers(0 if mode == "absent" else 1, 4))  # positive lengths cannot sum to 0
    shape[axis] = length
    split = None
    if mode == "scalar":  # chunks of this size, the last one possibly shorter
        split = int_tensor(ctx.elem("split"), draw(st.integers(1, length + 1)), ())
    elif mode == "lengths":  # positive parts that sum to the axis' length
        cuts = sorted(draw(st.sets(st.integers(1, length - 1), max_size=length - 1))) if length > 1 else []
        bounds = [0] + cuts + [length]
        split = int_tensor(ctx.elem("split"), [b - a for a, b in zip(bounds, bounds[1:])])
    attrs = {"axis": axis if draw(_BOOL) or axis != 0 else ABSENT,
             "keepdims": draw(st.sampled_from((ABSENT, 0, 1)))}
    return Draft(attributes=attrs, inputs={"input": values(draw, ctx.elem("input"), shape), "split": split})


def _optional(draw, ctx: Context) -> Draft:
    element = _bound(ctx, "input")  # V: the tensor or sequence type the optional holds
    if draw(_BOOL):  # no input: an empty optional whose element type the attribute names
        return Draft(attributes={"type": element}, inputs={"input": None})
    return Draft(attributes={"type": element if draw(_BOOL) else ABSENT},
                 inputs={"input": _value(draw, element, allow_empty=False)})


def _has_element(draw, ctx: Context) -> Draft:
    bound = _bound(ctx, "input")
    if ctx.input("input").option == "optional" and draw(st.integers(0, 3)) == 0:
        return Draft(inputs={"input": None})  # version 18 on: no input at all reads as "no element"
    return Draft(inputs={"input": _value(draw, bound, allow_empty=True)})


def _get_element(draw, ctx: Context) -> Draft:
    return Draft(inputs={"input": _value(draw, _bound(ctx, "input"), allow_empty=False)})


_BUILDERS = {
    "SequenceLength": _length, "SequenceConstruct": _construct, "SequenceEmpty": _empty, "SequenceAt": _at,
    "SequenceErase": _erase, "SequenceInsert": _insert, "ConcatFromSequence": _concat,
    "SplitToSequence": _split, "Optional": _optional, "OptionalHasElement": _has_element,
    "OptionalGetElement": _get_element,
}


draw = by_op("sequence", _BUILDERS)
