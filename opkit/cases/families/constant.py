"""Family ``constant``: Constant. Exactly one of its value attributes is set, and it agrees with
the bound output type (``value_float(s)`` only for float, ``value_int(s)`` only for int64,
``value_string(s)`` only for string; the tensor ``value`` for any type)."""

from __future__ import annotations

from hypothesis import strategies as st

from ...strategies import ABSENT, NotGeneratable
from ..context import Context, Draft, dims, values

# value attribute -> (the output element type it implies, whether it is a list)
_TYPED = {"value_float": ("float", False), "value_floats": ("float", True), "value_int": ("int64", False),
          "value_ints": ("int64", True), "value_string": ("string", False), "value_strings": ("string", True)}


def draw(draw, ctx: Context) -> Draft:
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
