"""Random ops judged by statistics (opkit.conformance.random_judging, random_draws): the reference
kernel's own draws pass, draws that break the text's range or distribution fail with a message
naming the statistic, and the large variant of a case has the sample size the moments need."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opkit.cases.case import make_case
from opkit.conformance import harness
from opkit.conformance.case_exec import check_outputs
from opkit.conformance.output_compare import Mismatch
from opkit.conformance.random_draws import SAMPLE_SIZE, large_case
from opkit.conformance.random_judging import FALSE_ALARM, MIN_SAMPLE, hoeffding, judge
from opkit.results.outcomes import MISMATCH, PASS

N = 8192


def _case(op: str, attributes: dict, inputs: list, binding: dict, since: int = 22):
    spec = harness.load_op("ai.onnx", op)
    version = next(v for v in spec.versions if v.since == since)
    return version, make_case(spec, version, binding, attributes, inputs)


def _kernel_draw(version, case):
    expected = harness.expected_outputs(case)
    return expected, check_outputs(version, case, expected, list(expected))


def test_hoeffding_bound_is_the_textbook_one():
    # 2 exp(-2 n t^2) = 1e-6 at the returned t
    t = hoeffding(1.0, 4096)
    assert math.isclose(2 * math.exp(-2 * 4096 * t * t), FALSE_ALARM, rel_tol=1e-9)
    assert hoeffding(2.0, 4096) == pytest.approx(2 * t)


@pytest.mark.parametrize("op,attributes,inputs,binding", [
    ("RandomUniform", {"shape": [N], "low": -2.0, "high": 3.0, "seed": 5.0}, [], {"T": "tensor(float)"}),
    ("RandomUniform", {"shape": [N], "dtype": 10}, [], {"T": "tensor(float16)"}),
    ("RandomNormal", {"shape": [N], "mean": 10.0, "scale": 0.5, "seed": 1.0}, [], {"T": "tensor(float)"}),
    ("RandomNormal", {"shape": [N], "dtype": 16}, [], {"T": "tensor(bfloat16)"}),
    ("RandomUniformLike", {"low": 1.0, "high": 1.5}, [("input", np.zeros(N, np.float64))],
     {"T1": "tensor(double)", "T2": "tensor(double)"}),
    ("RandomNormalLike", {"scale": 3.0}, [("input", np.zeros(N, np.float32))],
     {"T1": "tensor(float)", "T2": "tensor(float)"}),
    ("Bernoulli", {}, [("input", np.resize(np.array([0.0, 0.1, 0.7, 1.0], np.float32), N))],
     {"T1": "tensor(float)", "T2": "tensor(float)"}),
    ("Multinomial", {"sample_size": N, "dtype": 7}, [("input", np.array([[0.0, 1.0, 2.0], [-3.0, 0.0, 0.0]], np.float32))],
     {"T1": "tensor(float)", "T2": "tensor(int64)"}),
])
def test_the_kernels_own_draw_passes_every_check(op, attributes, inputs, binding):
    version, case = _case(op, attributes, inputs, binding)
    _, ex = _kernel_draw(version, case)
    assert ex.outcome == PASS, ex.message
    notes = " ".join(ex.details["statistics"])
    assert "mean" in notes or "frequency" in notes  # the moments were checked, not skipped
    assert f"n={N}" in notes


def test_dropout_training_draw_passes_and_its_kept_fraction_is_checked():
    data = np.linspace(1.0, 2.0, N).astype(np.float32)
    version, case = _case("Dropout", {"seed": 3}, [("data", data), ("ratio", np.array(0.3, np.float32)),
                                                   ("training_mode", np.array(True))],
                          {"T": "tensor(float)", "T1": "tensor(float)", "T2": "tensor(bool)"})
    expected, ex = _kernel_draw(version, case)
    assert ex.outcome == PASS, ex.message
    assert "kept fraction" in " ".join(ex.details["statistics"])
    out, mask = expected
    flipped = check_outputs(version, case, expected, [out, ~mask])  # the mask disagrees with the output
    assert flipped.outcome == MISMATCH and "mask" in flipped.message
    halved = check_outputs(version, case, expected, [np.where(mask, data, 0).astype(np.float32), mask])
    assert halved.outcome == MISMATCH and "data * scale" in halved.message  # kept values not scaled


def test_dropout_outside_training_must_return_the_input():
    data = np.arange(6, dtype=np.float32)
    version, case = _case("Dropout", {}, [("data", data)], {"T": "tensor(float)", "T1": "tensor(float)",
                                                            "T2": "tensor(bool)"})
    expected, ex = _kernel_draw(version, case)
    assert ex.outcome == PASS
    wrong = check_outputs(version, case, expected, [data * 2, expected[1]])
    assert wrong.outcome == MISMATCH


def test_a_biased_uniform_draw_fails_naming_statistic_value_bound_and_n():
    version, case = _case("RandomUniform", {"shape": [N]}, [], {"T": "tensor(float)"})
    expected = harness.expected_outputs(case)
    biased = np.sqrt(np.random.default_rng(0).uniform(0, 1, N)).astype(np.float32)  # in range, mean 2/3
    ex = check_outputs(version, case, expected, [biased])
    assert ex.outcome == MISMATCH
    assert ex.message.startswith("mean 0.66") and "outside 0.5 +- " in ex.message
    assert f"(n={N}, false alarm <= 1e-06)" in ex.message
    assert ex.details["statistic"] == "mean" and ex.details["n"] == N


def test_uniform_range_allows_high_but_nothing_past_it():
    version, case = _case("RandomUniform", {"shape": [4], "low": 0.0, "high": 1.0}, [], {"T": "tensor(float)"})
    expected = harness.expected_outputs(case)
    at_high = np.array([0.0, 0.5, 1.0, 0.25], np.float32)  # the text does not exclude high
    assert check_outputs(version, case, expected, [at_high]).outcome == PASS
    past = np.array([0.0, 0.5, 1.0001, 0.25], np.float32)
    ex = check_outputs(version, case, expected, [past])
    assert ex.outcome == MISMATCH and "outside [low, high]" in ex.message
    assert "moments not checked: n=4" in " ".join(check_outputs(version, case, expected, [at_high])
                                                  .details["statistics"])


def test_normal_with_the_wrong_scale_fails_the_variance_check():
    version, case = _case("RandomNormal", {"shape": [N], "scale": 2.0, "dtype": 11}, [], {"T": "tensor(double)"})
    expected = harness.expected_outputs(case)
    narrow = np.random.default_rng(1).normal(0.0, 1.8, N)  # the mean is right, the spread 10% short
    ex = check_outputs(version, case, expected, [narrow])
    assert ex.outcome == MISMATCH and ex.message.startswith("mean squared deviation from mean")


def test_bernoulli_values_and_sure_outcomes():
    p = np.array([0.0, 1.0, 0.5], np.float32)
    version, case = _case("Bernoulli", {}, [("input", p)], {"T1": "tensor(float)", "T2": "tensor(float)"})
    expected = harness.expected_outputs(case)
    assert check_outputs(version, case, expected, [np.array([0, 1, 1], np.float32)]).outcome == PASS
    assert "neither 0 nor 1" in check_outputs(version, case, expected, [np.array([0, 1, 0.5], np.float32)]).message
    assert "probability of 0 or 1" in check_outputs(version, case, expected,
                                                    [np.array([1, 1, 0], np.float32)]).message
    big = np.full(N, 0.2, np.float32)
    version, case = _case("Bernoulli", {}, [("input", big)], {"T1": "tensor(float)", "T2": "tensor(float)"})
    ones = (np.arange(N) % 2).astype(np.float32)  # mean 0.5 for probabilities 0.2
    ex = check_outputs(version, case, harness.expected_outputs(case), [ones])
    assert ex.outcome == MISMATCH and ex.message.startswith("mean 0.5 outside 0.2")


def test_multinomial_indices_and_frequencies_follow_the_softmax():
    x = np.log(np.array([[0.7, 0.2, 0.1]], np.float32))
    version, case = _case("Multinomial", {"sample_size": N}, [("input", x)],
                          {"T1": "tensor(float)", "T2": "tensor(int32)"})
    expected = harness.expected_outputs(case)
    uniform = (np.arange(N) % 3).astype(np.int32).reshape(1, N)  # frequencies 1/3: not the softmax
    ex = check_outputs(version, case, expected, [uniform])
    assert ex.outcome == MISMATCH and "frequency of class 0 in row 0" in ex.message
    out_of_range = np.full((1, N), 3, np.int32)
    assert "class indices" in check_outputs(version, case, expected, [out_of_range]).message


def test_judge_skips_moments_for_small_samples_and_says_so():
    notes = judge("RandomNormal", {"mean": 0.0, "scale": 1.0}, {}, (np.zeros(3, np.float32),),
                  [np.array([0.1, -0.2, 9.0], np.float32)])
    assert notes == [f"moments not checked: n=3 < {MIN_SAMPLE} values"]


def test_shape_and_dtype_are_still_checked():
    with pytest.raises(Mismatch):
        judge("RandomUniform", {}, {}, (np.zeros(3, np.float32),), [np.zeros(4, np.float32)])
    with pytest.raises(Mismatch):
        judge("RandomUniform", {}, {}, (np.zeros(3, np.float32),), [np.zeros(3, np.float64)])


def test_low_above_high_is_not_judged():
    notes = judge("RandomUniform", {"low": 2.0, "high": 1.0}, {}, (np.zeros(3, np.float32),),
                  [np.array([5.0, 6.0, 7.0], np.float32)])
    assert notes[0].startswith("not judged: low 2 > high 1")


@pytest.mark.parametrize("op,attributes,inputs,binding,size", [
    ("RandomUniform", {"shape": [2, 3]}, [], {"T": "tensor(float)"}, SAMPLE_SIZE),
    ("Bernoulli", {}, [("input", np.array([[0.1, 0.9]], np.float32))], {"T1": "tensor(float)", "T2": "tensor(float)"},
     SAMPLE_SIZE),
    ("Multinomial", {"sample_size": 2}, [("input", np.zeros((4, 3), np.float32))],
     {"T1": "tensor(float)", "T2": "tensor(int32)"}, SAMPLE_SIZE),
])
def test_large_variant_has_enough_values_for_the_moments(op, attributes, inputs, binding, size):
    version, case = _case(op, attributes, inputs, binding)
    big = large_case(case)
    out = harness.expected_outputs(big)[0]
    assert out.size >= size >= MIN_SAMPLE
    ex = check_outputs(version, big, (out,), [out])
    assert ex.outcome == PASS and "n=" in " ".join(ex.details["statistics"])
    assert "moments not checked" not in " ".join(ex.details["statistics"])


def test_large_variant_of_an_empty_input_is_none():
    _, case = _case("Bernoulli", {}, [("input", np.zeros((0, 2), np.float32))],
                    {"T1": "tensor(float)", "T2": "tensor(float)"})
    assert large_case(case) is None


def test_kernel_draws_pass_over_many_seeds():
    """A false alarm rate of 1e-6 per check: 40 seeded kernel draws of each op never fail."""
    for seed in range(40):
        for op, attributes, binding in [
            ("RandomUniform", {"shape": [2048], "low": -1.0, "high": 4.0, "seed": float(seed)}, {"T": "tensor(float)"}),
            ("RandomNormal", {"shape": [2048], "mean": -3.0, "scale": 0.1, "seed": float(seed)},
             {"T": "tensor(float16)"}),
        ]:
            version, case = _case(op, attributes, [], binding)
            assert _kernel_draw(version, case)[1].outcome == PASS


@pytest.mark.parametrize("op,since,binding", [
    ("RandomUniform", 22, {"T": "tensor(float)"}),
    ("RandomNormal", 22, {"T": "tensor(double)"}),
    ("Bernoulli", 22, {"T1": "tensor(float)", "T2": "tensor(float)"}),
    ("Multinomial", 22, {"T1": "tensor(float)", "T2": "tensor(int64)"}),
    ("Dropout", 22, {"T": "tensor(float)", "T1": "tensor(float)", "T2": "tensor(bool)"}),
])
def test_the_reference_backend_passes_the_random_differential_suite(op, since, binding):
    """The kernel's own draws, run through the runner like any backend's, pass every check, and
    the records say what the moments found."""
    from opkit.backends.registry import resolve
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess

    spec = harness.load_op("ai.onnx", op)
    runner = Runner(BackendRunner(InProcess(resolve("reference"))), max_examples=6, seed=1, siblings=0)
    runner.run_differential(spec, spec.version(since), [binding])
    records = [r for r in runner.results if r.suite == "differential"]
    assert records and all(r.outcome == PASS for r in records), [(r.outcome, r.message) for r in records]


def test_a_backend_whose_bernoulli_draws_one_minus_p_fails_the_mean():
    """What onnxruntime 1.31.1 does (1 with probability 1 - p): the moment check catches it."""
    p = np.full(SAMPLE_SIZE, 0.2, np.float32)
    version, case = _case("Bernoulli", {}, [("input", p)], {"T1": "tensor(float)", "T2": "tensor(float)"})
    flipped = (np.random.default_rng(0).uniform(size=SAMPLE_SIZE) >= p).astype(np.float32)
    ex = check_outputs(version, case, harness.expected_outputs(case), [flipped])
    assert ex.outcome == MISMATCH and ex.message.startswith("mean 0.8") and "outside 0.2 +- 0.021" in ex.message


def test_a_passing_record_says_what_the_moments_checked():
    from opkit.backends.registry import resolve
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess

    spec = harness.load_op("ai.onnx", "RandomUniform")
    runner = Runner(BackendRunner(InProcess(resolve("reference"))), max_examples=4, seed=2, siblings=0)
    runner.run_differential(spec, spec.version(22), [{"T": "tensor(float)"}])
    record = next(r for r in runner.results if r.suite == "differential")
    assert record.outcome == PASS
    assert "moment check(s) passed (n up to 16384" in record.details["statistics"]
    assert "too small for moments" in record.details["statistics"]
    assert "_record" not in vars(runner)  # the runner's own recording is back
