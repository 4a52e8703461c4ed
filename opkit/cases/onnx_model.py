"""One-node ONNX models for cases.

A model is determined by its *signature*: op version, type binding, attributes, which inputs are
present and which are initializers (with their bytes). Graph inputs carry element type only (no
shape), so one prepared session serves every shape of a signature and the runner can stream many
examples through it.

IR version and opset: the node's domain is imported at the op version's ``since`` (the version in
force there is exactly the one under test). The IR version is the highest the backend accepts
(``Backend.max_ir_version``, for onnxruntime taken from the installed release: 1.16 reads IR 9,
1.31 reads 13, while onnx 1.23's helpers write 14 by default). Custom domains (com.microsoft, ...)
get their own opset import plus an ai.onnx import, no newer than the backend's ai.onnx opset.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..spec.model import OpVersion
from ..core.onnx_types import proto_domain
from .case import Case, input_parameter, param_elem
from ..core.values import (
    EMPTY_OPTIONAL,
    common_rank,
    element_of,
    inner_type,
    is_container_type,
    is_container_value,
    is_map_type,
    is_optional_type,
    is_sequence_type,
    map_types,
    value_signature,
)
from ..core.dtypes import elem_of, onnx_code
from ..kernels.runtime import element_type

DEFAULT_AI_ONNX_OPSET = 21  # ai.onnx import added next to custom domains


@dataclass(frozen=True)
class BuiltModel:
    key: str  # signature digest: equal keys -> interchangeable models
    model: onnx.ModelProto
    feeds: dict  # graph input name -> array
    output_names: tuple[str, ...]
    output_elems: tuple[str, ...]
    # what ONNX's own type and shape inference (strict, with data propagation) says is wrong with
    # the model, None when it accepts it or does not know the op: see ``schema_inference``
    inference_error: str | None = None


_ATTR_TYPES = {"float": onnx.AttributeProto.FLOAT, "int": onnx.AttributeProto.INT,
               "string": onnx.AttributeProto.STRING, "floats": onnx.AttributeProto.FLOATS,
               "ints": onnx.AttributeProto.INTS, "strings": onnx.AttributeProto.STRINGS}


def _attr_proto(name: str, value, attr_type: str | None):
    if attr_type == "type_proto" and isinstance(value, str):  # Optional's ``type``: a type string in the case
        return helper.make_attribute(name, value_type(value))
    if attr_type == "graph":  # a case carries a graph attribute as ONNX text (or a GraphProto)
        graph = onnx.parser.parse_graph(value) if isinstance(value, str) else getattr(value, "graph", value)
        return helper.make_attribute(name, graph)
    if attr_type == "float":
        value = float(value)
    elif attr_type == "floats":
        value = [float(v) for v in value]
    if attr_type == "tensor" or isinstance(value, np.ndarray):
        return helper.make_attribute(name, numpy_helper.from_array(np.asarray(value), name=name))
    if attr_type in _ATTR_TYPES:  # explicit type: empty lists are fine
        return helper.make_attribute(name, value, attr_type=_ATTR_TYPES[attr_type])
    return helper.make_attribute(name, value)


def tensor_proto(array: np.ndarray, name: str, elem: str) -> TensorProto:
    """An initializer holding ``array`` as ONNX element ``elem`` (strings, bfloat16, float8 ...)."""
    elem = elem_of(elem)
    if elem == "string":
        t = helper.make_tensor(name, TensorProto.STRING, array.shape,
                               [str(v).encode("utf-8") for v in array.ravel()])
        return t
    return numpy_helper.from_array(np.asarray(array), name)


def _shape_like(arr) -> bool:
    """A 1-D integer input (Resize's sizes, Reshape's shape, axes, pads ...): declared with its
    concrete length, since ONNX inference cannot check a shape tensor of symbolic length (onnx 1.23
    rejects Resize's ``sizes`` as "Number of elements of input 'sizes' (0)...")."""
    return arr is not None and not is_container_value(arr) and np.ndim(arr) == 1 and np.asarray(arr).dtype.kind in "iu"


def _input_dims(name: str, arr) -> list:
    if _shape_like(arr):
        return [int(np.shape(arr)[0])]
    return [f"{name}_{i}" for i in range(np.ndim(arr))]  # ranked, symbolic: one session per rank


def value_type(type_str: str, value=None, name: str = "") -> onnx.TypeProto:
    """The TypeProto of a value of ``type_str`` (tensor, sequence or optional, any nesting). A tensor
    is ranked like ``value`` when there is one (symbolic dims, see ``_input_dims``); a sequence's
    tensors get their common rank with unnamed dims (they may differ in size), or no shape when
    their ranks differ; an empty optional's element has no shape; a map's values are unshaped
    tensors of its value type (``map(int64, float)``), as ONNX declares them."""
    if is_map_type(type_str):
        key, val = map_types(type_str)
        return helper.make_map_type_proto(onnx_code(key), helper.make_tensor_type_proto(onnx_code(val), None))
    if is_sequence_type(type_str) and is_map_type(inner_type(type_str)):
        return helper.make_sequence_type_proto(value_type(inner_type(type_str)))
    if is_sequence_type(type_str):
        rank = common_rank(value) if isinstance(value, list) else None
        elem = element_of(type_str)
        return helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(onnx_code(elem), None if rank is None else [None] * rank))
    if is_optional_type(type_str):
        inner = None if value is EMPTY_OPTIONAL else value
        return helper.make_optional_type_proto(value_type(inner_type(type_str), inner, name))
    dims = None if value is None else _input_dims(name, value)
    return helper.make_tensor_type_proto(onnx_code(element_of(type_str) or type_str), dims)


