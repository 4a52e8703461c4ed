"""Hypothesis strategies derived from a spec version.

A drawn ``Case`` binds one element type per type parameter (every type a constraint allows is
reachable: bool, string, float16, bfloat16, float8 via ml_dtypes, complex, all integer widths), a
shape per input from its rank rule (zero-size dims, 1xN, Nx1, batch dims), attribute values from
their value domains (absent = default), optional inputs present or absent, edge values (NaN, +-inf,
-0.0, integer min/max) and, per input, whether it is fed as a graph input or an initializer.

The building blocks (``type_binding``, ``base_dims``, ``tensor``, ``scalar``, ``attribute``,
``optional``) are public; ``opkit.cases`` composes them, with family hooks, into the one case
generator. Values are drawn as a (kind, seed) pair and filled by NumPy, so a
draw is cheap and shrinks towards small, simple arrays.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..core.dtypes import COMPLEX, FLOATS, NUMPY_DTYPES, elem_of, np_dtype
from ..spec.model import Attribute, FormalParameter, OpSpec, OpVersion, RankRule
from ..spec.type_rules import binding_violation, type_rules
from ..core.onnx_types import INT_RANGES, tensor_element
from ..core.values import describe_value, element_of, is_container_type, runtime_value, value_size

ABSENT: Any = None
MAX_RANK = 5  # unbounded rank rules draw up to this rank
MAX_DIM = 5

# ---------------------------------------------------------------------------------------------
# the drawn case


@dataclass(frozen=True)
class Case:
    """One concrete invocation of an op version."""

    domain: str
    op: str
    since: int
    types: tuple[tuple[str, str], ...]  # type parameter -> ONNX type string
    attributes: tuple[tuple[str, Any], ...]  # attributes given on the node (absent ones omitted)
    inputs: tuple[tuple[str, Any], ...]  # formal name -> array, or None for an absent optional input
    initializers: frozenset = field(default_factory=frozenset)  # input names fed as initializers
    defaults: tuple[tuple[str, Any], ...] = ()  # defaults of the absent attributes
    siblings: int = 0  # extra cases derived from this one (same signature, new shapes and values)
    sibling_seed: int = 0
    n_outputs: int = 0  # outputs the node declares when a variadic output makes it vary (0: formal count)
    edge: str = ""  # the targeted edge strategy the case was made with (opkit.cases.edges), if any

    @property
    def type_map(self) -> dict[str, str]:
        return dict(self.types)

    def kernel_attributes(self) -> dict[str, Any]:
        """Every attribute with defaults applied (the kernel signature's keywords)."""
        out = dict(self.defaults)
        out.update(self.attributes)
        return out

    def positional(self) -> list:
        """The inputs as the kernel takes them (an empty optional is None: ``opkit.core.values``)."""
        return [runtime_value(a) for _, a in self.inputs]

    def __repr__(self) -> str:
        types = ", ".join(f"{k}={v}" for k, v in self.types)
        extra = f", +{self.siblings} siblings" if self.siblings else ""
        return f"<{self.domain}::{self.op}-{self.since} [{types}] {self.describe()}{extra}>"

    def describe(self) -> str:
        parts = [f"{name}={describe_value(arr)}" for name, arr in self.inputs]
        parts += [f"{k}={v!r}" for k, v in self.attributes]
        if self.initializers:
            parts.append("initializers=" + ",".join(sorted(self.initializers)))
        if self.n_outputs:
            parts.append(f"outputs={self.n_outputs}")
        if self.edge:
            parts.append(f"edge={self.edge}")
        return ", ".join(parts)

    def size(self) -> int:
        return sum(value_size(a) for _, a in self.inputs)


def attribute_defaults(version: OpVersion) -> dict[str, Any]:
    return {a.name: a.default for a in version.attributes if a.has_default}


# ---------------------------------------------------------------------------------------------
# types


def tensor_types(types) -> list[str]:
    """The plain tensor types of a constraint that NumPy can hold (seq/map/optional are left out)."""
    out = []
    for t in types:
        elem = tensor_element(t)
        if elem is not None and NUMPY_DTYPES.get(elem) is not None:
            out.append(t)
    return out


def bindable_types(types) -> list[str]:
    """The types of a constraint opkit can draw values of: plain tensors NumPy can hold, sequences
    of them, and optionals of either (``opkit.core.values`` says how those are held). Maps and sparse
    tensors are left out."""
    out = []
    for t in types:
        inner = t[len("optional("):-1] if t.startswith("optional(") else t
        inner = inner[len("seq("):-1] if inner.startswith("seq(") else inner
        if tensor_types([inner]):
            out.append(t)
    return out


_LINKS: dict[int, tuple] = {}  # id(version) -> (version, links); the version is kept so its id stays its own


def type_links(version: OpVersion) -> tuple:
    """Parameters bound from another one (SequenceAt's T is the tensor type its S holds), see
    ``opkit.spec.type_links``: drawn bindings never pair a sequence with another element type."""
    hit = _LINKS.get(id(version))
    if hit is None or hit[0] is not version:
        from ..spec.type_links import find_links

        pools = {n: bindable_types(version.type_constraint(n).types) for n in used_type_params(version)}
        hit = _LINKS[id(version)] = (version, find_links(version, pools))
    return hit[1]


def with_linked(binding: dict, links: tuple) -> dict:
    """``binding`` with every linked parameter set from its source."""
    if not links:
        return binding
    out = dict(binding)
    for link in links:
        if link.source in out:
            out[link.derived] = link.apply(out[link.source])
    return out


def used_type_params(version: OpVersion) -> list[str]:
    names = {p.type for p in version.inputs + version.outputs}
    return [tc.name for tc in version.type_constraints if tc.name in names]


def type_binding(version: OpVersion, only: dict[str, Any] | None = None) -> st.SearchStrategy[dict]:
    """One ONNX type string per type parameter; ``only`` pins parameters (a string or a list)."""
    parts = {}
    links = type_links(version)
    derived = {link.derived for link in links}
    for name in used_type_params(version):
        if name in derived:
            continue  # set from its source below
        choices = bindable_types(version.type_constraint(name).types)
        pinned = (only or {}).get(name)
        if pinned is not None:
            pinned = [pinned] if isinstance(pinned, str) else list(pinned)
            choices = [t for t in choices if t in pinned]
        for link in links:  # a pinned derived parameter narrows its source (T=tensor(float): S=seq(tensor(float)))
            if link.source == name and (only or {}).get(link.derived) is not None:
                choices = [t for t in choices if link.apply(t) in _pinned(only, link.derived, "")]
        if not choices:
            raise NotGeneratable(f"type parameter {name} has no type opkit can generate"
                                 + (" (pinned)" if only and (name in only or derived & set(only)) else ""))
        parts[name] = st.sampled_from(choices)
    if not type_rules(version):
        drawn = st.fixed_dictionaries(parts)
        return drawn.map(functools.partial(with_linked, links=links)) if links else drawn
    # rules that exclude bindings (RMSNormalization's T == V): draw among the allowed ones only
    allowed = [b for b in all_bindings(version) if all(b[k] in _pinned(only, k, b[k]) for k in b)]
    if not allowed:
        raise NotGeneratable(f"no type binding satisfies {', '.join(r.label for r in type_rules(version))}")
    return st.sampled_from(allowed)


def _pinned(only: dict[str, Any] | None, name: str, default: str) -> list[str]:
    pinned = (only or {}).get(name)
    if pinned is None:
        return [default]
    return [pinned] if isinstance(pinned, str) else list(pinned)


class NotGeneratable(Exception):
    """The spec version has something strategies cannot draw (a graph attribute, a seq type ...)."""


# ---------------------------------------------------------------------------------------------
# edge values


def edge_values(elem: str) -> list:
    """Interesting values of an element type (as Python/NumPy scalars castable to its dtype)."""
    elem = elem_of(elem)
    if elem == "bool":
        return [False, True]
    if elem == "string":
        return ["", "a", "\u00e9\u4e2d", "x" * 40, " "]
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        vals = [0, 1, lo, hi, lo + 1, hi - 1]
        if lo < 0:
            vals.append(-1)
        return sorted(set(vals), key=vals.index)
    if elem in COMPLEX:
        return [0j, complex(-0.0, 0.0), complex(math.nan, 0), complex(math.inf, -math.inf), 1 + 1j, -1j]
    if elem in FLOATS:
        dt = np_dtype(elem)
        try:
            fi = np.finfo(dt)
        except Exception:  # ml_dtypes types
            import ml_dtypes

            fi = ml_dtypes.finfo(dt)
        vals = [0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, float(fi.max), -float(fi.max),
                float(fi.tiny), float(fi.smallest_subnormal) if hasattr(fi, "smallest_subnormal") else 0.0]
        return vals
    return [0]


def cast(values, elem: str) -> np.ndarray:
    """A NumPy array of ``values`` with the dtype of ONNX element ``elem``."""
    elem = elem_of(elem)
    dt = np_dtype(elem)
    if elem == "string":
        arr = np.empty(len(values) if isinstance(values, list) else np.shape(values), dtype=object)
        flat = list(np.asarray(values, dtype=object).ravel()) if not isinstance(values, list) else values
        arr.ravel()[:] = [str(v) for v in flat] if flat else []
        return arr
    if elem in INT_RANGES:
        if elem in ("int64", "uint64"):
            return np.array([int(v) for v in np.ravel(np.asarray(values, dtype=object))],
                            dtype=dt).reshape(np.shape(values))
        return np.asarray(values, dtype=np.int64).astype(dt)
    with np.errstate(all="ignore"):
        if elem in COMPLEX:
            return np.asarray(values, dtype=np.complex128).astype(dt)
        if elem == "bool":
            return np.asarray(values, dtype=bool)
        return np.asarray(values, dtype=np.float64).astype(dt)


# ---------------------------------------------------------------------------------------------
# values


VALUE_KINDS = ("small", "random", "edges")


def fill(elem: str, shape: tuple[int, ...], kind: str, seed: int) -> np.ndarray:
    """Deterministic array contents for (kind, seed): the cheap core of ``tensor``."""
    elem = elem_of(elem)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    dt = np_dtype(elem)
    if elem == "string":
        pool = edge_values(elem) + ["b", "abc", "Z"] if kind != "small" else ["", "a", "b", "abc"]
        idx = rng.integers(0, len(pool), n)
        arr = np.empty(n, dtype=object)
        arr[:] = [pool[i] for i in idx]
        return arr.reshape(shape)
    if elem == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if elem in INT_RANGES:
        lo, hi = INT_RANGES[elem]
        if kind == "small":
            flat = rng.integers(max(lo, -3), min(hi, 3) + 1, n)
        elif elem in ("uint64", "int64"):
            flat = rng.integers(lo, hi, n, dtype=np.dtype(elem.replace("64", "") + "64"), endpoint=True)
        else:
            flat = rng.integers(lo, hi + 1, n)
        arr = flat.astype(dt)
    elif elem in COMPLEX:
        if kind == "small":
            arr = (rng.integers(-3, 4, n) + 1j * rng.integers(-3, 4, n)).astype(dt)
        else:
            arr = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)
                   + 1j * rng.standard_normal(n)).astype(dt)
    else:  # floats
        with np.errstate(all="ignore"):
            if kind == "small":
                arr = rng.integers(-3, 4, n).astype(np.float64).astype(dt)
            else:
                arr = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dt)
    if kind == "edges" and n:
        edges = cast(edge_values(elem), elem)
        mask = rng.random(n) < 0.5
        picks = edges[rng.integers(0, len(edges), n)]
        arr = np.where(mask, picks, arr).astype(dt)
    return np.asarray(arr).reshape(shape)


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def _pick(values: tuple) -> st.SearchStrategy:
    return st.sampled_from(values)


