"""Allowances: how far a backend's float output may be from the reference's, element by element.

An element matches when

    |actual - expected| <= ulps * ulp(max(|expected|, |actual|)) + floor + atol + rtol * max(|expected|, |actual|)

with ``ulp`` in the output element type (``opkit.conformance.ulp``). ``allowance_for`` fills the
terms in from the op's accuracy class (``opkit.spec.accuracy``, which says what each class allows
and why) and, where the allowance depends on the data, from the case:

- ``exact`` / ``rounded``: a fixed number of ULPs of the result, no floor.
- ``elementary``, ``composite`` (and ``approximate``): 8 ULPs of the result plus a floor of 2 ULPs
  of the operands' scale at each element, ``max(1, |float inputs there|) * prod(max(1, |float attributes|))``:
  cancellation between the formula's steps is absolute at that scale (``1 + erf(x)`` for Gelu), and
  so is an elementary function's own error where its result is far below its argument: argument
  reduction of sin/cos near a multiple of pi, tanh/sigmoid/exp near an asymptote (onnxruntime's
  double Sin errs by 36 ulp of a result near 0, its float Sigmoid returns 0 for 3.7e-9 at x = -19.4:
  both are an ulp of |x| or less in absolute terms, within what ONNX's own tests allow).
  ``approximate`` adds the spec's ``tolerance``.
- ``accumulating``: 2 ULPs of the result plus a per-op model of what any summation order may
  lose, from the reduction length and the summands' magnitudes (``opkit.conformance.accumulation``).

Every class but ``exact`` also allows any deviation below the smallest normal number.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.accuracy import KNOWN_DOMAINS, OPERAND_ULPS, RESULT_ULPS, accuracy_of
from .accumulation import MODELS, coarse, finite_max, float_inputs
from .ulp import float_elem, float_format, ulp, wide


@dataclass(frozen=True)
class Allowance:
    """What a float output may deviate by, per element (arrays broadcast to the output's shape)."""

    accuracy: str  # the accuracy class, or "tolerances" for a spec's legacy per-dtype rtol/atol
    elem: str  # the output element type the ULPs are in
    ulps: Any = 0.0  # ULPs of the result, scalar or per element
    floor: Any = 0.0  # absolute, scalar or per element (cancellation: operand scale, summand magnitude)
    rtol: float = 0.0
    atol: float = 0.0
    basis: str = ""  # how the numbers were derived, for messages: "n=12 terms", "spec tolerances"
    tiny: float = 0.0  # any deviation below the smallest normal (flush-to-zero; see class_allowance)

    def bound(self, expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
        """The allowed ``|actual - expected|`` at each element (float64, the arrays' shape)."""
        e, a = wide(expected), wide(actual)
        with np.errstate(invalid="ignore", over="ignore"):
            m = np.maximum(np.abs(e), np.abs(a))
            out = np.broadcast_to(self.rtol * m + self.atol + self.tiny, m.shape).astype(np.float64)
            if np.any(self.ulps):
                out = out + _fit(self.ulps, m.shape) * ulp(m, self.elem)
            if np.any(self.floor):
                out = out + np.nan_to_num(_fit(self.floor, m.shape), nan=0.0)
        return np.nan_to_num(out, nan=0.0)  # an allowance that cannot be computed allows nothing

    @property
    def label(self) -> str:
        return "spec tolerances" if self.accuracy == "tolerances" else f"class {self.accuracy}"

    def at(self, index: tuple) -> tuple[float, float]:
        """(ULPs, floor) at one element."""
        return _pick(self.ulps, index), _pick(self.floor, index)

    def describe(self, index: tuple, bound: float) -> str:
        """e.g. '2 ulp = 2.4e-07 for float, class elementary' (at one element)."""
        ulps, floor = self.at(index)
        parts = []
        if ulps:
            parts.append(f"{ulps:.3g} ulp")
        if floor:
            parts.append(f"{floor:.3g} floor")
        if self.rtol:
            parts.append(f"rtol {self.rtol:g}")
        if self.atol:
            parts.append(f"atol {self.atol:g}")
        if self.tiny and (not parts or self.tiny > bound / 2):  # only where it is what allows the most
            parts.append(f"{self.tiny:.3g} below the normal range")
        amount = f"{' + '.join(parts)} = {bound:.3g}" if parts else "0"
        return f"allowed {amount} for {self.elem}, {self.label}" + (f"; {self.basis}" if self.basis else "")

    def details(self, index: tuple, bound: float) -> dict:
        """For the report's case details: the allowance at the first differing element."""
        ulps, floor = self.at(index)
        out = {"accuracy": self.accuracy, "allowed": bound, "allowed_ulps": ulps, "allowed_floor": floor + self.tiny}
        if self.rtol or self.atol:
            out.update(rtol=self.rtol, atol=self.atol)
        if self.basis:
            out["allowance_basis"] = self.basis
        return out


def _fit(value, shape: tuple) -> np.ndarray:
    """``value`` broadcast to ``shape``; one that does not fit (a per-element allowance handed a
    value of another shape) counts with its largest entry."""
    arr = np.asarray(value, dtype=np.float64)
    try:
        return np.broadcast_to(arr, shape)
    except ValueError:
        return np.full(shape, np.nanmax(arr) if arr.size else 0.0)


def _pick(value, index: tuple) -> float:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return float(arr)
    return float(arr[index]) if len(index) == arr.ndim else float(arr.reshape(-1)[0])


def class_allowance(accuracy: str, elem: str) -> Allowance:
    """The data-independent part of a class: what compare() uses without a case. Every class but
    ``exact`` allows an absolute deviation below the smallest normal number: ONNX does not require
    subnormal support, and flush-to-zero / denormals-are-zero modes change results exactly there."""
    tiny = float_format(elem).tiny if accuracy != "exact" else 0.0
    return Allowance(accuracy, elem, ulps=RESULT_ULPS[accuracy], tiny=tiny)


def allowance_for(version, case, index: int, expected: tuple) -> Allowance | None:
    """The allowance for output ``index`` of ``case`` (None when it holds no floats)."""
    out = expected[index]
    tensors = [t for t in out if t is not None] if isinstance(out, (list, tuple)) else [out]
    elem = float_elem(tensors[0]) if tensors and tensors[0] is not None else None
    if elem is None:
        return None
    for tol in getattr(version, "tolerances", ()) or ():
        if tol.dtype == elem:  # a spec's explicit per-dtype numbers stand as written
            return Allowance("tolerances", elem, rtol=tol.rtol, atol=tol.atol, basis=f"spec tolerances for {elem}")
    accuracy = accuracy_of(case.domain, case.op, version).name
    base = class_allowance(accuracy, elem)
    if accuracy in ("exact", "rounded"):
        return base
    if isinstance(out, (list, tuple)):  # a sequence's tensors: one allowance for all, so no per-element terms
        parts = coarse(case, version, index, expected, elem)
        return dataclasses.replace(base, floor=parts.floor, basis=parts.basis)
    out = np.asarray(out)
    if accuracy == "accumulating":
        model = MODELS.get(case.op) if case.domain in KNOWN_DOMAINS else None
        model = model or coarse
        try:
            parts = model(case, version, index, expected, elem)
        except Exception:  # noqa: BLE001 - a model that cannot read this case: the coarse bound still applies
            parts = coarse(case, version, index, expected, elem)
        return dataclasses.replace(base, ulps=np.maximum(base.ulps, parts.ulps), floor=parts.floor, basis=parts.basis)
    scale = _operand_scale(case, out.shape)
    allowance = dataclasses.replace(base, floor=OPERAND_ULPS * ulp(scale, elem),
                                    basis="floor: 2 ulp of the operands' scale")
    tol = getattr(version, "tolerance", None)
    if accuracy == "approximate" and tol is not None:
        allowance = dataclasses.replace(allowance, ulps=allowance.ulps + tol.ulps, rtol=tol.rtol, atol=tol.atol,
                                        basis=allowance.basis + "; plus the spec's tolerance")
    return allowance


# ------------------------------------------------------------------------------------------------
# composite: the operands' scale


def _float_attribute_scale(case) -> float:
    """prod(max(1, |a|)) over float attributes (lists: their largest): how much a formula's
    coefficients can magnify an intermediate."""
    scale = 1.0
    for value in case.kernel_attributes().values():
        values = value if isinstance(value, (list, tuple)) else [value]
        floats = [abs(v) for v in values if isinstance(v, float) and math.isfinite(v)]
        if floats:
            scale *= max(1.0, max(floats))
    return scale


def _operand_scale(case, shape: tuple) -> np.ndarray:
    """max(1, |float operands|) at each output element (an operand that does not broadcast to the
    output counts with its largest magnitude), times the attribute scale. Infinite operands do not
    count: a step with an infinity gives an infinity or saturates exactly."""
    scale = np.ones(shape)
    for mag in float_inputs(case):
        mag = np.where(np.isfinite(mag), mag, 0.0)
        try:
            scale = np.maximum(scale, np.broadcast_to(mag, shape))
        except ValueError:
            scale = np.maximum(scale, finite_max(mag))
    return scale * _float_attribute_scale(case)
