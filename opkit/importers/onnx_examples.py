"""onnx's node test cases -> spec examples (``opkit import onnx-examples``).

onnx defines a test case for almost every operator (``onnx.backend.test.case.node``): a one-node
model, its inputs and the expected outputs. Each becomes an ``Example`` of the op version the
model's opset selects, named after the test (``test_gather_0`` -> ``gather_0``) and carrying its
``source`` so a re-import can tell imported examples from hand-written ones. The test data is
onnx's (Apache-2.0, the ONNX Project Contributors); see the README.

A case is left out, with the reason counted, when a spec cannot state it: a subgraph, sparse or
type-proto attribute, a map value, several nodes, no spec for the op, or more than
``max_elements`` tensor elements (a page shows every number; large cases teach nothing a small one
does not), unless it is the smallest case of an op version that would otherwise have none.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.numpy_types import elem_from_dtype
from ..spec.model import ContainerValue, Example, OpSpec, TensorValue
from ..core.onnx_types import DEFAULT_DOMAIN, ELEMENT_TYPES

SOURCE_PREFIX = "onnx node test "
DEFAULT_MAX_ELEMENTS = 1024
FALLBACK_FACTOR = 8  # an op version with no case under the limit takes its smallest, up to 8x the limit
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")
_UNSTATABLE_ATTRIBUTES = {"GRAPH", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
                          "TENSORS"}


@dataclass(frozen=True)
class ImportedExample:
    domain: str
    op: str
    since: int
    example: Example


@dataclass
class ExampleImport:
    """What an import found: the examples, and every case left out with why."""

    onnx_version: str
    examples: list[ImportedExample] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> cases
    skipped_cases: list[tuple[str, str]] = field(default_factory=list)  # (test name, reason)
    precision: dict[str, tuple[float, float]] = field(default_factory=dict)  # example name -> onnx's (rtol, atol)

    def skip(self, name: str, reason: str) -> None:
        self.skipped[reason] += 1
        self.skipped_cases.append((name, reason))

    def leave_out(self, example: Example, reason: str) -> None:
        """Take back an example found earlier (the spec refuses it, a hand-written one has its name)."""
        self.examples = [i for i in self.examples if i.example is not example]
        self.skip(f"test_{example.name}", reason)


class Unstatable(Exception):
    """A node test case that a spec example cannot state (the message says why)."""


def example_name(test_name: str) -> str:
    return test_name[5:] if test_name.startswith("test_") else test_name


def source_text(onnx_version: str, test_name: str) -> str:
    return f"{SOURCE_PREFIX}{test_name} (onnx {onnx_version})"


def is_imported(example: Example) -> bool:
    return example.source.startswith(SOURCE_PREFIX)


# ---------------------------------------------------------------------------------------------
# values


def _scalar(elem: str, x: Any) -> Any:
    if elem == "string":
        return x.decode("utf-8") if isinstance(x, bytes) else str(x)
    if elem == "bool":
        return bool(x)
    if elem in ("complex64", "complex128"):
        c = complex(x)
        return f"{_real(c.real, elem)}{'+' if c.imag >= 0 or math.isnan(c.imag) else '-'}{abs(_real(c.imag, elem))}j"
    if np.issubdtype(type(x), np.integer) or isinstance(x, int):
        return int(x)
    return _real(x, elem)


def _real(x: Any, elem: str) -> float:
    """The shortest decimal that reads back as the same value of ``elem`` (0.1, not 0.10000000149)."""
    value = float(x)
    if not math.isfinite(value):
        return value
    if elem in ("float", "complex64"):
        short = float(str(np.float32(value)))
        return short if np.float32(short) == np.float32(value) else value
    if elem == "float16":
        short = float(str(np.float16(value)))
        return short if np.float16(short) == np.float16(value) else value
    return value  # double is already shortest; the narrow ml_dtypes floats print exactly


def tensor_value(arr: Any) -> TensorValue:
    arr = _array(arr)
    if not isinstance(arr, np.ndarray):
        raise Unstatable("a sequence, optional or map value")
    try:
        elem = elem_from_dtype(arr.dtype)
    except KeyError:
        raise Unstatable(f"element type {arr.dtype}") from None
    if elem in ("string", "bool", "float", "float16", "double", "complex64", "complex128"):
        flat = [_scalar(elem, x) for x in arr.ravel().tolist()]
    elif arr.dtype.kind in "iu" or elem in ("int4", "uint4", "int2", "uint2"):
        flat = [int(x) for x in arr.astype(np.int64).ravel().tolist()]
    else:  # bfloat16, float8, float4, ...: every value is exact in a double
        flat = [float(x) for x in arr.astype(np.float64).ravel().tolist()]
    return TensorValue(elem, tuple(int(d) for d in arr.shape), _nest(flat, arr.shape))


def _array(value: Any) -> Any:
    """onnx's cases give tensors as arrays, NumPy scalars (Clip's min) or TensorProtos (Cast's
    float8 and 4-bit values); anything else is a sequence, optional or map."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return value


