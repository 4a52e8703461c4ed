"""Family ``ml``: the ai.onnx.ml ops on plain tensors, whose attributes are sized to the input.

Each builder draws the input's shape first (mostly [N, C] or [C], the layout the texts speak of),
then the attributes that must agree with it: Scaler's offset and scale of length 1 or C, Imputer's
imputed values per feature, the lookup tables of LabelEncoder / CategoryMapper / OneHotEncoder with
inputs that hit and miss them, FeatureVectorizer's inputdimensions, and the linear and SVM models'
coefficient matrices (classes x features) with exactly one kind of class labels.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..case import ABSENT, NotGeneratable
from ..context import Context, Draft, by_op, finite_values, values

_BOOL = st.booleans()
_SEED = st.integers(0, 2**32 - 1)
_WORDS = ("a", "b", "cat", "dog", "", "\u00e9t\u00e9", "Amy", "Sally", " x")
_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")


def _rows(draw, max_rank: int = 2, min_c: int = 1) -> tuple[int, ...]:
    """[N, C] or [C] (or, up to ``max_rank``, more leading axes), N in 0..3 and C in min_c..5."""
    c = draw(st.integers(min_c, 5))
    rank = draw(st.integers(1, max_rank))
    return tuple(draw(st.integers(0, 3)) for _ in range(rank - 1)) + (c,)


def _floats(draw, n: int) -> list[float]:
    """``n`` finite float32 values as attribute floats."""
    return [float(v) for v in finite_values(draw, "float", (n,))]


def _scaler(draw, ctx: Context) -> Draft:
    shape = _rows(draw)
    k = draw(st.sampled_from((1, shape[-1])))
    return Draft(attributes={"offset": _floats(draw, k), "scale": _floats(draw, k)},
                 inputs={"X": values(draw, ctx.elem("X"), shape)})


def _normalizer(draw, ctx: Context) -> Draft:
    return Draft(attributes={"norm": draw(st.sampled_from(("MAX", "L1", "L2")))},
                 inputs={"X": values(draw, ctx.elem("X"), _rows(draw))})


def _array_feature_extractor(draw, ctx: Context) -> Draft:
    shape = _rows(draw, max_rank=3)
    c = shape[-1]
    count = draw(st.integers(1, 4)) if draw(st.integers(0, 9)) else 0
    idx = [draw(st.integers(0, c - 1)) for _ in range(count)]
    layout = draw(st.sampled_from(("1d", "row", "col")))
    y = np.asarray(idx, dtype=np.int64)
    y = y.reshape(1, -1) if layout == "row" else (y.reshape(-1, 1) if layout == "col" else y)
    return Draft(inputs={"X": values(draw, ctx.elem("X"), shape), "Y": y})


def _imputer(draw, ctx: Context) -> Draft:
    elem = ctx.elem("X")
    shape = _rows(draw, max_rank=3)
    x = values(draw, elem, shape)
    k = draw(st.sampled_from((1, shape[-1])))
    flat = x.ravel()
    attrs: dict = {}
    if elem in ("float", "double"):
        replaced = draw(st.sampled_from(("nan", "present", "other")))
        if replaced == "nan":
            rv = float("nan")
        elif replaced == "present" and flat.size and np.isfinite(flat.astype(np.float64)).any():
            finite = flat[np.isfinite(flat.astype(np.float64))]
            rv = float(np.float32(finite[draw(st.integers(0, finite.size - 1))]))
        else:
            rv = float(np.float32(draw(st.sampled_from((0.0, -1.0, 1.5)))))
        attrs = {"imputed_value_floats": _floats(draw, k), "replaced_value_float": rv}
    else:
        lo, hi = (-2**31, 2**31 - 1) if elem == "int32" else (-2**63, 2**63 - 1)
        rv = int(flat[draw(st.integers(0, flat.size - 1))]) if flat.size and draw(_BOOL) else draw(st.integers(-2, 2))
        imputed = [draw(st.one_of(st.integers(-5, 5), st.integers(lo, hi))) for _ in range(k)]
        attrs = {"imputed_value_int64s": imputed, "replaced_value_int64": rv}
    return Draft(attributes=attrs, inputs={"X": x})


def _pool_for(draw, elem: str, n: int) -> list:
    """``n`` distinct keys of element ``elem``."""
    if elem == "string":
        return draw(st.lists(st.sampled_from(_WORDS), min_size=n, max_size=n, unique=True))
    if elem in ("float", "double"):
        pool = [0.5, -1.0, 2.0, 3.25, float("nan"), 7.0, -0.125, 1e10]
        return draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n, unique_by=repr))
    lo, hi = {"int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1)}.get(elem, (-2**63, 2**63 - 1))
    return draw(st.lists(st.one_of(st.integers(-3, 9), st.integers(lo, hi)), min_size=n, max_size=n, unique=True))


def _input_over(draw, elem: str, keys: list, shape) -> np.ndarray:
    """An input whose elements are keys (hits) or other values (misses)."""
    size = int(np.prod(shape, dtype=np.int64))
    misses = _pool_for(draw, elem, 3)
    choices = list(keys) + misses
    picked = [choices[draw(st.integers(0, len(choices) - 1))] for _ in range(size)]
    if elem == "string":
        arr = np.empty(size, dtype=object)
        arr[:] = picked
    else:
        arr = np.asarray(picked, dtype={"float": np.float32, "double": np.float64, "int16": np.int16,
                                        "int32": np.int32}.get(elem, np.int64))
    return arr.reshape(shape)


_LIST_ATTR = {"string": "strings", "int64": "int64s", "float": "floats"}


def _tensor_attr(elem: str, items: list) -> np.ndarray:
    if elem == "string":
        arr = np.empty(len(items), dtype=object)
        arr[:] = items
        return arr
    return np.asarray(items, dtype={"float": np.float32, "double": np.float64, "int16": np.int16,
                                    "int32": np.int32, "int64": np.int64}[elem])


def _label_encoder(draw, ctx: Context) -> Draft:
    x_elem, y_elem = ctx.elem("X"), ctx.output_elem("Y")
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=3)))
    if ctx.since == 1:
        if (x_elem == "string") == (y_elem == "string"):
            raise NotGeneratable("LabelEncoder-1 maps strings to integers or integers to strings")
        classes = _pool_for(draw, "string", draw(st.integers(1, 5)))
        if x_elem == "string":
            x = _input_over(draw, "string", classes, shape)
            return Draft(attributes={"classes_strings": classes, "default_int64": draw(st.integers(-3, 3))},
                         inputs={"X": x})
        x = _input_over(draw, "int64", list(range(len(classes))), shape)
        return Draft(attributes={"classes_strings": classes, "default_string": draw(st.sampled_from(_WORDS))},
                     inputs={"X": x})
    n = draw(st.integers(1, 5))
    keys = _pool_for(draw, x_elem, n)
    vals = [v for v in _pool_for(draw, y_elem, n)] if y_elem != "string" else \
        [draw(st.sampled_from(_WORDS)) for _ in range(n)]
    attrs: dict = {}
    use_tensor = ctx.since >= 4 and (x_elem not in _LIST_ATTR or draw(_BOOL))
    attrs.update({"keys_tensor": _tensor_attr(x_elem, keys)} if use_tensor else {f"keys_{_LIST_ATTR[x_elem]}": keys})
    use_tensor = ctx.since >= 4 and (y_elem not in _LIST_ATTR or draw(_BOOL))
    if use_tensor:
        attrs["values_tensor"] = _tensor_attr(y_elem, vals)
        if draw(_BOOL) or y_elem not in _LIST_ATTR:
            attrs["default_tensor"] = _tensor_attr(y_elem, _pool_for(draw, y_elem, 1))
    else:
        attrs[f"values_{_LIST_ATTR[y_elem]}"] = vals
    if "default_tensor" not in attrs and draw(_BOOL):
        attrs.update({"string": {"default_string": draw(st.sampled_from(_WORDS))},
                      "int64": {"default_int64": draw(st.integers(-3, 3))},
                      "float": {"default_float": draw(st.sampled_from((0.5, -2.0)))}}.get(y_elem, {}))
    return Draft(attributes=attrs, inputs={"X": _input_over(draw, x_elem, keys, shape)})


def _category_mapper(draw, ctx: Context) -> Draft:
    x_elem, y_elem = ctx.elem("X"), ctx.output_elem("Y")
    if (x_elem == "string") == (y_elem == "string"):
        raise NotGeneratable("CategoryMapper maps strings to integers or integers to strings")
    n = draw(st.integers(1, 5))
    strs, ints = _pool_for(draw, "string", n), _pool_for(draw, "int64", n)
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=3)))
    attrs = {"cats_strings": strs, "cats_int64s": ints}
    if x_elem == "string":
        attrs["default_int64"] = draw(st.one_of(st.just(ABSENT), st.integers(-3, 3)))
        x = _input_over(draw, "string", strs, shape)
    else:
        attrs["default_string"] = draw(st.one_of(st.just(ABSENT), st.sampled_from(_WORDS)))
        x = _input_over(draw, "int64", ints, shape)
    return Draft(attributes=attrs, inputs={"X": x})


def _one_hot_encoder(draw, ctx: Context) -> Draft:
    elem = ctx.elem("X")
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    n = draw(st.integers(1, 5))
    zeros = draw(st.sampled_from((ABSENT, 0, 1)))
    if elem == "string":
        cats = _pool_for(draw, "string", n)
        attrs = {"cats_strings": cats}
        x = _input_over(draw, "string", cats, shape) if zeros != 0 else _pick_from(draw, cats, shape, object)
    else:
        cats = draw(st.lists(st.integers(-3, 9), min_size=n, max_size=n, unique=True))
        attrs = {"cats_int64s": cats}
        if zeros == 0:
            x = _pick_from(draw, cats, shape, np.int64)
        else:
            x = _input_over(draw, "int64", cats, shape)
        if elem in ("float", "double") and x.size and draw(_BOOL):  # fractions cast toward zero
            x = x.astype(np.float64) + np.where(x >= 0, 0.25, -0.25) * draw(st.sampled_from((0, 1)))
        x = x.astype({"float": np.float32, "double": np.float64, "int32": np.int32}.get(elem, np.int64))
    attrs["zeros"] = zeros
    return Draft(attributes=attrs, inputs={"X": x})


def _pick_from(draw, cats: list, shape, dtype) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    arr = np.empty(size, dtype=dtype)
    arr[:] = [cats[draw(st.integers(0, len(cats) - 1))] for _ in range(size)]
    return arr.reshape(shape)


def _feature_vectorizer(draw, ctx: Context) -> Draft:
    elem = ctx.elem("X")
    count = draw(st.integers(1, 4))
    n = draw(st.integers(0, 3))
    xs, dims = [], []
    for _ in range(count):
        c = draw(st.integers(1, 4))
        one_d = n == 1 and draw(_BOOL)
        xs.append(values(draw, elem, (c,) if one_d else (n, c)))
        dims.append(c)
    return Draft(attributes={"inputdimensions": dims}, inputs={"X": xs})


_BUILDERS = {
    "Scaler": _scaler,
    "Normalizer": _normalizer,
    "ArrayFeatureExtractor": _array_feature_extractor,
    "Imputer": _imputer,
    "LabelEncoder": _label_encoder,
    "CategoryMapper": _category_mapper,
    "OneHotEncoder": _one_hot_encoder,
    "FeatureVectorizer": _feature_vectorizer,
}


def draw(draw, ctx: Context) -> Draft:
    from . import ml_models  # the linear and SVM model builders

    builders = {**_BUILDERS, **ml_models.BUILDERS}
    draft = by_op("ml", builders)(draw, ctx)
    # the attributes a builder leaves out stay absent: a generic draw would set a second keys_*,
    # cats_* or classlabels_* list, or support vectors to a linear model, which the texts forbid
    for attr in ctx.version.attributes:
        if attr.name not in draft.attributes and attr.name != "multi_class":
            draft.attributes[attr.name] = ABSENT
    return draft
