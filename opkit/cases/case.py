"""The drawn case: ``Case`` (one concrete invocation of an op version), ``NotGeneratable``, and
building a case from given types, attributes and inputs (``make_case``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.dtypes import elem_of
from ..core.onnx_types import tensor_element
from ..core.values import describe_value, is_container_type, runtime_value, value_size
from ..spec.model import FormalParameter, OpSpec, OpVersion

ABSENT: Any = None


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


class NotGeneratable(Exception):
    """The spec version has something strategies cannot draw (a graph attribute, a seq type ...)."""


TYPE_ATTRIBUTES = ("to", "dtype", "output_dtype", "output_datatype")
# attributes whose value selects an output's element type without naming it: the value each bound
# output type needs (com.microsoft MurmurHash3's ``positive``: 1 gives uint32, 0 int32)
TYPE_SWITCHES: dict[str, dict[str, int]] = {"positive": {"tensor(uint32)": 1, "tensor(int32)": 0}}
# what no derived case may change on its own: the output type follows from them
TYPE_FIXING = TYPE_ATTRIBUTES + tuple(TYPE_SWITCHES)


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
