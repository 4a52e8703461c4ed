"""Cases built valid by construction (layer 4 of docs/design.md).

``case`` (the ``Case`` record and its construction), ``draws`` (values, shapes, tensors, attribute
values), ``bindings`` (type bindings and their enumerators), ``derived`` (a case recast, with an
attribute or defaults), ``fixed`` (deterministic edge cases), ``generator`` (the one generator,
``generator.cases``), ``context`` (what family hooks work with), ``families`` (the hooks),
``hostile`` and ``edges`` (rule-breaking and edge variants), ``onnx_model`` (the one-node ONNX
model of a case), ``ranks`` and ``output_shapes`` (rank plans and expected shapes)."""

from .context import Context, Draft
from .generator import cases, generatable

__all__ = ["Context", "Draft", "cases", "generatable"]
