"""The typed model of an operator spec: frozen, slotted dataclasses.

Every object carries the ``Location`` it was read from (``None`` for objects built in code, e.g. by
an importer), kept out of equality so that a model read back from YAML equals the model it was
written from. Collections are tuples so the whole model is immutable and hashable where its values
are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.onnx_types import INFINITE_ARITY, proto_domain


@dataclass(frozen=True, slots=True)
class Location:
    file: str
    line: int  # 1-based
    col: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def _loc() -> Any:
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RankRule:
    """Allowed tensor ranks, inclusive; ``max=None`` means unbounded."""

    min: int = 0
    max: int | None = None
    location: Location | None = _loc()

    def allows(self, rank: int) -> bool:
        return rank >= self.min and (self.max is None or rank <= self.max)

    def describe(self) -> str:
        if self.max == self.min:
            return f"rank {self.min}"
        if self.max is None:
            return f"rank >= {self.min}"
        return f"rank {self.min} to {self.max}"


@dataclass(frozen=True, slots=True)
class ValueDomain:
    """The values an attribute may take: an explicit set and/or an inclusive range."""

    values: tuple[Any, ...] | None = None
    min: Any = None
    max: Any = None
    location: Location | None = _loc()

    def allows(self, value: Any) -> bool:
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if self.values is not None and item not in self.values:
                return False
            if self.min is not None and item < self.min:
                return False
            if self.max is not None and item > self.max:
                return False
        return True

    def describe(self) -> str:
        parts = []
        if self.values is not None:
            parts.append("one of " + ", ".join(repr(v) for v in self.values))
        if self.min is not None:
            parts.append(f">= {self.min}")
        if self.max is not None:
            parts.append(f"<= {self.max}")
        return " and ".join(parts)


NO_DEFAULT: Any = None  # attributes without a default carry ``default=None``


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    type: str  # one of types.ATTRIBUTE_TYPES
    doc: str = ""
    required: bool = False
    default: Any = NO_DEFAULT  # python value (int, float, str, list) or None
    domain: ValueDomain | None = None  # opkit extension: allowed values
    location: Location | None = _loc()
    # opkit extension, tensor attributes: the type parameter whose element type the tensor has
    # (DiagonalMatrix1's Value is a scalar of T), so generated cases draw it of the bound type
    element_type: str | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not None


@dataclass(frozen=True, slots=True)
class FormalParameter:
    """An input or output of an operator version."""

    name: str
    type: str  # a type parameter name ('T') or an ONNX type string ('tensor(int64)')
    doc: str = ""
    option: str = "single"  # single | optional | variadic
    homogeneous: bool = True
    differentiable: bool | None = None  # None: undefined differentiability
    min_arity: int = 1
    rank: RankRule | None = None  # opkit extension
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class TypeConstraint:
    name: str
    types: tuple[str, ...]
    doc: str = ""
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class FunctionBody:
    """An ONNX function body in ONNX text form, for one opset version of the function."""

    opset: int
    text: str
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class Rule:
    """A labelled constraint (StableHLO style): the label is cited by kernels, tests and docs."""

    label: str
    holds: str  # a Python expression over inputs/attributes
    doc: str = ""
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class Kernel:
    """How to compute an op version: a family template with parameters, or a Python body."""

    template: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    python: str | None = None
    same_as: int | None = None  # reuse the kernel of another version of this op
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class Property:
    name: str
    holds: str
    types: str | None = None  # restrict to a type class: numeric, float, integer, ...
    doc: str = ""
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class Lowering:
    """An equivalent formulation in terms of another op (an ONNX function, a backend primitive)."""

    name: str
    to: str  # 'domain::Op-version', e.g. 'directml::DiagonalMatrix1-1'
    python: str
    doc: str = ""
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class TensorValue:
    """A literal tensor in an example. ``dtype`` is an ONNX element type name."""

    dtype: str
    shape: tuple[int, ...]
    value: Any  # nested tuples of python scalars (or a scalar for rank 0)
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class ContainerValue:
    """A sequence or optional in an example: ``type`` is its full ONNX type string
    (``seq(tensor(float))``, ``optional(tensor(int64))``); ``items`` are a sequence's elements, or
    an optional's one element (none: the empty optional)."""

    type: str
    items: tuple[Any, ...] = ()  # TensorValue or ContainerValue
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    doc: str = ""
    attributes: tuple[tuple[str, Any], ...] = ()
    # None: an optional input left empty; a tuple: a variadic parameter's arguments; a
    # ContainerValue: a sequence or optional value
    inputs: tuple[tuple[str, TensorValue | ContainerValue | None | tuple], ...] = ()
    outputs: tuple[tuple[str, TensorValue | ContainerValue | tuple], ...] = ()
    source: str = ""  # where the example comes from ('onnx node test test_gather_0 (onnx 1.23.2)'); '' hand-written
    # the precision the expected float outputs are given to, where it is coarser than the op's
    # accuracy class (onnx's node tests print some expected values to four digits)
    rtol: float = 0.0
    atol: float = 0.0
    location: Location | None = _loc()



