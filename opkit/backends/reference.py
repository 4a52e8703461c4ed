"""``ReferenceBackend``: onnx's Backend API over opkit's generated reference kernels.

A model is executed node by node in topological order. Each node's op version is resolved from
the model's opset imports; a node whose op version has no kernel but an ONNX function body (the
spec's ``function:`` text, or a context-dependent body built by onnx.defs) is expanded and its
body executed. A node with graph attributes (If, Loop, Scan, SequenceMap) calls its kernel with
each graph as a ``Body`` (``opkit.kernels.lib._control_flow``) that runs the subgraph here, with the
node's outer scope; without a kernel, If, Loop and Scan run their subgraphs themselves. Anything
else raises NotImplementedError naming the op and version.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from ..core.values import as_value
from ..kernels import registry
from ..kernels.graph_body import attribute_value, shape_of, type_string
from ..kernels.lib import Body
from ..kernels.runtime import onnx_dtype

_ONNX_DOMAINS = ("", "ai.onnx")


def _domain_key(domain: str) -> str:
    return "ai.onnx" if domain in _ONNX_DOMAINS else domain


def to_value(proto: Any) -> Any:
    """TensorProto / SequenceProto / OptionalProto / ndarray -> runtime value."""
    if isinstance(proto, onnx.TensorProto):
        return numpy_helper.to_array(proto)
    if isinstance(proto, onnx.SequenceProto):
        return [to_value(t) for t in numpy_helper.to_list(proto)]
    if isinstance(proto, onnx.OptionalProto):
        return numpy_helper.to_optional(proto)
    return proto




def clear_caches() -> None:
    """Forget specs looked up for the previous project (opkit.core.project.activate calls this)."""
    _spec.cache_clear()


@functools.lru_cache(maxsize=None)
def _spec(domain: str, op: str):
    from ..spec import catalog
    from ..spec.load import load_specs

    entry = catalog.find(domain, op)
    if entry is None:
        return None
    specs, _ = load_specs([entry.path])
    return specs[0] if specs else None


@functools.lru_cache(maxsize=None)
def _parsed_function(text: str) -> onnx.FunctionProto:
    return onnx.parser.parse_function(text)


def _type_proto(value: Any) -> onnx.TypeProto:
    if isinstance(value, dict):  # a map (opkit.core.values.MapValue): its declared key and value types
        from ..core.dtypes import onnx_code

        key, val = getattr(value, "key_type", "int64"), getattr(value, "value_type", "float")
        return helper.make_map_type_proto(onnx_code(key), helper.make_tensor_type_proto(onnx_code(val), None))
    if isinstance(value, list):
        elem = _type_proto(value[0]) if value else helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, None)
        return helper.make_sequence_type_proto(elem)
    arr = np.asarray(value)
    code = helper.np_dtype_to_tensor_dtype(arr.dtype) if arr.dtype != object else onnx.TensorProto.STRING
    return helper.make_tensor_type_proto(code, arr.shape)


def _map_type_string(type_proto: onnx.TypeProto) -> str | None:
    """``map(K, V)`` or ``seq(map(K, V))`` for a graph input of a map type, else None: what a fed
    dict is typed as (``{1: 2.0}`` alone does not tell map(int64, float) from map(int64, double))."""
    from ..core.onnx_types import ELEMENT_TYPES

    which = type_proto.WhichOneof("value")
    if which == "sequence_type":
        inner = _map_type_string(type_proto.sequence_type.elem_type)
        return f"seq({inner})" if inner else None
    if which != "map_type":
        return None
    value = type_proto.map_type.value_type
    if value.WhichOneof("value") != "tensor_type":
        return None
    return (f"map({ELEMENT_TYPES[type_proto.map_type.key_type - 1]}, "
            f"{ELEMENT_TYPES[value.tensor_type.elem_type - 1]})")


class _Node:
    """A node prepared for execution: resolved kernel (or function body / control flow)."""

    __slots__ = ("proto", "op", "domain", "version", "kernel", "attrs", "inputs", "outputs", "kind",
                 "attr_values", "graphs")

    def __init__(self, proto: onnx.NodeProto, opsets: dict[str, int], functions: dict):
        self.proto = proto
        self.op = proto.op_type
        self.domain = _domain_key(proto.domain)
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attrs = {a.name: a for a in proto.attribute}
        self.kernel = None
        self.kind = "kernel"
        self.version = None
        if (proto.domain, proto.op_type) in functions:
            self.kind = "local-function"
            return
        opset = opsets.get(self.domain)
        if opset is None:
            raise NotImplementedError(f"{self.op}: the model imports no opset for domain {self.domain!r}")
        since = registry.version_for_opset(self.domain, self.op, opset)
        if since is None:
            try:
                since = onnx.defs.get_schema(self.op, opset, proto.domain).since_version
            except Exception:
                raise NotImplementedError(f"{self.domain}::{self.op} at opset {opset}: no spec and no "
                                          "schema for this op") from None
        self.version = since
        self.kernel = registry.get_kernel(self.domain, self.op, since)
        # graph attributes become Bodies at run time (they read the scope the node runs in)
        self.graphs = {name: a.g for name, a in self.attrs.items() if a.type == onnx.AttributeProto.GRAPH}
        if self.kernel is None:
            self.kind = self.op if self.op in ("If", "Loop", "Scan") and self.domain == "ai.onnx" else "function"
        else:
            self.attr_values = {name: attribute_value(a) for name, a in self.attrs.items() if name not in self.graphs}


class ReferenceRep(BackendRep):
    def __init__(self, model: onnx.ModelProto | onnx.GraphProto, opsets: dict[str, int] | None = None,
                 functions: dict | None = None, outer: dict | None = None):
        if isinstance(model, onnx.ModelProto):
            graph = model.graph
            opsets = {_domain_key(o.domain): o.version for o in model.opset_import}
            functions = {(f.domain, f.name): f for f in model.functions}
        else:
            graph = model
        self.opsets = opsets or {}
        self.functions = functions or {}
        self.graph = graph
        self.initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for sp in graph.sparse_initializer:
            self.initializers[sp.values.name] = numpy_helper.to_array(sp)
        self.input_names = [i.name for i in graph.input if i.name not in self.initializers]
        self.map_inputs = {i.name: t for i in graph.input if (t := _map_type_string(i.type))}
        self.output_names = [o.name for o in graph.output]
        self.nodes = [_Node(n, self.opsets, self.functions) for n in _toposort(graph, self.initializers, outer)]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs))
        env = dict(self.initializers)
        env.update(feeds)
        for name, type_str in self.map_inputs.items():
            if isinstance(env.get(name), (dict, list)):
                env[name] = as_value(env[name], type_str)
        return self.execute(env)

    def execute(self, env: dict[str, Any]) -> tuple[Any, ...]:
        for node in self.nodes:
            results = self._run_node(node, env)
            for name, value in zip(node.outputs, results):
                if name:
                    env[name] = value
        return tuple(env.get(name) for name in self.output_names)

    def execute_with_missing(self, env: dict[str, Any], missing: list[str]) -> tuple[Any, ...]:
        """Run with some function inputs absent: nodes see those names as empty (None)."""
        for node in self.nodes:
            node_args_missing = any(name in missing for name in node.inputs)
            if node_args_missing:
                saved = node.inputs
                node.inputs = ["" if name in missing else name for name in saved]
                try:
                    results = self._run_node(node, env)
                finally:
                    node.inputs = saved
            else:
                results = self._run_node(node, env)
            for name, value in zip(node.outputs, results):
                if name:
                    env[name] = value
        return tuple(env.get(name) for name in self.output_names)

    def _run_node(self, node: _Node, env: dict[str, Any]) -> Sequence[Any]:
        args = [env[name] if name else None for name in node.inputs]
        if node.kind == "kernel":
            bodies = {name: self._body(g, env) for name, g in node.graphs.items()}
            return node.kernel(*args, _n_outputs=len(node.outputs), **node.attr_values, **bodies)
        if node.kind in ("If", "Loop", "Scan"):
            return getattr(self, f"_run_{node.kind.lower()}")(node, args, env)
        if node.kind == "local-function":
            fn = self.functions[(node.proto.domain, node.op)]
            return _run_function(fn, node.proto, args, self.opsets, self.functions)
        fn = _function_body(node, args, self.opsets)
        if fn is None:
            raise NotImplementedError(f"{node.domain}::{node.op}-{node.version}: no reference kernel and no "
                                      "function body to expand")
        return _run_function(fn, node.proto, args, self.opsets, self.functions)

    # -- control flow -----------------------------------------------------------------------------
    def _subgraph(self, graph: onnx.GraphProto, env: dict[str, Any]) -> "ReferenceRep":
        return ReferenceRep(graph, self.opsets, self.functions, outer=env)

    def _body(self, graph: onnx.GraphProto, env: dict[str, Any]) -> Body:
        """``graph`` as the callable a control-flow kernel takes: its formal inputs bound over a copy
        of the scope the node runs in."""
        rep = self._subgraph(graph, env)
        names = [i.name for i in graph.input]

        def run(*values):
            local = dict(env)
            local.update(zip(names, values))
            return rep.execute(local)

        return Body(run, len(names), len(graph.output), tuple(type_string(o.type) for o in graph.output),
                    tuple(shape_of(o.type) for o in graph.output), graph.name)

    def _run_if(self, node: _Node, args, env):
        cond = bool(np.asarray(args[0]).reshape(-1)[0])
        branch = helper.get_attribute_value(node.attrs["then_branch" if cond else "else_branch"])
        rep = self._subgraph(branch, env)
        return rep.execute(dict(env))

    def _run_loop(self, node: _Node, args, env):
        body = helper.get_attribute_value(node.attrs["body"])
        rep = self._subgraph(body, env)
        max_trip = args[0]
        cond = args[1] if len(args) > 1 else None
        carried = list(args[2:])
        n_carried = len(carried)
        in_names = [i.name for i in body.input]
        scans: list[list[Any]] = [[] for _ in range(len(body.output) - 1 - n_carried)]
        i = 0
        keep_going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
        while keep_going and (max_trip is None or i < int(np.asarray(max_trip).reshape(-1)[0])):
            local = dict(env)
            local[in_names[0]] = np.array(i, dtype=np.int64)
            local[in_names[1]] = np.array(keep_going)
            for name, value in zip(in_names[2:], carried):
                local[name] = value
            out = rep.execute(local)
            keep_going = bool(np.asarray(out[0]).reshape(-1)[0])
            carried = list(out[1:1 + n_carried])
            for k, value in enumerate(out[1 + n_carried:]):
                scans[k].append(value)
            i += 1
        stacked = []
        for k, values in enumerate(scans):
            if values:
                stacked.append(np.stack(values) if isinstance(values[0], np.ndarray) else values)
            else:
                stacked.append(np.zeros((0,), dtype=np.float32))
        return tuple(carried) + tuple(stacked)

    def _run_scan(self, node: _Node, args, env):
        body = helper.get_attribute_value(node.attrs["body"])
        num_scan = helper.get_attribute_value(node.attrs["num_scan_inputs"])
        get = lambda name, default: (helper.get_attribute_value(node.attrs[name]) if name in node.attrs
                                     else default)
        if node.version == 8:  # batched: inputs are [sequence_lens, states..., scans...], axis 0 = batch
            seq_lens, rest = args[0], list(args[1:])
            if seq_lens is not None:
                raise NotImplementedError("Scan-8 with sequence_lens is not supported")
            batch = rest[0].shape[0]
            dirs = get("directions", [0] * num_scan)
            per_batch = []
            for b in range(batch):
                per_batch.append(self._scan_core(body, [x[b] for x in rest], num_scan, [0] * num_scan, dirs,
                                                 None, None, env))
            return tuple(np.stack([r[k] for r in per_batch]) for k in range(len(per_batch[0])))
        return self._scan_core(body, list(args), num_scan, get("scan_input_axes", None),
                               get("scan_input_directions", None), get("scan_output_axes", None),
                               get("scan_output_directions", None), env)

    def _scan_core(self, body, args, num_scan, in_axes, in_dirs, out_axes, out_dirs, env):
        n_state = len(args) - num_scan
        states, scan_inputs = list(args[:n_state]), list(args[n_state:])
        in_axes = in_axes or [0] * num_scan
        in_dirs = in_dirs or [0] * num_scan
        n_scan_out = len(body.output) - n_state
        out_axes = out_axes or [0] * n_scan_out
        out_dirs = out_dirs or [0] * n_scan_out
        scan_inputs = [np.moveaxis(x, a, 0) for x, a in zip(scan_inputs, in_axes)]
        steps = scan_inputs[0].shape[0] if scan_inputs else 0
        rep = self._subgraph(body, env)
        in_names = [i.name for i in body.input]
        collected: list[list[Any]] = [[] for _ in range(n_scan_out)]
        for t in range(steps):
            local = dict(env)
            for name, value in zip(in_names[:n_state], states):
                local[name] = value
            for name, x, d in zip(in_names[n_state:], scan_inputs, in_dirs):
                local[name] = x[steps - 1 - t] if d else x[t]
            out = rep.execute(local)
            states = list(out[:n_state])
            for k, value in enumerate(out[n_state:]):
                collected[k].append(value)
        outs = []
        for k, values in enumerate(collected):
            if out_dirs[k]:
                values = values[::-1]
            stacked = np.stack(values)
            axis = out_axes[k] if out_axes[k] >= 0 else out_axes[k] + stacked.ndim
            outs.append(np.moveaxis(stacked, 0, axis))
        return tuple(states) + tuple(outs)


def _toposort(graph: onnx.GraphProto, initializers: dict, outer: dict | None) -> list[onnx.NodeProto]:
    """Nodes in an order where every input is produced first (graph order when it already is)."""
    known = set(initializers) | {i.name for i in graph.input} | {""}
    if outer:
        known |= set(outer)
    nodes = list(graph.node)

    def needs(node: onnx.NodeProto) -> set[str]:
        names = set(node.input)
        for attr in node.attribute:  # subgraphs may use outer-scope names
            if attr.type == onnx.AttributeProto.GRAPH:
                names |= _implicit_inputs(attr.g)
        return names

    ordered, pending = [], nodes
    while pending:
        rest = []
        for node in pending:
            if needs(node) <= known:
                ordered.append(node)
                known |= set(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):  # unresolvable (names from an outer scope): keep graph order
            ordered.extend(rest)
            break
        pending = rest
    return ordered


def _all_outputs(nodes) -> set[str]:
    return {o for n in nodes for o in n.output}


def _implicit_inputs(graph: onnx.GraphProto) -> set[str]:
    produced = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: set[str] = set()
    for node in graph.node:
        used |= set(node.input)
        produced |= set(node.output)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                used |= _implicit_inputs(attr.g)
    return used - produced - {""}


def _function_body(node: _Node, args, opsets) -> onnx.FunctionProto | None:
    """The FunctionProto that defines ``node`` at the model's opset, or None."""
    opset = opsets.get(node.domain)
    spec = _spec(node.domain, node.op)
    if spec is not None:
        version = spec.version(node.version)
        if version is not None and version.function:
            bodies = [b for b in version.function if b.opset <= opset] or list(version.function)
            return _parsed_function(bodies[-1].text)
    try:
        schema = onnx.defs.get_schema(node.op, opset, node.proto.domain)
    except Exception:
        return None
    if schema.has_function:
        try:
            data = schema.get_function_with_opset_version(opset)
            if data is not None:
                return _parse_fn_bytes(data)
        except Exception:
            pass
    if schema.has_context_dependent_function:
        types = [(_type_proto(a) if a is not None else onnx.TypeProto()).SerializeToString() for a in args]
        try:
            data = schema.get_context_dependent_function_with_opset_version(
                opset, node.proto.SerializeToString(), types)
        except TypeError:
            data = schema.get_context_dependent_function(node.proto.SerializeToString(), types)
        if data:
            return _parse_fn_bytes(data)
    return None