_BOOL = st.booleans()
_SEED = st.integers(0, 2**32 - 1)
_KIND = st.sampled_from(VALUE_KINDS)
_DIMS = st.lists(st.integers(0, MAX_DIM), min_size=MAX_RANK, max_size=MAX_RANK)


def base_dims() -> st.SearchStrategy[list[int]]:
    """Dimensions shared by the inputs of a case (aligned from the right, NumPy style): small
    sizes, including 0 and 1, so zero-size tensors, 1xN, Nx1 and batches all occur."""
    return _DIMS


def rank_range(rule: RankRule | None) -> tuple[int, int]:
    if rule is None:
        return 0, 4
    high = rule.max if rule.max is not None else max(rule.min + 2, min(MAX_RANK, rule.min + 3))
    return rule.min, min(high, max(rule.min, MAX_RANK))


def _draw_shape(draw, dims, rank, broadcast):
    lo, hi = rank_range(rank)
    n = draw(_ints(lo, hi)) if hi > lo else lo
    out = list(dims[len(dims) - n:]) if n <= len(dims) else [1] * (n - len(dims)) + list(dims)
    if broadcast and out:
        out = [1 if draw(_BOOL) else d for d in out]
    return tuple(out)


@st.composite
def shape(draw, dims: list[int], rank: RankRule | None = None, broadcast: bool = False) -> tuple[int, ...]:
    """A shape whose rank satisfies ``rank``, taken from the right end of ``dims``; with
    ``broadcast`` some dims may become 1."""
    return _draw_shape(draw, dims, rank, broadcast)


