"""Family hook cast: string inputs of Cast/CastLike hold text that parses as the target type."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from opkit.cases import cases
from opkit.conformance.validity import measure
from opkit.conformance import harness


def test_string_to_number_casts_are_valid():
    for op in ("Cast", "CastLike"):
        spec = harness.load_op("ai.onnx", op)
        version = spec.version(25)
        bindings = [b for b in __import__("opkit.cases.bindings", fromlist=["all_bindings"]).all_bindings(version)
                    if b["T1"] == "tensor(string)"]
        assert bindings
        result = measure(spec, version, bindings[:6], 10)
        assert result.rate == 1.0, result


def test_numeric_inputs_keep_the_generic_draws_and_their_siblings():
    spec = harness.load_op("ai.onnx", "Cast")
    version = spec.version(25)
    seen = []

    @settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    # (a floating input cast to an integer type is drawn by the hook: integral values in range)
    @given(cases(spec, version, types={"T1": "tensor(float)", "T2": "tensor(double)"}, siblings=5))
    def check(case):
        seen.append(case.siblings)

    check()
    assert max(seen) > 0  # the hook left the case to the generic steps, which batch siblings
