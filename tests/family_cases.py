"""What the family-hook tests share: the op versions a family covers, and the cases drawn for one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from opkit.cases import cases
from opkit.conformance.validity import measure, spread
from opkit.conformance import harness
from opkit.cases.bindings import covering_bindings


def kernel_versions(ops, keep=lambda spec, version: True, domain: str = "ai.onnx") -> list:
    """One ``pytest.param(spec, version)`` per version of ``ops`` with a kernel that ``keep`` accepts."""
    out = []
    for op in ops:
        spec = harness.load_op(domain, op)
        out += [pytest.param(spec, v, id=f"{op}-{v.since}") for v in spec.versions
                if v.kernel is not None and keep(spec, v)]
    return out


def draw_cases(spec, version, n: int, *, seed_value: int = 1, types=None) -> list:
    """``n`` cases of the generator for ``version`` (generation only, a fixed seed: reproducible)."""
    out = []

    @seed(seed_value)
    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(cases(spec, version, types=types, initializers=False))
    def collect(case):
        out.append(case)

    collect()
    return out


def op_cases(op: str, since: int, n: int, *, seed_value: int = 1, types=None, domain: str = "ai.onnx") -> list:
    """``draw_cases`` for ``domain::op`` version ``since``."""
    spec = harness.load_op(domain, op)
    return draw_cases(spec, spec.version(since), n, seed_value=seed_value, types=types)


def assert_mostly_valid(spec, version, bindings: int, per_binding: int) -> None:
    """At least 90 % of the cases drawn for up to ``bindings`` evenly spread type bindings are valid."""
    result = measure(spec, version, spread(covering_bindings(version), bindings), per_binding)
    assert result.drawn and result.rate >= 0.9, result