@functools.lru_cache(maxsize=None)
def _scalar_int_strategy(elem: str) -> st.SearchStrategy[int]:
    lo, hi = INT_RANGES[elem]
    return st.one_of(st.integers(max(lo, -6), min(hi, 6)), st.sampled_from(edge_values(elem)), st.integers(lo, hi))


def _draw_scalar(draw, elem):
    if elem in INT_RANGES:
        return cast([draw(_scalar_int_strategy(elem))], elem).reshape(())
    return fill(elem, (), draw(_KIND), draw(_SEED))


@st.composite
def scalar(draw, elem: str) -> np.ndarray:
    """A 0-d array: small values first (shrinks to 0), then the type's edge values."""
    return _draw_scalar(draw, elem_of(elem))


def _draw_tensor(draw, elem, dims, rank, broadcast):
    shp = _draw_shape(draw, dims, rank, broadcast)
    if shp == ():
        return _draw_scalar(draw, elem)
    return fill(elem, shp, draw(_KIND), draw(_SEED))


@st.composite
def tensor(draw, elem: str, dims: list[int] | None = None, rank: RankRule | None = None,
           broadcast: bool = False) -> np.ndarray:
    """An array of ONNX element ``elem`` whose rank satisfies ``rank``."""
    dims = dims if dims is not None else draw(_DIMS)
    return _draw_tensor(draw, elem_of(elem), dims, rank, broadcast)


def optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """Absent (None) or present; shrinks towards absent."""
    return st.one_of(st.none(), strategy)


def attribute_values(attr: Attribute) -> st.SearchStrategy:
    """Values an attribute may take: its value domain, else a few type-driven candidates."""
    dom = attr.domain
    if dom is not None and dom.values is not None:
        vals = [v for v in dom.values if dom.allows(v)]
        return st.sampled_from(vals)
    if attr.type == "int":
        if dom is not None and (dom.min is not None or dom.max is not None):
            lo = int(dom.min) if dom.min is not None else -(2**63)
            hi = int(dom.max) if dom.max is not None else 2**63 - 1
            return st.one_of(st.integers(max(lo, -8) if hi >= max(lo, -8) else lo, min(hi, max(lo, 8))),
                             st.sampled_from([lo, hi]))
        cands = [attr.default] if attr.has_default else []
        cands += [v for v in (0, 1) if v not in cands]
        return st.sampled_from(cands)
    if attr.type == "float":
        lo = dom.min if dom is not None and dom.min is not None else -4.0
        hi = dom.max if dom is not None and dom.max is not None else 4.0
        return st.floats(float(lo), float(hi), allow_nan=False, width=32)
    if attr.type == "ints":
        return st.lists(st.integers(-4, 4), max_size=4)
    if attr.type == "floats":
        return st.lists(st.floats(-4, 4, width=32), max_size=4)
    if attr.type == "string" and attr.has_default:
        return st.just(attr.default)
    if attr.type == "strings":
        return st.lists(st.sampled_from(["a", "b"]), max_size=3)
    if attr.type == "tensor" and attr.element_type:
        # the element type is only known once the type binding is drawn: bind_type_attributes
        # turns the seed into a 0-D tensor of that type
        return st.integers(-3, 3).map(ScalarSeed)
    raise NotGeneratable(f"cannot draw values of {attr.type} attribute {attr.name!r}")