def _nest(flat: list, shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    if 0 in shape:
        return ()
    step = len(flat) // shape[0]
    return tuple(_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0]))


def _attribute(attr: Any) -> Any:
    from onnx import AttributeProto, helper, numpy_helper

    kind = AttributeProto.AttributeType.Name(attr.type)
    if kind in _UNSTATABLE_ATTRIBUTES:
        raise Unstatable(f"a {kind.lower()} attribute")
    if kind == "TENSOR":
        tv = tensor_value(numpy_helper.to_array(attr.t))
        if 0 in tv.shape:
            raise Unstatable("a zero-size tensor attribute")
        return {"dtype": tv.dtype, "value": _thaw(tv.value)}
    value = helper.get_attribute_value(attr)
    if kind == "FLOAT":
        return _real(value, "float")
    if kind == "FLOATS":
        return [_real(v, "float") for v in value]
    if kind == "STRING":
        return value.decode("utf-8")
    if kind == "STRINGS":
        return [v.decode("utf-8") for v in value]
    if kind == "INTS":
        return [int(v) for v in value]
    return value


def _thaw(value: Any) -> Any:
    return [_thaw(v) for v in value] if isinstance(value, tuple) else value


# ---------------------------------------------------------------------------------------------
# cases -> examples


def type_string(type_proto: Any) -> str:
    """An ONNX TypeProto as a type string: tensor(float), seq(tensor(int64)), optional(...)."""
    which = type_proto.WhichOneof("value")
    if which == "tensor_type":
        return f"tensor({ELEMENT_TYPES[type_proto.tensor_type.elem_type - 1]})"
    if which == "sequence_type":
        return f"seq({type_string(type_proto.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({type_string(type_proto.optional_type.elem_type)})"
    raise Unstatable(f"a {which or 'untyped'} value")


def argument_value(value: Any, type_proto: Any | None) -> TensorValue | ContainerValue:
    """A test value as an example argument, by its graph type (a tensor when the graph gives none)."""
    which = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if which == "tensor_type":
        return tensor_value(value)
    if which == "sequence_type":
        if not isinstance(value, (list, tuple)):
            raise Unstatable("a sequence value that is not a list")
        inner = type_proto.sequence_type.elem_type
        return ContainerValue(type_string(type_proto), tuple(argument_value(v, inner) for v in value))
    if which == "optional_type":
        items = () if value is None else (argument_value(value, type_proto.optional_type.elem_type),)
        return ContainerValue(type_string(type_proto), items)
    raise Unstatable(f"a {which or 'untyped'} value")


def _bind(names: list[str], params: tuple, values: dict[str, Any],
          types: dict[str, Any]) -> list[tuple[str, Any]]:
    """Node argument names -> (formal name, value | None | tuple of values), typed by ``types``
    (graph value name -> TypeProto)."""
    out: list[tuple[str, Any]] = []
    for i, p in enumerate(params):
        if p.option == "variadic":
            rest = names[i:]
            if any(not n for n in rest):
                raise Unstatable("an empty variadic argument")
            if rest:
                out.append((p.name, tuple(argument_value(values[n], types.get(n)) for n in rest)))
            return out
        if i >= len(names) or not names[i]:
            if p.option == "optional":
                out.append((p.name, None))
                continue
            raise Unstatable(f"required {p.name!r} not given")
        out.append((p.name, argument_value(values[names[i]], types.get(names[i]))))
    if len(names) > len(params):
        raise Unstatable("more arguments than formal parameters")
    return out