@dataclass(frozen=True, slots=True)
class Tolerance:
    """Per-dtype comparison tolerance: |actual - expected| <= atol + rtol * |expected|."""

    dtype: str
    rtol: float = 0.0
    atol: float = 0.0
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class Approximation:
    """What the ONNX text lets an implementation deviate beyond its accuracy class (``accuracy:
    approximate``): ``ulps`` ULPs of the output type, plus ``atol + rtol * max(|expected|, |actual|)``."""

    ulps: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0
    doc: str = ""
    location: Location | None = _loc()


@dataclass(frozen=True, slots=True)
class OpVersion:
    since: int
    doc: str = ""
    support_level: str = "common"
    deprecated: bool = False
    attributes: tuple[Attribute, ...] = ()
    inputs: tuple[FormalParameter, ...] = ()
    outputs: tuple[FormalParameter, ...] = ()
    type_constraints: tuple[TypeConstraint, ...] = ()
    # arity as OpSchema reports it; None means "derived from the formal parameters"
    input_range: tuple[int, int] | None = None
    output_range: tuple[int, int] | None = None
    function: tuple[FunctionBody, ...] = ()
    context_dependent_function: tuple[int, ...] = ()  # opset versions
    shape_inference: bool = True
    data_propagation: bool = False
    determinism: str = "deterministic"
    # opkit extensions
    changes: str = ""
    semantics: str = ""
    family: str | None = None  # the case generator's family hook (opkit.cases.families)
    rules: tuple[Rule, ...] = ()
    kernel: Kernel | None = None
    properties: tuple[Property, ...] = ()
    lowerings: tuple[Lowering, ...] = ()
    tolerances: tuple[Tolerance, ...] = ()
    examples: tuple[Example, ...] = ()
    accuracy: str | None = None  # an ACCURACY_CLASSES name; None: opkit.spec.accuracy's default for the op
    tolerance: Approximation | None = None  # with accuracy: approximate only
    location: Location | None = _loc()

    @property
    def min_input(self) -> int:
        return self.input_range[0] if self.input_range else _derived_range(self.inputs)[0]

    @property
    def max_input(self) -> int:
        return self.input_range[1] if self.input_range else _derived_range(self.inputs)[1]

    @property
    def min_output(self) -> int:
        return self.output_range[0] if self.output_range else _derived_range(self.outputs)[0]

    @property
    def max_output(self) -> int:
        return self.output_range[1] if self.output_range else _derived_range(self.outputs)[1]

    @property
    def has_function(self) -> bool:
        return bool(self.function)

    @property
    def draws(self) -> bool:
        """Whether the outputs may be a random draw, so they are judged by statistics
        (``opkit.conformance.random_judging``), not compared (see ``draws_random_values``)."""
        return draws_random_values(self.determinism, (a.name for a in self.attributes),
                                   (p.name for p in self.inputs))

    def attribute(self, name: str) -> Attribute | None:
        return next((a for a in self.attributes if a.name == name), None)

    def type_constraint(self, name: str) -> TypeConstraint | None:
        return next((t for t in self.type_constraints if t.name == name), None)


# What marks an op that draws random values: a seed, or a switch into training mode (Dropout).
RANDOM_MARKS = frozenset({"seed", "is_test", "training_mode"})


def draws_random_values(determinism: str, attributes, inputs) -> bool:
    """Whether an op version may draw its outputs at random: OpSchema calls it nondeterministic and
    it has what a random op has (``RANDOM_MARKS`` among its attribute and input names). The flag
    alone says too much: If, Loop and Scan carry it for what their bodies may hold, AffineGrid for no
    reason its text gives (its grid is a formula of theta), Dropout 7 and 10 though they only infer;
    their values are the op's and are compared."""
    return determinism == "nondeterministic" and bool(RANDOM_MARKS & {*attributes, *inputs})


def _derived_range(params: tuple[FormalParameter, ...]) -> tuple[int, int]:
    """Arity implied by the parameters: the convention OpSchema follows unless told otherwise."""
    low = sum(1 for p in params if p.option == "single")
    low += sum(p.min_arity for p in params if p.option == "variadic")
    high = INFINITE_ARITY if any(p.option == "variadic" for p in params) else len(params)
    return low, high


derived_range = _derived_range


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str
    domain: str
    versions: tuple[OpVersion, ...]
    source: tuple[tuple[str, str], ...] = ()  # where the spec came from, e.g. (('onnx', '1.23.2'),)
    doc: str = ""  # op-level note (hand-written specs)
    path: str | None = field(default=None, compare=False)
    location: Location | None = _loc()

    @property
    def proto_domain(self) -> str:
        return proto_domain(self.domain)

    def version(self, since: int) -> OpVersion | None:
        return next((v for v in self.versions if v.since == since), None)

    def version_at(self, opset: int) -> OpVersion | None:
        """The version in force at ``opset`` (the newest with since <= opset)."""
        found = None
        for v in self.versions:
            if v.since <= opset:
                found = v
        return found

    @property
    def latest(self) -> OpVersion:
        return self.versions[-1]