def attribute(attr: Attribute) -> st.SearchStrategy:
    """An attribute as a node sets it: ABSENT (the default applies) or an explicit value."""
    try:
        values = attribute_values(attr)
    except NotGeneratable:
        if attr.required:
            raise
        return st.just(ABSENT)
    return values if attr.required else st.one_of(st.just(ABSENT), values)


def feed_mode() -> st.SearchStrategy[bool]:
    """Whether an input is fed as an initializer (about one draw in eight) instead of a graph input."""
    return st.integers(0, 7).map(lambda i: i == 7)


# ---------------------------------------------------------------------------------------------
# whole cases


def input_parameter(version: OpVersion, name: str) -> FormalParameter | None:
    """The formal input a case input is named after: itself, or the variadic input ``x`` of a copy
    named ``x_0``, ``x_1`` ... (None when neither exists)."""
    base = name.rsplit("_", 1)[0]
    return next((p for p in version.inputs if p.name == name), None) or \
        next((p for p in version.inputs if p.name == base), None)


def param_elem(param: FormalParameter, binding: dict[str, str]) -> str:
    fixed = tensor_element(param.type)
    if fixed is not None:
        return fixed
    if param.type in binding and not is_container_type(binding[param.type]):
        return elem_of(binding[param.type])
    if param.type in binding:  # a sequence or optional: its values are drawn by opkit.cases.containers
        raise NotGeneratable(f"parameter {param.name} is bound to {binding[param.type]}, not a tensor type")
    raise NotGeneratable(f"parameter {param.name} has type {param.type}, which opkit cannot generate")


def recast(case: Case, version: OpVersion, binding: dict[str, str]) -> Case | None:
    """``case`` asked of another type binding: every tensor's values cast to the element type the
    binding gives its parameter (a crash found in uint8, asked again of int32), type attributes
    rebound. None when a value cannot be carried over (text to numbers, a sequence, a value the
    target type cannot hold such as NaN as an integer)."""
    import dataclasses

    inputs = []
    for name, value in case.inputs:
        if value is None:
            inputs.append((name, value))
            continue
        param = input_parameter(version, name)
        if param is None or not isinstance(value, np.ndarray):
            return None
        try:
            elem = param_elem(param, binding)
        except NotGeneratable:
            return None
        if (value.dtype.kind in "OUS") != (elem == "string"):
            return None
        try:
            if elem in INT_RANGES and value.dtype.kind in "fcV":
                if not np.all(np.isfinite(value.astype(np.float64))):
                    return None
                value = np.trunc(value.astype(np.float64))
            with np.errstate(all="ignore"):
                new = cast(value.reshape(-1).tolist(), elem).reshape(value.shape)
        except (ValueError, TypeError, OverflowError):
            return None
        inputs.append((name, new))
    attrs = bind_type_attributes(version, binding, dict(case.attributes))
    return dataclasses.replace(case, types=tuple(sorted(binding.items())), inputs=tuple(inputs),
                               attributes=tuple(attrs.items()), siblings=0)


def with_attribute(case: Case, name: str, value) -> Case:
    """``case`` with attribute ``name`` set to ``value`` (given, no longer a default)."""
    import dataclasses

    attributes = dict(case.attributes)
    attributes[name] = value
    defaults = tuple((k, v) for k, v in case.defaults if k != name)
    return dataclasses.replace(case, attributes=tuple(sorted(attributes.items())), defaults=defaults, siblings=0)


