"""Verdicts held to ULP allowances: ULP math per type, the accuracy classes and their allowances,
just-within passes and just-beyond fails, NaN/inf/-0.0, the spec fields, and messages that name the
allowance (opkit.conformance.ulp, opkit.spec.accuracy, opkit.conformance.allowance, compare)."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from opkit.conformance import harness
from opkit.conformance.allowance import Allowance, allowance_for, class_allowance
from opkit.conformance.output_compare import Mismatch, compare
from opkit.results.outcomes import MISMATCH, PASS
from opkit.conformance.case_exec import check_outputs
from opkit.conformance.ulp import float_format, ulp
from opkit.importers.merge import merge_spec
from opkit.spec.accuracy import RESULT_ULPS, accuracy_of
from opkit.spec.dump import dump_spec
from opkit.spec.load import load_spec_file
from opkit.spec.model import Approximation, OpVersion, Tolerance
from opkit.cases.case import make_case

F32 = np.float32


def steps(value, n: int, dtype=F32):
    """``value`` moved ``n`` representable values up (n < 0: down)."""
    x = dtype(value)
    direction = dtype(np.inf) if n > 0 else dtype(-np.inf)
    for _ in range(abs(n)):
        x = np.nextafter(x, direction)
    return x


# -- ULP math


def _all_finite_values(dtype) -> np.ndarray:
    """Every finite non-negative value of a type of at most 16 bits, sorted."""
    bits = np.arange(2 ** (8 * np.dtype(dtype).itemsize), dtype=np.uint32)
    raw = bits.astype(np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16)
    with np.errstate(invalid="ignore"):
        values = raw.view(dtype).astype(np.float64)
    return np.unique(values[np.isfinite(values) & (values >= 0)])


@pytest.mark.parametrize("elem, dtype", [
    ("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16), ("float8e4m3fn", ml_dtypes.float8_e4m3fn),
    ("float8e4m3fnuz", ml_dtypes.float8_e4m3fnuz), ("float8e5m2", ml_dtypes.float8_e5m2),
    ("float8e5m2fnuz", ml_dtypes.float8_e5m2fnuz), ("float8e8m0", ml_dtypes.float8_e8m0fnu),
])
def test_ulp_is_the_gap_to_the_next_value_for_every_value_of_small_types(elem, dtype):
    values = _all_finite_values(dtype)
    gaps = np.diff(values)
    assert np.array_equal(ulp(values[:-1], elem), gaps), elem
    assert np.array_equal(ulp(-values[:-1], elem), gaps)  # the sign does not matter


def test_ulp_of_float4e2m1_and_float6():
    assert list(ulp([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], "float4e2m1")) == [0.5, 0.5, 0.5, 0.5, 1, 1, 2, 2]
    values = np.array(sorted({float(v) for v in np.arange(64, dtype=np.uint8).view(ml_dtypes.float6_e2m3fn)
                              if float(v) >= 0})) if hasattr(ml_dtypes, "float6_e2m3fn") else None
    if values is not None:
        assert np.array_equal(ulp(values[:-1], "float6e2m3"), np.diff(values))


@pytest.mark.parametrize("elem, dtype", [("float", np.float32), ("double", np.float64)])
def test_ulp_matches_numpy_spacing_for_float_and_double(elem, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 38, 2000)).astype(dtype)
    x = np.concatenate([x, [np.finfo(dtype).smallest_subnormal, np.finfo(dtype).smallest_normal,
                            1.0, 2.0]]).astype(dtype)
    assert np.array_equal(ulp(x, elem), np.spacing(np.abs(x)).astype(np.float64))
    big = np.finfo(dtype).max  # its spacing is to infinity; its ulp is the gap below it
    assert ulp(big, elem) == big - np.nextafter(big, dtype(0))


def test_ulp_at_zero_nan_and_inf():
    assert ulp(0.0, "float") == np.finfo(F32).smallest_subnormal
    assert ulp(-0.0, "double") == np.finfo(np.float64).smallest_subnormal
    assert np.isnan(ulp(np.nan, "float")) and ulp(np.inf, "float16") == np.inf
    assert ulp(1.0, "complex64") == ulp(1.0, "float") and float_format("int32") is None


# -- classes and their allowances


def _version(**fields) -> OpVersion:
    return OpVersion(since=1, **fields)


@pytest.mark.parametrize("domain, op, expected", [
    ("ai.onnx", "Relu", "exact"), ("ai.onnx", "Add", "rounded"), ("ai.onnx", "Sqrt", "rounded"),
    ("ai.onnx", "Exp", "elementary"), ("ai.onnx", "Erf", "elementary"), ("ai.onnx", "Gelu", "composite"),
    ("ai.onnx", "MatMul", "accumulating"), ("ai.onnx", "Softmax", "accumulating"),
    ("ai.onnx", "ReduceMax", "exact"), ("com.microsoft", "FusedMatMul", "accumulating"),
])
def test_default_classes(domain, op, expected):
    version = harness.load_op(domain, op).versions[-1]
    assert accuracy_of(domain, op, version).name == expected


def test_spec_class_wins_and_unknown_ops_get_the_widest_or_exact():
    assert accuracy_of("ai.onnx", "Exp", _version(accuracy="rounded")).source == "spec"
    # a project's op named like an ONNX op does not inherit its class
    float_out = _version(outputs=(), type_constraints=())
    assert accuracy_of("my.ops", "Add", float_out).name == "exact"  # no float output at all
    spec = harness.load_op("ai.onnx", "Add")
    mine = accuracy_of("my.ops", "Add", spec.versions[-1])
    assert (mine.name, mine.source) == ("accumulating", "unclassified")
    fast_gelu = harness.load_op("com.microsoft", "FastGelu").versions[-1]
    assert accuracy_of("com.microsoft", "FastGelu", fast_gelu).name == "approximate"
    assert fast_gelu.tolerance.atol == pytest.approx(2.2e-7)


@pytest.mark.parametrize("accuracy", ["exact", "rounded", "elementary", "composite", "accumulating"])
@pytest.mark.parametrize("elem, dtype", [("float", np.float32), ("float16", np.float16), ("double", np.float64)])
def test_just_within_passes_and_just_beyond_fails(accuracy, elem, dtype):
    allowance = class_allowance(accuracy, elem)
    k = int(RESULT_ULPS[accuracy])
    expected = np.array([1.5, -3.0, 0.75], dtype)
    within = np.array([steps(v, k, dtype) for v in expected], dtype)
    compare(expected, within, allowance=allowance)
    compare(expected, np.array([steps(v, -k, dtype) for v in expected], dtype), allowance=allowance)
    beyond = within.copy()
    beyond[1] = steps(expected[1], k + 1, dtype)
    with pytest.raises(Mismatch) as info:
        compare(expected, beyond, allowance=allowance)
    assert info.value.details["first_index"] == [1] and info.value.details["mismatched"] == 1


def test_ulps_are_of_the_larger_magnitude_across_a_binade():
    # 1.0 - 1 ulp(below) vs 1.0: the gap is half an ulp of 1.0, within 1 ulp of the larger value
    compare(np.array([1.0], F32), np.array([steps(1.0, -1)], F32), allowance=class_allowance("rounded", "float"))
    compare(np.array([steps(1.0, -2)], F32), np.array([1.0], F32), allowance=class_allowance("rounded", "float"))
    with pytest.raises(Mismatch):
        compare(np.array([steps(1.0, -3)], F32), np.array([1.0], F32), allowance=class_allowance("rounded", "float"))


def test_floor_allows_absolute_error_near_zero():
    allowance = Allowance("composite", "float", ulps=8.0, floor=2 * float(ulp(4.0, "float")))
    compare(np.array([1e-30], F32), np.array([9e-7], F32), allowance=allowance)  # 9e-7 < 2 ulp(4) = 9.5e-7
    with pytest.raises(Mismatch):
        compare(np.array([1e-30], F32), np.array([1e-6], F32), allowance=allowance)


def test_below_the_normal_range_any_class_but_exact_allows_flushing():
    tiny = np.finfo(F32).smallest_normal
    subnormal = np.array([tiny / 4], F32)
    compare(subnormal, np.zeros(1, F32), allowance=class_allowance("rounded", "float"))
    with pytest.raises(Mismatch):
        compare(subnormal, np.zeros(1, F32), allowance=class_allowance("exact", "float"))
    with pytest.raises(Mismatch):  # a normal result flushed is beyond it
        compare(np.array([tiny * 2], F32), np.zeros(1, F32), allowance=class_allowance("elementary", "float"))


# -- NaN, infinities, signed zero


def test_nan_inf_and_signed_zero():
    exact = class_allowance("exact", "float")
    wide = Allowance("accumulating", "float", ulps=1e6, floor=1e30)
    quiet, payload = np.array([np.nan], F32), np.array([0x7FC00123], np.uint32).view(F32)
    compare(quiet, payload, allowance=exact)  # any NaN meets any NaN
    compare(np.array([0.0], F32), np.array([-0.0], F32), allowance=exact)
    compare(np.array([np.inf, -np.inf], F32), np.array([np.inf, -np.inf], F32), allowance=exact)
    for expected, actual in ([np.nan, 1.0], [np.inf, -np.inf], [np.inf, np.finfo(F32).max], [1.0, np.nan]):
        with pytest.raises(Mismatch) as info:  # no allowance, however wide, covers these
            compare(np.array([expected], F32), np.array([actual], F32), allowance=wide)
        assert "must match exactly" in info.value.message


# -- data-dependent allowances


def _case(domain: str, op: str, since: int, binding: dict, attrs: dict, inputs: list):
    spec = harness.load_op(domain, op)
    version = spec.version(since)
    return version, make_case(spec, version, binding, attrs, inputs)


def test_matmul_floor_is_2n_ulps_of_the_summed_magnitudes():
    a = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]], F32)
    b = np.array([[2.0], [1.0], [1.0]], F32)
    version, case = _case("ai.onnx", "MatMul", 13, {"T": "tensor(float)"}, {}, [("A", a), ("B", b)])
    expected = harness.expected_outputs(case)
    allowance = allowance_for(version, case, 0, expected)
    summands = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert allowance.accuracy == "accumulating"
    assert np.array_equal(allowance.floor, 2 * 3 * ulp(summands, "float"))
    # y[1] = 1 + 0.25 - 4 = -2.75 with terms summing to 5.25: the floor, not the result, sets the bound
    bound = float(allowance.bound(expected[0], expected[0])[1, 0])
    assert bound == pytest.approx(2 * float(ulp(2.75, "float")) + 6 * float(ulp(5.25, "float")))
    e = expected[0][1, 0]
    k = 0
    while abs(float(steps(e, k + 1)) - float(e)) <= bound:  # the last float up that the bound still covers
        k += 1
    assert k > 10  # well past the 2 ulp the result alone would allow
    within, beyond = expected[0].copy(), expected[0].copy()
    within[1, 0], beyond[1, 0] = steps(e, k), steps(e, k + 1)
    ok = check_outputs(version, case, expected, [within])
    assert ok.outcome == PASS, ok.message
    bad = check_outputs(version, case, expected, [beyond])
    assert bad.outcome == MISMATCH and "class accumulating" in bad.message and "n=3 terms" in bad.message


def test_reduction_length_scales_the_allowance():
    small = np.ones((1, 4), F32)
    large = np.ones((1, 64), F32)
    floors = []
    for data in (small, large):
        version, case = _case("ai.onnx", "ReduceSum", 13, {"T": "tensor(float)"}, {"keepdims": 0},
                              [("data", data), ("axes", np.array([1], np.int64))])
        floors.append(float(np.max(allowance_for(version, case, 0, harness.expected_outputs(case)).floor)))
    assert floors == [2 * 4 * float(ulp(4.0, "float")), 2 * 64 * float(ulp(64.0, "float"))]


def test_softmax_allows_more_for_longer_rows_and_smaller_outputs():
    x = np.array([[0.0, -1.0, -20.0]], F32)
    version, case = _case("ai.onnx", "Softmax", 13, {"T": "tensor(float)"}, {"axis": 1}, [("input", x)])
    expected = harness.expected_outputs(case)
    ulps = allowance_for(version, case, 0, expected).ulps
    y = expected[0].astype(np.float64)
    assert np.allclose(ulps, 2 * (3 + 17 + np.abs(np.log(y))))
    assert ulps[0, 2] > ulps[0, 0]


def test_layer_norm_floor_grows_with_the_offset_the_mean_cancels():
    floors = []
    for offset in (0.0, 1000.0):
        x = np.array([[1.0, 2.0, 3.0, 4.0]], F32) + np.float32(offset)
        version, case = _case("ai.onnx", "LayerNormalization", 17, {"T": "tensor(float)", "U": "tensor(float)"},
                              {"axis": 1}, [("X", x), ("Scale", np.ones(4, F32)), ("B", np.zeros(4, F32))])
        floors.append(np.max(allowance_for(version, case, 0, harness.expected_outputs(case)).floor))
    assert floors[1] > 100 * floors[0]


def test_layer_norm_accumulates_in_the_stash_type():
    """float16 LayerNorm normalises in float32 by default (stash_type 1): float32's error, not float16's."""
    x = np.array([[300.0, 300.25, 300.5, 300.75]], np.float16)
    floors = {}
    for stash in (1, 10):  # float, float16
        version, case = _case("ai.onnx", "LayerNormalization", 17, {"T": "tensor(float16)", "U": "tensor(float)"},
                              {"axis": 1, "stash_type": stash},
                              [("X", x), ("Scale", np.ones(4, np.float16)), ("B", np.zeros(4, np.float16))])
        expected = (harness.expected_outputs(case)[0],) if stash == 1 else (np.zeros((1, 4), np.float16),)
        floors[stash] = np.max(allowance_for(version, case, 0, expected).floor)
    assert floors[10] > 1000 * floors[1]
    assert floors[1] < 0.01


def test_composite_floor_is_at_the_operands_scale():
    x = np.array([-3.0, 0.5, 8.0], F32)
    version, case = _case("ai.onnx", "Gelu", 20, {"T": "tensor(float)"}, {}, [("X", x)])
    allowance = allowance_for(version, case, 0, harness.expected_outputs(case))
    assert allowance.accuracy == "composite"
    assert np.array_equal(allowance.floor, 2 * ulp(np.maximum(1.0, np.abs(x)), "float"))


def test_approximate_adds_the_spec_tolerance_and_legacy_tolerances_stand():
    x = np.array([0.5], F32)
    version, case = _case("ai.onnx", "Gelu", 20, {"T": "tensor(float)"}, {}, [("X", x)])
    expected = harness.expected_outputs(case)
    approximate = dataclasses.replace(version, accuracy="approximate", tolerance=Approximation(atol=1e-3, doc="d"))
    allowance = allowance_for(approximate, case, 0, expected)
    assert allowance.accuracy == "approximate" and allowance.atol == 1e-3
    compare(expected[0], expected[0] + np.float32(9e-4), allowance=allowance)
    with pytest.raises(Mismatch):
        compare(expected[0], expected[0] + np.float32(9e-4), allowance=allowance_for(version, case, 0, expected))
    legacy = dataclasses.replace(version, tolerances=(Tolerance("float", rtol=0.5, atol=0.0),))
    allowance = allowance_for(legacy, case, 0, expected)
    assert (allowance.accuracy, allowance.rtol) == ("tolerances", 0.5)
    compare(expected[0], expected[0] * np.float32(1.4), allowance=allowance)


def test_integer_outputs_get_no_allowance():
    version, case = _case("ai.onnx", "Add", 14, {"T": "tensor(int32)"}, {},
                          [("A", np.array([1], np.int32)), ("B", np.array([2], np.int32))])
    assert allowance_for(version, case, 0, harness.expected_outputs(case)) is None


# -- messages and report details


def test_message_and_details_name_the_allowance():
    version, case = _case("ai.onnx", "Exp", 13, {"T": "tensor(float)"}, {}, [("input", np.array([0.0, 5.0], F32))])
    expected = harness.expected_outputs(case)
    e = expected[0][1]
    within = np.array([expected[0][0], steps(e, 8)], F32)
    beyond = np.array([expected[0][0], steps(e, 9)], F32)
    assert check_outputs(version, case, expected, [within]).outcome == PASS
    ex = check_outputs(version, case, expected, [beyond])
    assert ex.outcome == MISMATCH
    floor = 2 * float(ulp(5.0, "float"))  # 2 ulp of the argument's scale
    allowed = 8 * float(ulp(float(beyond[1]), "float")) + floor
    assert f"(allowed 8 ulp + {floor:.3g} floor = {allowed:.3g} for float, class elementary" in ex.message
    assert "first at [1]" in ex.message and "max 9 ulp" in ex.message
    assert ex.details["accuracy"] == "elementary" and ex.details["allowed_ulps"] == 8.0
    assert ex.details["allowed"] == pytest.approx(allowed) and "class elementary" in ex.details["allowance"]


# -- the spec fields


SPEC = """\
op: Approx
domain: my.ops
source:
  hand-written: tests
