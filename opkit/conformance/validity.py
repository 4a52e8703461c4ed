"""How many drawn cases are valid: the measurement behind "valid by construction".

A case is valid when ONNX's own inference accepts its model and the reference kernel accepts its
inputs (types, the spec's rules, the compute core) within the oracle's time limit: exactly the
final check the runner applies before a case may reach a backend.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..spec.model import OpSpec, OpVersion


@dataclass(frozen=True)
class Validity:
    """Drawn and valid cases of one op version (over the bindings measured)."""

    domain: str
    op: str
    since: int
    drawn: int
    valid: int
    why: str = ""  # the first rejection seen
    error: str = ""  # generation failed altogether (nothing drawn)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.valid / self.drawn if self.drawn else 0.0


def spread(bindings: list, count: int) -> list:
    """At most ``count`` of ``bindings``, evenly spaced over the list (first one included)."""
    return bindings[::max(1, len(bindings) // count)][:count]


def rejection(case, version: OpVersion) -> str | None:
    """Why the final check rejects ``case``, or None when it is valid."""
    from . import harness
    from ..cases.onnx_model import build

    try:
        error = build(case, version).inference_error
    except Exception as exc:  # noqa: BLE001 - a model opkit cannot build is not a valid case
        return f"model: {type(exc).__name__}: {exc}"
    if error:
        return f"onnx inference: {error}"
    try:
        harness.expected_outputs(case)
    except harness.Invalid as exc:
        return f"kernel: {exc}"
    return None


def measure(spec: OpSpec, version: OpVersion, bindings: list[dict], per_binding: int, seed: int = 0) -> Validity:
    """Draw ``per_binding`` cases for each binding through ``opkit.cases.cases`` and count the valid ones."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from ..cases.generator import cases

    counts = {"drawn": 0, "valid": 0, "why": "", "error": ""}
    start = time.perf_counter()
    for binding in bindings:
        def check(case):
            counts["drawn"] += 1
            why = rejection(case, version)
            if why is None:
                counts["valid"] += 1
            elif not counts["why"]:
                counts["why"] = why

        test = given(cases(spec, version, types=binding, initializers=False))(check)
        test = hseed(seed)(settings(max_examples=per_binding, database=None, deadline=None,
                                    suppress_health_check=list(HealthCheck), phases=(Phase.generate,))(test))
        try:
            test()
        except Exception as exc:  # noqa: BLE001 - generation itself failed: reported, not counted
            counts["error"] = counts["error"] or f"{type(exc).__name__}: {str(exc)[:300]}"
    return Validity(spec.domain, spec.name, version.since, counts["drawn"], counts["valid"], counts["why"][:300],
                    counts["error"], round(time.perf_counter() - start, 3))
