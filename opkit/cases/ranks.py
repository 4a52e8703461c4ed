"""Which input ranks ONNX's own inference accepts for an op version, learned by probing.

Strategies draw each input's rank on its own (within the spec's ``rank`` rule when there is one).
Many ops tie ranks together or pin them (OneHot's ``values`` is 1-D and ``depth`` a scalar,
Attention's Q/K/V are 3-D or 4-D together, Conv's X and W share a rank, Reshape's ``shape`` is
1-D): independent draws then hit a valid combination so rarely that hypothesis gives up, and the
op goes untested. ONNX's schema inference is part of the operator definition and knows these
rules, so before drawing we ask it: one symbolic-shape model per candidate rank combination,
strict inference, no values. A few hundred inference calls (about 0.1 ms each) per op version
and type binding buy a rank plan that every later draw of that binding uses.

Only ops in onnx's registry can be probed; custom domains keep the independent draws. Ops with a
variadic input or a required attribute (other than an output-type attribute set from the binding)
are not probed either: their validity hinges on counts and attribute values a rank plan cannot
express.
"""

from __future__ import annotations

import itertools

import onnx
from onnx import helper

from ..spec.model import OpVersion
from ..core.onnx_types import proto_domain
from .draws import MAX_RANK
from .case import TYPE_ATTRIBUTES, param_elem
from .bindings import bind_type_attributes
from .memo import cache_by_identity
from ..core.dtypes import onnx_code
from .onnx_model import DEFAULT_AI_ONNX_OPSET, graph_output_name, onnx_knows

MAX_PROBE_RANK = MAX_RANK  # the highest rank strategies draw
MAX_JOINT = 400  # joint combinations checked; above this only the per-input probes apply
MAX_COMBOS = 20000  # combinations kept in a plan
ABSENT = -1  # an optional input left out


def _model(op: str, domain: str, since: int, version: OpVersion, binding: dict, ranks: list[int | None]):
    """A one-node model; ``ranks[i]`` None leaves input i unranked, ABSENT leaves it out."""
    names, graph_inputs = [], []
    for param, rank in zip(version.inputs, ranks):
        if rank == ABSENT:
            names.append("")
            continue
        names.append(param.name)
        dims = None if rank is None else [f"{param.name}_{i}" for i in range(rank)]
        graph_inputs.append(helper.make_tensor_value_info(param.name, onnx_code(param_elem(param, binding)), dims))
    while names and names[-1] == "":
        names.pop()
    inputs = {p.name for p in version.inputs}
    outputs = [graph_output_name(p.name, inputs) for p in version.outputs if p.option != "optional"] \
        or [graph_output_name(version.outputs[0].name, inputs)]
    node = helper.make_node(op, names, outputs, domain=domain)
    # output-type attributes (Cast's ``to``) follow the binding, as in drawn cases
    for name, value in bind_type_attributes(version, binding, {}).items():
        node.attribute.append(helper.make_attribute(name, value))
    graph = helper.make_graph([node], "probe", graph_inputs, [helper.make_empty_tensor_value_info(o) for o in outputs])
    opsets = [helper.make_opsetid(domain, since)]
    if domain != "":
        opsets.append(helper.make_opsetid("", DEFAULT_AI_ONNX_OPSET))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _accepts(model) -> bool:
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        return True
    except Exception:  # noqa: BLE001 - InferenceError / ValidationError: the combination is invalid
        return False


@cache_by_identity
def rank_plan(op: str, domain: str, version: OpVersion, binding_key: tuple) -> tuple | None:
    """Rank combinations (one entry per formal input: a rank, or ABSENT) that ONNX inference
    accepts for this binding; None when probing does not apply or learns nothing (every
    combination passes); () when inference rejects the binding at every rank."""
    binding = dict(binding_key)
    pdomain = proto_domain(domain)
    if any(p.option == "variadic" for p in version.inputs) or not version.inputs:
        return None
    if any(a.required and a.name not in TYPE_ATTRIBUTES for a in version.attributes):
        return None
    if not onnx_knows(op, pdomain, version.since):
        return None
    try:
        for p in version.inputs:
            param_elem(p, binding)
    except Exception:  # noqa: BLE001 - a type strategies cannot draw
        return None
    n = len(version.inputs)
    optional = [i for i, p in enumerate(version.inputs) if p.option == "optional"]
    combos: list[tuple] = []
    learned = False
    for absent in itertools.product((False, True), repeat=len(optional)):
        gone = {i for i, a in zip(optional, absent) if a}
        base = [ABSENT if i in gone else None for i in range(n)]
        if not _accepts(_model(op, pdomain, version.since, version, binding, base)):
            learned = True  # this presence pattern is invalid whatever the ranks (Resize: scales xor sizes)
            continue
        per_input: list[list[int]] = []
        for i, param in enumerate(version.inputs):
            if i in gone:
                per_input.append([ABSENT])
                continue
            allowed = [r for r in range(MAX_PROBE_RANK + 1) if (param.rank is None or param.rank.allows(r))
                       and _accepts(_model(op, pdomain, version.since, version, binding,
                                           [r if j == i else base[j] for j in range(n)]))]
            learned |= len(allowed) < MAX_PROBE_RANK + 1
            per_input.append(allowed)
        size = 1
        for allowed in per_input:
            size *= len(allowed)
        if size == 0:
            continue
        product = list(itertools.product(*per_input))
        if size <= MAX_JOINT:
            valid = [c for c in product if _accepts(_model(op, pdomain, version.since, version, binding, list(c)))]
            learned |= len(valid) < size
            product = valid
        combos += product
        if len(combos) > MAX_COMBOS:
            break
    if not learned:
        return None  # nothing learned: keep the independent draws (and their higher ranks)
    return tuple(combos[:MAX_COMBOS])
