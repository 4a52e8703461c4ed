"""What a family hook sees and returns.

A case is built in order: type binding, then ranks and shapes, then attributes, then tensor
values. A family hook (``opkit.cases.families``) takes over the steps its family knows how to make
valid (a window op picks kernel, strides, pads and dilations first and derives the input's spatial
size from them); whatever it leaves out the generic steps fill in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..spec.model import Attribute, FormalParameter, OpSpec, OpVersion
from .case import ABSENT, param_elem
from .draws import _KIND, _SEED, cast, fill


@dataclass(frozen=True)
class Context:
    """The op version and the drawn type binding a hook builds for."""

    spec: OpSpec
    version: OpVersion
    binding: dict  # type parameter -> ONNX type string

    @property
    def op(self) -> str:
        return self.spec.name

    @property
    def since(self) -> int:
        return self.version.since

    def attribute(self, name: str) -> Attribute | None:
        return self.version.attribute(name)

    def has_attribute(self, name: str) -> bool:
        return self.version.attribute(name) is not None

    def input(self, name: str) -> FormalParameter | None:
        return next((p for p in self.version.inputs if p.name == name), None)

    def has_input(self, name: str) -> bool:
        return self.input(name) is not None

    def input_index(self, name: str) -> int:
        return next(i for i, p in enumerate(self.version.inputs) if p.name == name)

    def elem(self, name: str) -> str:
        """The element type (``float``, ``int64`` ...) of the formal input ``name``."""
        param = self.input(name)
        if param is None:
            raise KeyError(f"{self.op}-{self.since} has no input {name!r}")
        return param_elem(param, self.binding)

    def output_elem(self, name: str) -> str:
        param = next(p for p in self.version.outputs if p.name == name)
        return param_elem(param, self.binding)


@dataclass
class Draft:
    """What a hook decided: attribute values (``ABSENT`` leaves the default) and input arrays
    (``None`` leaves an optional input out; a list of arrays for a variadic input). Names it does
    not set are drawn generically. ``n_outputs`` is how many outputs the node declares when the op
    lets that vary (Split's parts, BatchNormalization's single output outside training); 0 keeps
    the formal count."""

    attributes: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    n_outputs: int = 0


# ---------------------------------------------------------------------------------------------
# value helpers for hooks: every draw goes through hypothesis, so cases replay and shrink


def values(draw, elem: str, shape, kind: str | None = None) -> np.ndarray:
    """An array of element type ``elem`` and ``shape`` with drawn contents (small integers, random
    values or edge values such as NaN and integer extremes)."""
    return fill(elem, tuple(int(d) for d in shape), kind or draw(_KIND), draw(_SEED))


def finite_values(draw, elem: str, shape) -> np.ndarray:
    """Like ``values`` without NaN, infinities and extremes (for scales, coordinates, weights
    whose edge values would only test overflow)."""
    return fill(elem, tuple(int(d) for d in shape), draw(st.sampled_from(("small", "random"))), draw(_SEED))


def nan_to_zero(x: np.ndarray) -> np.ndarray:
    """``x`` with every NaN made 0 (infinities and extremes stay): how a hook keeps the draws a
    spec's NaN rule would reject (the max of a window holding NaN, a NaN quantized to an
    integer). ``x`` itself when it holds no NaN (integer, bool and empty arrays never do)."""
    if x.dtype.kind in "iub" or not x.size:
        return x
    wide = x.astype(np.float64)
    nan = np.isnan(wide)
    return np.where(nan, 0.0, wide).astype(x.dtype) if nan.any() else x


def clip_finite(x: np.ndarray, bound: float) -> np.ndarray:
    """``x`` with its finite values clipped to [-bound, bound] (inf and NaN kept): how hooks keep
    sums of finite terms within the type's range while still drawing the non-finite values."""
    wide = x.astype(np.float64)
    return np.where(np.isfinite(wide), np.clip(wide, -bound, bound), wide).astype(x.dtype)


def int_tensor(elem: str, data, shape=None) -> np.ndarray:
    """``data`` (a list or nested list of ints) as an array of element ``elem``."""
    arr = cast(np.asarray(data, dtype=np.int64).ravel().tolist(), elem)
    return arr.reshape(np.shape(data) if shape is None else shape)


def dims(draw, rank: int, low: int = 1, high: int = 4) -> list[int]:
    """``rank`` dimension sizes in [low, high]; shrinks towards ``low``."""
    return [draw(st.integers(low, high)) for _ in range(rank)]


def axis_in(draw, rank: int, allow_negative: bool = True, end: bool = False) -> int:
    """A valid axis of a rank-``rank`` tensor: [-rank, rank-1] (``end``: up to rank, for ops that
    insert an axis, such as Flatten or Unsqueeze's counted rank)."""
    hi = rank if end else rank - 1
    lo = (-rank - 1 if end else -rank) if allow_negative else 0
    if hi < lo:
        return 0
    return draw(st.integers(lo, hi))


def distinct_axes(draw, rank: int, min_size: int = 0, max_size: int | None = None,
                  allow_negative: bool = True) -> list[int]:
    """Distinct axes of a rank-``rank`` tensor (each possibly written negatively), unsorted."""
    if rank == 0:
        return []
    chosen = draw(st.lists(st.integers(0, rank - 1), min_size=min(min_size, rank),
                           max_size=rank if max_size is None else min(max_size, rank), unique=True))
    if allow_negative:
        chosen = [a - rank if draw(st.booleans()) else a for a in chosen]
    return chosen


def broadcast_pair(draw, out: list[int]) -> tuple[list[int], list[int]]:
    """Two shapes that broadcast NumPy style to ``out``: each dim is kept on both sides or is 1 on
    one of them, and one side may lack some leading dims."""
    a, b = [], []
    for d in out:
        mode = draw(st.integers(0, 3))  # 0, 1: both d; 2: a is 1; 3: b is 1
        a.append(1 if mode == 2 else d)
        b.append(1 if mode == 3 else d)
    if out and draw(st.booleans()):
        cut = draw(st.integers(0, len(out)))
        if draw(st.booleans()):
            a = a[cut:]
        else:
            b = b[cut:]
    return a, b


def by_op(family: str, builders: dict):
    """A family hook that hands each op to its builder in ``builders`` (op name -> builder) and
    says which op it cannot build."""
    def hook(draw, ctx: Context) -> Draft:
        builder = builders.get(ctx.op)
        if builder is None:
            from .case import NotGeneratable

            raise NotGeneratable(f"the {family} family has no builder for {ctx.op}")
        return builder(draw, ctx)

    return hook


def by_domain_and_op(family: str, builders: dict, contrib: dict):
    """A family hook that hands an ai.onnx op to its builder in ``builders`` and a com.microsoft op
    to its builder in ``contrib`` (ops of the same name differ between the two: Gelu, QuantizeLinear)."""
    onnx_hook, contrib_hook = by_op(family, builders), by_op(family, contrib)

    def hook(draw, ctx: Context) -> Draft:
        return (contrib_hook if ctx.spec.domain == "com.microsoft" else onnx_hook)(draw, ctx)

    return hook


__all__ = ["ABSENT", "Context", "Draft", "by_domain_and_op", "by_op", "axis_in", "broadcast_pair", "dims", "distinct_axes", "finite_values", "int_tensor",
           "values"]