def with_default_attributes(case: Case, version: OpVersion) -> Case | None:
    """``case`` with every optional attribute left out (its default), the required ones and those
    naming an output type kept; None when it has none to leave out."""
    import dataclasses

    keep = {a.name for a in version.attributes if a.required or a.name in TYPE_ATTRIBUTES}
    given = tuple((k, v) for k, v in case.attributes if k in keep)
    if len(given) == len(case.attributes):
        return None
    defaults = tuple((a.name, a.default) for a in version.attributes if a.has_default and a.name not in dict(given))
    return dataclasses.replace(case, attributes=given, defaults=defaults, siblings=0)


TYPE_ATTRIBUTES = ("to", "dtype", "output_dtype", "output_datatype")


@dataclass(frozen=True)
class ScalarSeed:
    """A drawn value for a tensor attribute whose element type is a type parameter's (see
    ``Attribute.element_type``); it becomes a 0-D tensor when the binding is known."""

    value: int


def bind_type_attributes(version: OpVersion, binding: dict[str, str], attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes that name an output's element type (Cast's ``to``, EyeLike's ``dtype`` ...) must
    agree with the drawn type binding: set them from the binding of the output's type parameter.
    Tensor attributes typed by a type parameter become 0-D tensors of its bound type."""
    if any(isinstance(v, ScalarSeed) for v in attrs.values()):
        attrs = dict(attrs)
        for attr in version.attributes:
            seed = attrs.get(attr.name)
            if isinstance(seed, ScalarSeed) and attr.element_type in binding:
                dtype = NUMPY_DTYPES[elem_of(binding[attr.element_type])]
                value = abs(seed.value) if np.dtype(dtype).kind in "ub" else seed.value
                attrs[attr.name] = np.asarray(value, dtype=np.int64).astype(dtype)
    out_params = [p.type for p in version.outputs if p.type in binding]
    if not out_params:
        return attrs
    elem = element_of(binding[out_params[0]]) or elem_of(binding[out_params[0]])  # SequenceEmpty's dtype: what S holds
    from ..core.onnx_types import ELEMENT_TYPE_CODES

    attrs = dict(attrs)
    for attr in version.attributes:
        if attr.name in TYPE_ATTRIBUTES and attr.type in ("int", "string"):
            attrs[attr.name] = ELEMENT_TYPE_CODES[elem] if attr.type == "int" else elem.upper()
    return attrs


def variadic_arguments(name: str, values) -> list[tuple[str, Any]]:
    """A variadic input's arguments as case inputs: name, name_1, name_2, ... (as expand() names them)."""
    return [(name if k == 0 else f"{name}_{k}", value) for k, value in enumerate(values)]


def make_case(spec_or_version, version: OpVersion, binding: dict[str, str], attrs: dict[str, Any],
              inputs: list[tuple[str, Any]], initializers=(), *, domain: str | None = None,
              op: str | None = None) -> Case:
    if isinstance(spec_or_version, OpSpec):
        domain, op = spec_or_version.domain, spec_or_version.name
    given = tuple((k, v) for k, v in attrs.items() if v is not ABSENT)
    defaults = tuple((a.name, a.default) for a in version.attributes
                     if a.has_default and a.name not in dict(given))
    return Case(domain, op, version.since, tuple(sorted(binding.items())), given, tuple(inputs),
                frozenset(initializers), defaults)


def cache_by_identity(fn):
    """Memoize on the identity of spec-model arguments. Loaded specs are immutable but not always
    hashable (attribute defaults can be lists or dicts: MeanVarianceNormalization's ``axes``), so
    functools.lru_cache cannot take them. The arguments are kept alive with the result, so an id
    is never reused while its entry exists."""
    cache: dict = {}

    def key_of(value):
        return value if isinstance(value, (str, int, float, bool, type(None))) or \
            (isinstance(value, tuple) and all(isinstance(v, (str, int, tuple)) for v in value)) else ("id", id(value))

    @functools.wraps(fn)
    def wrapper(*args):
        key = tuple(key_of(a) for a in args)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = (args, fn(*args))
        return hit[1]

    wrapper.cache_clear = cache.clear
    return wrapper


def expand(case: Case, version: OpVersion) -> list[Case]:
    """The case followed by its siblings: same types, attributes and input presence (all graph
    inputs), new shapes of the same ranks and new values, drawn with NumPy from ``sibling_seed``."""
    out = [case]
    if not case.siblings:
        return out
    import dataclasses

    rng = np.random.default_rng(case.sibling_seed)
    binding = case.type_map
    for _ in range(case.siblings):
        dims = rng.integers(0, MAX_DIM + 1, MAX_RANK).tolist()
        inputs = []
        for name, arr in case.inputs:
            if arr is None:
                inputs.append((name, None))
                continue
            elem = param_elem(input_parameter(version, name), binding)
            rank = arr.ndim
            if rank == 0:
                if elem in INT_RANGES:
                    lo, hi = INT_RANGES[elem]
                    pool = edge_values(elem) + list(range(max(lo, -6), min(hi, 6) + 1))
                    value = cast([pool[int(rng.integers(0, len(pool)))]], elem).reshape(())
                else:
                    value = fill(elem, (), VALUE_KINDS[int(rng.integers(0, 3))], int(rng.integers(0, 2**32)))
                inputs.append((name, value))
                continue
            shp = [d if arr.shape[i] != 1 or len(case.inputs) == 1 else 1
                   for i, d in enumerate(dims[MAX_RANK - rank:] if rank <= MAX_RANK else
                                         [1] * (rank - MAX_RANK) + dims)]
            inputs.append((name, fill(elem, tuple(shp), VALUE_KINDS[int(rng.integers(0, 3))],
                                      int(rng.integers(0, 2**32)))))
        out.append(dataclasses.replace(case, inputs=tuple(inputs), initializers=frozenset(), siblings=0,
                                       sibling_seed=0))
    return out


_FEED = st.integers(0, 7)


def all_bindings(version: OpVersion) -> list[dict[str, str]]:
    """Every combination of allowed tensor types, one dict per binding, in schema order."""
    return [dict(b) for b in _all_bindings(version)]


@cache_by_identity
def _all_bindings(version: OpVersion) -> tuple[dict[str, str], ...]:
    import itertools

    names, pools = _free_pools(version)
    combos = (with_linked(dict(zip(names, combo)), type_links(version)) for combo in itertools.product(*pools))
    return tuple(b for b in combos if binding_violation(version, b) is None)


def _free_pools(version: OpVersion) -> tuple[list[str], list[list[str]]]:
    """The parameters drawn on their own (not linked to another one) and their bindable types."""
    derived = {link.derived for link in type_links(version)}
    names = [n for n in used_type_params(version) if n not in derived]
    return names, [bindable_types(version.type_constraint(n).types) for n in names]


Rank = RankRule


def edge_cases(spec: OpSpec, version: OpVersion, binding: dict[str, str], limit: int = 64) -> list[Case]:
    """Fixed cases every run tries first (hypothesis' explicit examples): small canonical shapes,
    every edge value of each scalar integer input (Trilu's k = int64 min/max ...) crossed with every
    value of each attribute that has a value set. Deterministic, so expectations do not depend on
    what a seed happens to draw."""
    import itertools

    axes: list[list[tuple[str, str, Any]]] = []  # (kind, name, value)
    for attr in version.attributes:
        if attr.domain is not None and attr.domain.values is not None and len(attr.domain.values) <= 4:
            axes.append([("attr", attr.name, ABSENT)] + [("attr", attr.name, v) for v in attr.domain.values])
    base_inputs: list[tuple[str, Any]] = []
    for p in version.inputs:
        try:
            elem = param_elem(p, binding)
        except NotGeneratable:
            return []
        lo, _ = rank_range(p.rank)
        rank = lo if p.rank is not None else 2
        shp = (2, 3)[-rank:] if rank <= 2 else (2,) * (rank - 2) + (2, 3)
        if rank == 0:
            shp = ()
        if p.option == "variadic":
            base_inputs.append((p.name, fill(elem, shp, "small", 0)))
            continue
        value = fill(elem, shp, "small", 0) if rank else cast([1 if elem != "string" else "a"], elem).reshape(())
        base_inputs.append((p.name, value))
        if rank == 0 and elem in INT_RANGES:
            axes.append([("input", p.name, v) for v in edge_values(elem)]
                        + ([("input", p.name, None)] if p.option == "optional" else []))
    out = []
    for combo in itertools.islice(itertools.product(*axes) if axes else [()], limit):
        attrs = bind_type_attributes(version, binding, {a.name: ABSENT for a in version.attributes})
        inputs = dict(base_inputs)
        for kind, name, value in combo:
            if kind == "attr":
                attrs[name] = value
            else:
                param = next(p for p in version.inputs if p.name == name)
                inputs[name] = None if value is None else cast([value], param_elem(param, binding)).reshape(())
        required_missing = [a for a in version.attributes if a.required and attrs.get(a.name) is ABSENT]
        if required_missing:
            continue
        items = list(inputs.items())
        while items and items[-1][1] is None:
            items.pop()
        out.append(make_case(spec, version, binding, attrs, items))
    return out


MAX_BINDINGS = 64


def covering_bindings(version: OpVersion, limit: int | None = MAX_BINDINGS) -> list[dict[str, str]]:
    """``all_bindings`` when there are at most ``limit``; otherwise a deterministic subset in which
    every allowed type of every type parameter still occurs (each-choice coverage), topped up with
    evenly spaced bindings of the full product. Cast's 400 (T1, T2) pairs per version become 64."""
    full = all_bindings(version)
    if not limit or len(full) <= limit:
        return full
    names, pools = _free_pools(version)
    chosen: list[dict[str, str]] = []
    seen: set = set()
    width = max(len(p) for p in pools)
    for i in range(width):  # each-choice: row i takes the i-th type of every parameter (wrapping)
        b = with_linked({n: pool[(i + j) % len(pool)] for j, (n, pool) in enumerate(zip(names, pools))},
                        type_links(version))
        key = tuple(sorted(b.items()))
        if key not in seen and binding_violation(version, b) is None:
            seen.add(key)
            chosen.append(b)
    step = max(1, len(full) // max(1, limit - len(chosen)))
    for b in full[::step]:
        if len(chosen) >= max(limit, width):
            break
        key = tuple(sorted(b.items()))
        if key not in seen:
            seen.add(key)
            chosen.append(b)
    order = {tuple(sorted(b.items())): i for i, b in enumerate(full)}
    return sorted(chosen, key=lambda b: order[tuple(sorted(b.items()))])


PROBE_LIMIT = 700  # op versions with at most this many bindings have every one of them tested


@cache_by_identity
def pairwise_bindings(version: OpVersion) -> list[dict[str, str]]:
    """A small set of bindings in which every pair of types of every two type parameters that some
    valid binding has occurs at least once (greedy: each step takes the binding that covers most
    pairs not yet covered; ties go to schema order, so the set is deterministic). OneHot-9's 1,815
    (indices, depth, values) bindings need about 170."""
    import itertools

    full = all_bindings(version)
    names, _ = _free_pools(version)
    if len(names) < 2:
        return tuple(full)

    def pairs(b: dict) -> set:
        return {(i, b[names[i]], j, b[names[j]]) for i, j in itertools.combinations(range(len(names)), 2)}

    covers = [pairs(b) for b in full]
    uncovered = set().union(*covers) if covers else set()
    chosen: list[int] = []
    while uncovered:
        best = max(range(len(full)), key=lambda k: (len(covers[k] & uncovered), -k))
        chosen.append(best)
        uncovered -= covers[best]
    return tuple(full[k] for k in sorted(chosen))


def probe_bindings(version: OpVersion, searched: list[dict[str, str]],
                   limit: int | None = PROBE_LIMIT) -> list[dict[str, str]]:
    """The bindings a run probes with a few examples besides the ``searched`` ones (the covering
    subset that gets the full search): all the others when the version has at most ``limit``
    bindings (a missing type registration is often one pair: Cast of bfloat16 to int4), else those
    of a pairwise covering set; none when ``limit`` is 0."""
    if not limit:
        return []
    full = all_bindings(version)
    pool = full if len(full) <= limit else [dict(b) for b in pairwise_bindings(version)]
    seen = {tuple(sorted(b.items())) for b in searched}
    return [b for b in pool if tuple(sorted(b.items())) not in seen]
