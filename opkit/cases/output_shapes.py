"""Graph outputs with a shape, for backends that run ``onnx.checker`` on what they are given.

onnx's checker wants every input and output of a main graph to carry a shape (the rank, with dims
that may be symbolic): "Field 'shape' of 'type' is required but missing". opkit's models take
output shapes from ONNX's shape inference, which says nothing for ops outside onnx's registry
(com.microsoft::Trilu) nor for old versions without an inference function (Add-1). A Backend-API
backend such as onnxruntime's then refuses a valid model, and that refusal is opkit's doing, not
the runtime's. ``with_output_ranks`` gives those outputs symbolic dims of the rank the reference
kernel's output has for the case; the rank is part of the model's signature, so an op whose output
rank depends on the values (Squeeze without axes) gets one model per rank.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import onnx

from .onnx_model import BuiltModel


def unshaped_outputs(model: onnx.ModelProto) -> list[str]:
    """Names of the tensor outputs that carry no shape (unknown rank)."""
    return [o.name for o in model.graph.output
            if o.type.HasField("tensor_type") and not o.type.tensor_type.HasField("shape")]


def with_output_ranks(built: BuiltModel, ranks: list[int | None]) -> BuiltModel:
    """``built`` with each unshaped output ``i`` given ``ranks[i]`` symbolic dims (outputs whose
    rank is None, or that have a shape already, are left alone); its key says which ranks."""
    missing = set(unshaped_outputs(built.model))
    chosen = {}
    for i, out in enumerate(built.model.graph.output):
        if out.name in missing and i < len(ranks) and ranks[i] is not None:
            chosen[out.name] = int(ranks[i])
    if not chosen:
        return built
    model = onnx.ModelProto()
    model.CopyFrom(built.model)
    for out in model.graph.output:
        rank = chosen.get(out.name)
        if rank is None:
            continue
        shape = out.type.tensor_type.shape
        shape.SetInParent()  # a rank-0 output still needs the (empty) shape field
        for j in range(rank):
            shape.dim.add().dim_param = f"{out.name}_{j}"
    key = hashlib.sha1(f"{built.key}:{sorted(chosen.items())}".encode()).hexdigest()[:20]
    return replace(built, key=key, model=model)