def _spec_attribute_defaults(domain: str, op: str, opsets) -> dict[str, onnx.AttributeProto]:
    """Schema defaults of the op version in force (function bodies refer to them with @name)."""
    spec = _spec(domain, op)
    opset = opsets.get(domain)
    version = spec.version_at(opset) if spec is not None and opset is not None else None
    out = {}
    for a in (version.attributes if version else ()):
        if a.has_default:
            out[a.name] = helper.make_attribute(a.name, a.default)
    return out


def _parse_fn_bytes(data) -> onnx.FunctionProto:
    if isinstance(data, onnx.FunctionProto):
        return data
    fn = onnx.FunctionProto()
    fn.ParseFromString(data)
    return fn


def _run_function(fn: onnx.FunctionProto, call: onnx.NodeProto, args, opsets, functions):
    """Execute a function body for one call node (attributes substituted, names scoped)."""
    attrs = {a.name: a for a in call.attribute}
    defaults = {a.name: a for a in fn.attribute_proto if a.type != onnx.AttributeProto.UNDEFINED}
    spec_defaults = _spec_attribute_defaults(_domain_key(call.domain), call.op_type, opsets)
    nodes = []
    for n in fn.node:
        new = onnx.NodeProto()
        new.CopyFrom(n)
        del new.attribute[:]
        for a in n.attribute:
            if a.ref_attr_name:
                src = attrs.get(a.ref_attr_name) or defaults.get(a.ref_attr_name) \
                    or spec_defaults.get(a.ref_attr_name)
                if src is None:
                    continue
                b = onnx.AttributeProto()
                b.CopyFrom(src)
                b.name = a.name
                new.attribute.append(b)
            else:
                new.attribute.append(a)
        nodes.append(new)
    fn_opsets = dict(opsets)
    for o in fn.opset_import:
        fn_opsets[_domain_key(o.domain)] = o.version
    graph = helper.make_graph(nodes, fn.name, [helper.make_value_info(n, onnx.TypeProto()) for n in fn.input],
                              [helper.make_value_info(n, onnx.TypeProto()) for n in fn.output])
    rep = ReferenceRep(graph, fn_opsets, functions)
    present = {name: v for name, v in zip(fn.input, args) if v is not None}
    missing = [name for k, name in enumerate(fn.input) if k >= len(args) or args[k] is None]
    return rep.execute_with_missing(present, missing)




