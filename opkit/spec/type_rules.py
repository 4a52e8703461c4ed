"""Rules that constrain only the type binding.

Some ONNX definitions allow fewer type combinations than their type constraints list: the
function body of RMSNormalization-23 computes ``Y`` in ``X``'s type although the schema types it
``V``, so ONNX's own inference refuses every binding with ``T != V``. A spec says so with an
ordinary labelled rule that reads inputs only through ``.dtype`` (``holds: X.dtype ==
scale.dtype``). The kernel enforces it like any rule; the case generator, seeing that the rule
depends on the binding alone, never draws a binding it excludes, so opkit does not spend a run on
cases it knows are invalid and does not report them as "could not draw".

An optional input whose type parameter also types an output may be guarded with ``is None``
(``past_key is None or past_key.dtype == query.dtype``: GroupQueryAttention's cache type T_CACHE
also types present_key and present_value). The binding check takes every input as given, so it
excludes a binding the rule fails with the input present, also for the cases that leave the input
out: without it the binding still decides the output's type. A guarded input whose type parameter
types nothing else (Attention's attn_mask and its U) keeps the rule about values: its other
bindings stay, for the cases without the input.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import OpVersion, Rule
from .rules import parse_rules
from .scopes import pyname


@dataclass(frozen=True)
class _TypeOnly:
    """A stand-in for an input in a type-only rule: it has a dtype and nothing else."""

    dtype: object


def type_rules(version: OpVersion) -> tuple[Rule, ...]:
    """The version's rules that depend on the type binding alone (parsed once per version, see
    rules.parse_rules: parsing them per binding cost the sweep a fifth of its time, CastLike-21's
    381 bindings each asked)."""
    return tuple(r.rule for r in parse_rules(version) if r.type_only)


def binding_violation(version: OpVersion, binding: dict[str, str]) -> Rule | None:
    """The first type-only rule the binding breaks, or None. Inputs whose type parameter is not
    in the binding (fixed types) get their own element type."""
    rules = [r for r in parse_rules(version) if r.type_only]
    if not rules:
        return None
    import numpy as np

    from ..core.numpy_types import NUMPY_DTYPES
    from ..core.onnx_types import tensor_element

    scope: dict[str, object] = {"np": np}
    for p in version.inputs:
        elem = tensor_element(binding.get(p.type, p.type))
        dtype = NUMPY_DTYPES.get(elem) if elem else None
        if dtype is not None:
            scope[pyname(p.name)] = _TypeOnly(np.dtype(dtype))
    for rule in rules:
        try:
            if not eval(rule.code, scope):  # noqa: S307 - spec rules are code by design
                return rule.rule
        except Exception:  # noqa: BLE001 - a rule over an input this binding leaves untyped
            continue
    return None


__all__ = ["binding_violation", "type_rules"]
