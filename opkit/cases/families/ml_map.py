"""Family ``ml_map``: ai.onnx.ml's map ops, CastMap, DictVectorizer and ZipMap.

Each hook builds the map (``opkit.cases.containers.draw_map``) and the attributes that must agree
with it and with the type binding: CastMap's ``cast_to`` names the bound output type and SPARSE
keys are positions below ``max_map``; DictVectorizer's vocabulary has the map's key type and holds
every key of the map; ZipMap's class labels have the bound output map's key type and are as many
as X has columns. Values whose conversion the text leaves undefined are not drawn (see the rules
of CastMap: a float as text, a fractional float as int64, non-numeric text as a number).
"""

from __future__ import annotations

from hypothesis import strategies as st

from ...core.values import inner_type, make_map, map_types
from ..case import ABSENT, NotGeneratable
from ..containers import MAX_MAP, draw_map, map_keys, map_values
from ..context import Context, Draft, by_op, values

_CAST_TO = {"float": "TO_FLOAT", "int64": "TO_INT64", "string": "TO_STRING"}
# decimal text a string converts from (CastMap's C2): integers for TO_INT64, any number for TO_FLOAT
_INT_TEXT = ("0", "7", "-3", "+12", "42", "-9223372036854775808", "9223372036854775807", "100000")
_FLOAT_TEXT = _INT_TEXT[:5] + ("-2.5", "0.1", ".5", "3.", "1e3", "-1.25E-2", "3.4028235e38", "1e-45", "0.0")
# floats that are integers in int64's range (exact in float32), for a conversion to int64
_INTEGRAL = st.one_of(st.integers(-1000, 1000), st.sampled_from((2**62, -(2**63), 2**24 + 2, -(2**40))))


def _bound(ctx: Context, param: str) -> str:
    return ctx.binding[param]


def _cast_map(draw, ctx: Context) -> Draft:
    key_type, value_type = map_types(_bound(ctx, "T1"))
    target = _CAST_TO[ctx.output_elem("Y")]
    if value_type != "string" and target == "TO_STRING":
        raise NotGeneratable("CastMap of a float map to TO_STRING: the text defines no format (rule C2)")
    sparse = draw(st.booleans())
    attrs = {"cast_to": target, "map_form": "SPARSE" if sparse else "DENSE"}
    if sparse:
        max_map = draw(st.integers(1, 8))
        attrs["max_map"] = max_map
        if target == "TO_STRING":  # every position from the map (rule C3)
            keys = list(range(max_map))
        else:
            keys = draw(st.lists(st.integers(0, max_map - 1), min_size=1, max_size=min(MAX_MAP, max_map),
                                 unique=True))
    else:
        keys = map_keys(draw, key_type)
    if value_type == "string" and target != "TO_STRING":
        pool = _INT_TEXT if target == "TO_INT64" else _FLOAT_TEXT
        items = draw(st.lists(st.sampled_from(pool), min_size=len(keys), max_size=len(keys)))
    elif target == "TO_INT64":
        items = [float(v) for v in draw(st.lists(_INTEGRAL, min_size=len(keys), max_size=len(keys)))]
    else:
        items = map_values(draw, value_type, len(keys))
    return Draft(attributes=attrs, inputs={"X": make_map(zip(keys, items), key_type, value_type)})


def _dict_vectorizer(draw, ctx: Context) -> Draft:
    type_str = _bound(ctx, "T1")
    key_type, value_type = map_types(type_str)
    vocabulary = map_keys(draw, key_type)
    if value_type == "string":  # every key (rule V5)
        keys = list(vocabulary)
    else:
        keys = draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=len(vocabulary), unique=True))
    ints = key_type == "int64"  # the other vocabulary stays undefined (rule V1)
    attrs = {"int64_vocabulary": vocabulary if ints else ABSENT, "string_vocabulary": ABSENT if ints else vocabulary}
    return Draft(attributes=attrs, inputs={"X": draw_map(draw, type_str, keys)})


def _zip_map(draw, ctx: Context) -> Draft:
    key_type, _ = map_types(inner_type(_bound(ctx, "T")))
    labels = map_keys(draw, key_type)
    rows = draw(st.integers(0, 4))
    ints = key_type == "int64"  # the other label list stays undefined (rule Z1)
    attrs = {"classlabels_int64s": labels if ints else ABSENT, "classlabels_strings": ABSENT if ints else labels}
    return Draft(attributes=attrs, inputs={"X": values(draw, "float", (rows, len(labels)))})


draw = by_op("ml_map", {"CastMap": _cast_map, "DictVectorizer": _dict_vectorizer, "ZipMap": _zip_map})