def _input_key(arr):
    """What the declared graph input depends on: presence, rank (or a shape tensor's length),
    a sequence's common rank, an optional's emptiness."""
    if arr is None:
        return None
    if is_container_value(arr):
        return value_signature(arr)
    return np.shape(arr) if _shape_like(arr) else np.ndim(arr)


def signature_key(case: Case, ir_version: int, opset) -> str:
    h = hashlib.sha1()
    h.update(repr((case.domain, case.op, case.since, case.types, case.attributes, case.n_outputs,
                   tuple((n, _input_key(a)) for n, a in case.inputs), sorted(case.initializers),
                   ir_version, opset)).encode())
    for name, arr in case.inputs:
        if name in case.initializers and isinstance(arr, np.ndarray):
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(repr(arr.tolist()).encode() if arr.dtype == object else np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()[:20]


def model_opset(domain: str, since: int, min_opsets: dict | None) -> int | None:
    """The opset to import for an op version introduced at ``since``, on an engine that supports
    its domain from ``min_opsets[domain]`` on: that oldest opset where ``since`` is older (the
    caller has made sure the version is still in force there), else None (``since`` itself)."""
    oldest = (min_opsets or {}).get(domain or "ai.onnx")
    return oldest if oldest is not None and since < oldest else None


def build(case: Case, version: OpVersion, *, ir_version: int = 13, opset: int | None = None,
          companion_opset: int = DEFAULT_AI_ONNX_OPSET, infer: bool = True) -> BuiltModel:
    """The one-node model of ``case`` and the feeds for its graph inputs. ``ir_version`` and
    ``companion_opset`` (the ai.onnx import beside a custom domain's) are the backend's: no newer
    than it reads (onnxruntime 1.16 refuses IR 10 and opset 21). ``infer=False`` leaves ONNX shape
    inference out (the outputs stay unranked): a hostile model can abort onnx's C++ inference, and
    with it the process that asked."""
    binding = case.type_map
    attr_types = {a.name: a.type for a in version.attributes}
    node_inputs, graph_inputs, inits, feeds = [], [], [], {}
    formal = {p.name: p for p in version.inputs}
    for name, arr in case.inputs:
        if arr is None:
            node_inputs.append("")
            continue
        param = input_parameter(version, name)
        bound = binding.get(param.type, param.type)
        if is_container_type(bound):  # a sequence or optional: a graph input of its own type, never an initializer
            node_inputs.append(name)
            graph_inputs.append(helper.make_value_info(name, value_type(bound, arr, name)))
            feeds[name] = arr
            continue
        # a heterogeneous variadic input (QLinearConcat's scale, zero point, tensor triples) types each argument alone
        elem = element_type(arr) if param.option == "variadic" and not param.homogeneous else param_elem(param, binding)
        node_inputs.append(name)
        if name in case.initializers:
            inits.append(tensor_proto(arr, name, elem))
        else:
            dims = _input_dims(name, arr)
            graph_inputs.append(helper.make_tensor_value_info(name, onnx_code(elem), dims))
            feeds[name] = arr
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    out_names, out_elems, graph_outputs = [], [], []
    want = case.n_outputs or len(version.outputs)
    for i in range(want):
        p = version.outputs[min(i, len(version.outputs) - 1)]
        if i >= len(version.outputs) and p.option != "variadic":
            break
        bound = binding.get(p.type, p.type)
        try:
            elem = element_of(bound) if is_container_type(bound) else param_elem(p, binding)
        except Exception:
            continue
        if elem is None:
            continue
        name = p.name if i < len(version.outputs) else f"{p.name}_{i - len(version.outputs) + 1}"
        name = graph_output_name(name, formal)
        out_names.append(name)
        out_elems.append(elem)  # a sequence's or optional's tensor element type
        graph_outputs.append(helper.make_value_info(name, value_type(bound)) if is_container_type(bound)
                             else helper.make_tensor_value_info(name, onnx_code(elem), None))
    node = helper.make_node(case.op, node_inputs, out_names, domain=proto_domain(case.domain),
                            **{})
    for name, value in case.attributes:
        node.attribute.append(_attr_proto(name, value, attr_types.get(name)))
    graph = helper.make_graph([node], f"{case.op}_{case.since}", graph_inputs, graph_outputs, initializer=inits)
    pdomain = proto_domain(case.domain)
    opsets = [helper.make_opsetid(pdomain, opset if opset is not None and pdomain == "" else case.since)]
    if pdomain != "":
        opsets.append(helper.make_opsetid("", companion_opset))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=ir_version,
                              producer_name="opkit")
    error = _infer_output_shapes(model, strict=onnx_knows(case.op, pdomain, case.since)) if infer else None
    key = signature_key(case, ir_version, (opset or case.since, companion_opset))
    return BuiltModel(key, model, feeds, tuple(out_names), tuple(out_elems), error)


