"""Family ``constant``: ops that make a tensor from attributes.

- Constant: exactly one of its value attributes is set, and it agrees with the bound output type
  (``value_float(s)`` only for float, ``value_int(s)`` only for int64, ``value_string(s)`` only
  for string; the tensor ``value`` for any type).
- directml::DiagonalMatrix1: with an InputTensor of rank 2 to 4 (OutputSizes absent or equal to its
  shape) or without one (OutputSizes then required); Value a 0-D tensor of T; the fill range
  ordered, empty or inverted, sometimes at the INT32 limits.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ..case import ABSENT, NotGeneratable
from ..context import Context, Draft, dims, values

# value attribute -> (the output element type it implies, whether it is a list)
_TYPED = {"value_float": ("float", False), "value_floats": ("float", True), "value_int": ("int64", False),
          "value_ints": ("int64", True), "value_string": ("string", False), "value_strings": ("string", True)}


_INT32 = (-2**31, 2**31 - 1)


def _diagonal_matrix(draw, ctx: Context) -> Draft:
    elem = ctx.elem("InputTensor")
    shape = dims(draw, draw(st.integers(2, 4)), low=0, high=4)
    given = draw(st.booleans())
    edge = st.sampled_from(_INT32)
    fill = st.one_of(st.integers(-5, 5), edge) if draw(st.integers(0, 5)) == 0 else st.integers(-5, 5)
    attrs = {"Value": values(draw, elem, ()), "DiagonalFillBegin": draw(fill), "DiagonalFillEnd": draw(fill),
             "OutputSizes": list(shape) if not given or draw(st.booleans()) else ABSENT}
    return Draft(attrs, {"InputTensor": values(draw, elem, shape) if given else None})


def draw(draw, ctx: Context) -> Draft:
    if ctx.op == "DiagonalMatrix1":
        return _diagonal_matrix(draw, ctx)
    out = ctx.version.outputs[0]
    elem = ctx.output_elem(out.name)
    choices = [name for name, (typed, _) in _TYPED.items() if typed == elem and ctx.has_attribute(name)]
    if ctx.has_attribute("value"):
        choices.append("value")
    if not choices:
        raise NotGeneratable(f"Constant-{ctx.since} has no value attribute for element type {elem}")
    chosen = draw(st.sampled_from(choices))
    attrs = {a.name: ABSENT for a in ctx.version.attributes}
    if chosen == "value":
        attrs["value"] = values(draw, elem, dims(draw, draw(st.integers(0, 3)), low=0, high=3))
    else:
        _, is_list = _TYPED[chosen]
        arr = values(draw, elem, (draw(st.integers(0, 4)),) if is_list else ())
        items = arr.tolist()
        attrs[chosen] = items if is_list else items
    return Draft(attrs, {})