class ReferenceBackend(Backend):
    """onnx Backend API: ``prepare`` / ``run_model`` / ``run_node`` over opkit's reference kernels."""

    name = "reference"
    container_values = True  # opkit's kernels take lists and None as they are

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return True

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> ReferenceRep:
        if isinstance(model, (bytes, str)):
            model = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model)
        return ReferenceRep(model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        opset = kwargs.get("opset_version")
        domain = _domain_key(node.domain)
        if opset is None:
            opset = onnx.defs.onnx_opset_version() if domain == "ai.onnx" else 1
        inputs = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
        n = _Node(node, {domain: opset}, {})
        if n.kind != "kernel" or n.graphs:
            rep = ReferenceRep(helper.make_graph([node], "run_node", [], []), {domain: opset}, {})
            return rep._run_node(rep.nodes[0], {name: v for name, v in zip(node.input, inputs)})
        attrs = {a.name: attribute_value(a) for a in node.attribute}
        return n.kernel(*inputs, **attrs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU


prepare = ReferenceBackend.prepare
run_model = ReferenceBackend.run_model
run_node = ReferenceBackend.run_node
supports_device = ReferenceBackend.supports_device

__all__ = ["ReferenceBackend", "ReferenceRep", "to_value", "attribute_value", "onnx_dtype"]