def graph_output_name(name: str, input_names) -> str:
    """An output's graph name: its formal name, unless an input has it too (BatchNormalization-1/6
    name both an input and an output 'mean'; a graph needs one name per value)."""
    return name + "_out" if name in input_names else name


def onnx_knows(op: str, domain: str, since: int) -> bool:
    """Whether onnx's registry defines exactly this op version (its inference can then judge it)."""
    try:
        return onnx.defs.get_schema(op, since, domain).since_version == since
    except Exception:  # noqa: BLE001 - custom domains (com.microsoft ...) are not in onnx's registry
        return False


def _infer_output_shapes(model: onnx.ModelProto, strict: bool = False) -> str | None:
    """Give graph outputs the shapes ONNX shape inference finds (symbolic where unknown), so that
    models pass onnx.checker (graph inputs and outputs need a shape); leave them unranked when
    inference cannot tell (or fails: the backend under test must still get the model).

    With ``strict`` (ops in onnx's registry) inference runs strictly with data propagation first
    and its complaint is returned: the schema's inference function is part of the operator's
    definition, so a model it rejects (a 2-D shape input to Reshape, a rank-2 ``values`` of
    OneHot, strides longer than the spatial rank ...) is not a conformance test input."""
    error = None
    if strict:
        try:
            inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        except Exception as exc:  # noqa: BLE001 - InferenceError, ValidationError
            error = " ".join(str(exc).split())[:500] or type(exc).__name__
        else:
            _copy_output_shapes(inferred, model)
            return None
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # noqa: BLE001
        return error
    _copy_output_shapes(inferred, model)
    return error


def _copy_output_shapes(inferred: onnx.ModelProto, model: onnx.ModelProto) -> None:
    found = {o.name: o for o in inferred.graph.output}
    for out in model.graph.output:
        got = found.get(out.name)
        if got is not None and out.type.WhichOneof("value") in ("sequence_type", "optional_type") \
                and got.type.WhichOneof("value") == out.type.WhichOneof("value"):
            out.type.CopyFrom(got.type)  # the element's inferred shape sits inside the container type
            continue
        if got is not None and got.type.tensor_type.HasField("shape"):
            out.type.tensor_type.shape.CopyFrom(got.type.tensor_type.shape)