versions:
- since: 1
  outputs:
  - name: Y
    type: tensor(float)
  accuracy: approximate
  tolerance:
    ulps: 4.0
    atol: 1.0e-06
    doc: The text allows a polynomial approximation.
- since: 2
  outputs:
  - name: Y
    type: tensor(float)
  accuracy: elementary
"""


def _load(text: str):
    return load_spec_file("<string>", text.encode())


def test_accuracy_fields_round_trip():
    spec, diags = _load(SPEC)
    assert not diags, diags
    assert spec.versions[0].accuracy == "approximate"
    assert spec.versions[0].tolerance == Approximation(ulps=4.0, atol=1e-6, doc="The text allows a polynomial approximation.")
    assert spec.versions[1].accuracy == "elementary" and spec.versions[1].tolerance is None
    text = dump_spec(spec)
    assert text == SPEC
    again, diags = _load(text)
    assert not diags and again == spec


def test_reimport_keeps_the_accuracy_fields():
    spec, _ = _load(SPEC)
    imported = dataclasses.replace(spec, versions=tuple(dataclasses.replace(v, accuracy=None, tolerance=None)
                                                        for v in spec.versions))
    assert merge_spec(imported, spec).versions == spec.versions


@pytest.mark.parametrize("edit, message", [
    (("  accuracy: elementary\n", "  accuracy: elemental\n"), "elemental"),
    (("    ulps: 4.0\n    atol: 1.0e-06\n", "    ulps: -1\n"), "must be finite numbers >= 0"),
    (("    ulps: 4.0\n    atol: 1.0e-06\n", "    atol: .inf\n"), "must be finite numbers >= 0"),
    (("    ulps: 4.0\n    atol: 1.0e-06\n", ""), "allows nothing"),
    (("  accuracy: approximate\n", ""), "needs accuracy: approximate"),
    (("  accuracy: approximate\n", "  accuracy: composite\n"), "belongs to accuracy: approximate"),
    (("    doc: The text allows a polynomial approximation.\n", ""), "missing required key 'doc'"),
])
def test_accuracy_field_errors(edit, message):
    old, new = edit
    assert old in SPEC
    spec, diags = _load(SPEC.replace(old, new, 1))
    assert any(message in d.message for d in diags), [d.message for d in diags]


def test_approximate_without_tolerance_is_an_error():
    text = SPEC.replace("  accuracy: elementary\n", "  accuracy: approximate\n")
    _, diags = _load(text)
    assert any("needs a 'tolerance'" in d.message for d in diags)


# -- repro bundles apply the same allowance without opkit


def test_repro_script_applies_the_recorded_allowance(tmp_path):
    import json
    import runpy

    from opkit.conformance.repro import _allowances, repro_script

    x = np.array([0.0, 5.0], F32)  # at 5, the argument-scale floor is far below an ulp of e**5
    version, case = _case("ai.onnx", "Exp", 13, {"T": "tensor(float)"}, {}, [("input", x)])
    expected = harness.expected_outputs(case)
    allowances = _allowances(version, case, expected, ["output"], {"output": "float"})
    assert allowances["output"]["accuracy"] == "elementary" and allowances["output"]["ulps"] == 8.0
    (tmp_path / "case.json").write_text(json.dumps({"allowances": allowances}))
    (tmp_path / "repro.py").write_text(repro_script())
    script = runpy.run_path(str(tmp_path / "repro.py"), run_name="bundle")  # not __main__: nothing runs
    e = expected[0]
    within = np.array([e[0], steps(e[1], 8)], F32)
    beyond = np.array([e[0], steps(e[1], 9)], F32)
    assert script["compare"]("output", e, within, 0.0, 0.0, allowances["output"]) is None
    assert "1/2 elements differ" in script["compare"]("output", e, beyond, 0.0, 0.0, allowances["output"])


def test_reduce_l2_allows_squares_flushed_below_the_normal_range():
    """float32 L2 of values near 1e-38: exactly 3.8e-38, and 0 when the squares are computed in
    float32 (onnxruntime, onnx.reference): the text does not ask for subnormal squares. The
    squares' loss is sqrt(n smallest normals) for ReduceL2, n smallest normals for ReduceSumSquare;
    a normal-range result keeps its ulp bound."""
    tiny = float(np.finfo(np.float32).tiny)
    data = np.full((36,), 6e-39, F32)
    version, case = _case("ai.onnx", "ReduceL2", 18, {"T": "tensor(float)"}, {"keepdims": 0}, [("data", data)])
    expected = harness.expected_outputs(case)
    assert float(expected[0]) > 3e-38
    assert check_outputs(version, case, expected, [np.zeros((), F32)]).outcome == PASS
    assert check_outputs(version, case, expected, [np.array(1e-17, F32)]).outcome == MISMATCH  # past sqrt(36 tiny)
    normal = np.full((36,), 2.0, F32)
    version, case = _case("ai.onnx", "ReduceL2", 18, {"T": "tensor(float)"}, {"keepdims": 0}, [("data", normal)])
    expected = harness.expected_outputs(case)
    normal_bound = allowance_for(version, case, 0, expected)
    assert "squares below the normal range: 6.51e-19" in normal_bound.basis  # sqrt(36 tiny): nothing at 12
    assert float(normal_bound.bound(expected[0], expected[0])) < 1e-5 * float(expected[0])
    version, case = _case("ai.onnx", "ReduceSumSquare", 18, {"T": "tensor(float)"}, {"keepdims": 0}, [("data", data)])
    expected = harness.expected_outputs(case)
    assert float(allowance_for(version, case, 0, expected).floor) >= 36 * tiny


def test_reduce_prod_partial_products_that_overflow_are_undefined():
    """float32 [-19.95, 1.064, -1, FLT_MAX, -0.00993]: the exact product -7.17e37 fits, but in
    element order the fourth partial product overflows (onnxruntime and onnx.reference: -inf); the
    text fixes neither order nor precision, so rule PRODUCT leaves it out. Small products stay."""
    import numpy as np
    import pytest

    from opkit.conformance import harness
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "ReduceProd")

    def reduced(since, data):
        case = make_case(spec, spec.version(since), {"T": f"tensor({np.asarray(data).dtype.name})"}, {},
                         [("data", np.asarray(data))])
        return harness.expected_outputs(case)[0]

    for since in (1, 11, 13, 18):
        with pytest.raises(harness.Invalid, match="PRODUCT"):
            reduced(since, np.array([-19.94993, 1.064115, -1.0, 3.4028235e38, -0.0099309], np.float32))
        assert reduced(since, np.array([2.0, 3.0, 0.5], np.float32)).tolist() == [3.0]
        assert np.isnan(reduced(since, np.array([np.inf, 0.0], np.float32))).all()  # inf * 0 in any order
        assert reduced(since, np.array([2 ** 40, 2 ** 40], np.int64)).tolist() == [0]  # integers wrap, defined


def test_blackman_window_allows_the_float_computation_of_the_body():
    """The function body computes in float and casts last: a double window may carry float32
    rounding (0.42f - 0.5 + 0.08f = -1.49e-8 at the ends), as Hann and Hamming already allow."""
    from opkit.conformance import harness

    version = harness.load_op("ai.onnx", "BlackmanWindow").version(17)
    assert version.accuracy == "approximate" and version.tolerance.atol == 1e-6


def test_a_recurrence_carries_each_steps_rounding():
    """GRU-7, activations [Relu, Tanh], inputs up to 80.9, three steps: the update gate z reaches
    about 8000, so Ht = (1 - z) ht + z Ht-1 carries a tanh 4 ULPs off (within the elementary class)
    to 35 ULPs (onnxruntime 31942344 where the exact recurrence gives 31942274). The allowance
    follows the recurrence's response to each activation's rounding; an ordinary GRU keeps a tight
    one."""
    W = np.array([[[2.0, 1.0, 0.0, -2.0], [-1.0, -3.0, -3.0, -3.0], [-2.0, 2.0, 1.0, 3.0], [0.0, 1.0, 3.0, 2.0],
                   [1.0, 0.0, 0.0, 3.0], [-2.0, 2.0, 1.0, -3.0], [-1.0, 3.0, 0.0, -3.0], [2.0, 2.0, 2.0, -2.0],
                   [-3.0, 3.0, -3.0, 0.0], [-3.0, -1.0, 0.0, -1.0], [-1.0, -3.0, -3.0, -3.0], [-3.0, 1.0, 0.0, 1.0]]],
                 np.float32)
    X = np.array([[[17.533367, -0.000210103, 15.28971386, 0.001187708]], [[-80.904068, 0.64119452, 0.0819500014, 0.325469613]],
                  [[-0.0010407042, -0.0070458739, -6.5830297, 0.31576225]]], np.float32)
    spec = harness.load_op("ai.onnx", "GRU")
    version = spec.version(7)

    from opkit.conformance.accumulation import coarse

    def allowed(x, w, acts):
        case = make_case(spec, version, {"T": "tensor(float)", "T1": "tensor(int32)"},
                         {"hidden_size": 4, "activations": acts}, [("X", x), ("W", w), ("R", w)])
        expected = harness.expected_outputs(case)
        extra = np.asarray(allowance_for(version, case, 0, expected).floor) - \
            coarse(case, version, 0, expected, "float").floor  # what the recurrence adds
        return expected[0], extra

    y, extra = allowed(X, W, ["Relu", "Tanh"])
    assert abs(float(y[2, 0, 0, 3]) - 31942274.0) < 4
    assert extra[2, 0, 0, 3] >= 70  # onnxruntime's 35 ULPs of 2
    small_y, small_extra = allowed((X / 100).astype(np.float32), (W / 10).astype(np.float32), ["Sigmoid", "Tanh"])
    assert float(np.max(np.abs(small_y))) < 1 and float(np.max(small_extra)) < 1e-5