def case_example(testcase: Any, spec: OpSpec, onnx_version: str) -> tuple[int, Example]:
    """(version since, Example) of one onnx node test case; raises Unstatable."""
    graph = testcase.model.graph
    node = graph.node[0]
    domain = node.domain or DEFAULT_DOMAIN
    opset = next((o.version for o in testcase.model.opset_import
                  if (o.domain or DEFAULT_DOMAIN) == domain), None)
    if opset is None:
        raise Unstatable("no opset for the op's domain")
    version = spec.version_at(opset)
    if version is None:
        raise Unstatable(f"no spec version at opset {opset}")
    if len(testcase.data_sets) != 1:
        raise Unstatable("several data sets")
    inputs_data, outputs_data = testcase.data_sets[0]
    feeds = dict(zip([i.name for i in graph.input], inputs_data))
    feeds.update({init.name: _array(init) for init in graph.initializer})
    expected = dict(zip([o.name for o in graph.output], outputs_data))
    types = {v.name: v.type for v in list(graph.input) + list(graph.output)}
    attributes = tuple((a.name, _attribute(a)) for a in node.attribute)
    inputs = _bind(list(node.input), version.inputs, feeds, types)
    outputs = [(name, value) for name, value in _bind(list(node.output), version.outputs, expected, types)
               if value is not None]
    while inputs and inputs[-1][1] is None:  # trailing empty optionals say nothing
        inputs.pop()
    name = example_name(testcase.name)
    return version.since, Example(name=name, attributes=attributes, inputs=tuple(inputs), outputs=tuple(outputs),
                                  source=source_text(onnx_version, testcase.name))


def _elements(testcase: Any) -> int:
    total = 0
    for inputs, outputs in testcase.data_sets:
        for value in list(inputs) + list(outputs):
            arr = _array(value)
            total += int(arr.size) if isinstance(arr, np.ndarray) else 0
    return total


def node_testcases() -> list[Any]:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return sorted(collect_testcases(), key=lambda tc: tc.name)


def import_examples(specs: dict[tuple[str, str], OpSpec], *, max_elements: int = DEFAULT_MAX_ELEMENTS,
                    testcases: list[Any] | None = None) -> ExampleImport:
    """Every onnx node test case that a spec in ``specs`` (keyed (domain, name)) can state."""
    import onnx

    result = ExampleImport(onnx.__version__)
    oversized: dict[tuple[str, str, int], list[tuple[int, Any]]] = {}
    for tc in node_testcases() if testcases is None else testcases:
        if _EXPANDED.search(tc.name):
            continue  # the function-body twin of a case: the same data, another model
        graph = tc.model.graph
        if len(graph.node) != 1:
            result.skip(tc.name, "several nodes")
            continue
        node = graph.node[0]
        spec = specs.get((node.domain or DEFAULT_DOMAIN, node.op_type))
        if spec is None:
            result.skip(tc.name, "no spec for the op")
            continue
        try:
            since, example = case_example(tc, spec, result.onnx_version)
        except Unstatable as exc:
            result.skip(tc.name, str(exc))
            continue
        size = _elements(tc)
        if size > max_elements:
            oversized.setdefault((spec.domain, spec.name, since), []).append((size, tc, example))
            continue
        _add(result, spec, since, tc, example)
    # an op version whose every case is large still gets its smallest one: a large example is
    # better than none (Erf's, Mish's and LRN's node tests are all 1,000+ elements)
    covered = {(i.domain, i.op, i.since) for i in result.examples}
    for key, items in sorted(oversized.items()):
        items.sort(key=lambda item: (item[0], item[1].name))
        for rank, (_, tc, example) in enumerate(items):
            if rank == 0 and key not in covered and items[0][0] <= FALLBACK_FACTOR * max_elements:
                _add(result, specs[key[:2]], key[2], tc, example)
            else:
                result.skip(tc.name, f"more than {max_elements} elements")
    return result


def _add(result: ExampleImport, spec: OpSpec, since: int, testcase: Any, example: Example) -> None:
    result.examples.append(ImportedExample(spec.domain, spec.name, since, example))
    result.precision[example.name] = (float(getattr(testcase, "rtol", 0.0)), float(getattr(testcase, "atol", 0.0)))
