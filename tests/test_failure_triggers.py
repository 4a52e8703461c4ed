"""Two bugs of one binding that fail the same way are told apart by what triggered them
(opkit.conformance.triggers): an empty tensor, a NaN or infinity, or the rule a hostile input
breaks. Without it the second, found behind the first, was never searched for."""

from __future__ import annotations

import re

import numpy as np

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.runner import BackendRunner, Runner, valid_case
from opkit.conformance.triggers import NON_FINITE, VALID, broken_rule, masked_by, regime, trigger
from opkit.conformance.worker import Worker
from opkit.strategies import edge_cases, make_case

FAKES = "test_conformance_fakes"
TRILU = harness.load_op("ai.onnx", "Trilu")


def _trilu_case(x):
    version = TRILU.version(14)
    return make_case(TRILU, version, {"T": "tensor(float)"}, {}, [("input", x)])


def test_the_regime_of_a_case():
    assert regime(_trilu_case(np.array([[1, np.nan]], np.float32))) == NON_FINITE
    assert regime(_trilu_case(np.ones((2, 2), np.float32))) == ""
    # an empty tensor is no regime: shrinking goes there for a failure on every input
    assert regime(_trilu_case(np.zeros((2, 0), np.float32))) == ""
    assert regime(None) == "" and regime((object(), 3)) == ""  # no case, a robustness draw


def test_the_trigger_of_a_failure():
    nan = _trilu_case(np.array([[1, np.nan]], np.float32))
    assert trigger("mismatch", {"stage": "load"}, nan) == ""  # the values were never asked
    assert trigger("unsupported", {}, nan) == ""
    assert trigger("mismatch", {}, nan) == NON_FINITE and trigger("error", {}, nan) == ""
    assert trigger("crash", {"breaks": "Div-14 [V1]: For integer types B has no zero"}, None) == "rule V1"
    assert trigger("crash", {"breaks": "a valid input: the reference kernel computes it"}, None) == VALID
    assert broken_rule("the reference kernel fails on it too: ValueError") == ""


def test_an_ordinary_failure_explains_the_same_one_met_with_a_nan():
    seen = {("mismatch", "y: values differ", "")}
    assert masked_by(("mismatch", "y: values differ", NON_FINITE), seen)
    # ... but not the reverse: inf -> 0 does not explain a wrong rounding of ties
    assert not masked_by(("mismatch", "y: values differ", ""), {("mismatch", "y: values differ", NON_FINITE)})
    assert not masked_by(("crash", "died", "rule V1"), {("crash", "died", VALID)})


def test_a_failure_on_every_input_is_reported_once():
    """A process that dies on every input shrinks to an empty tensor; its ordinary inputs are the
    same bug, not a second one (an empty-tensor trigger reported them again in every binding)."""
    with Worker(resolve(f"{FAKES}:Aborts"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=20, seed=1, timeout=10.0)
        runner.run_differential(TRILU, TRILU.version(14), [{"T": "tensor(float)"}])
    assert [(r["example"], r["outcome"]) for r in runner.results] == [("differential", "crash")], runner.results


def test_a_second_crash_breaking_another_rule_is_found_behind_the_first():
    """A batch of hostile variants stops at its first crash: once a crash is found, variants that
    break the same rule are not asked again, so the one behind it is met."""
    with Worker(resolve(f"{FAKES}:DiesOnExtremeKOrLowRank"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=30, seed=1, timeout=10.0)
        runner.run_robustness(TRILU, TRILU.version(14), [{"T": "tensor(int64)"}])
    crashes = [r for r in runner.results if r["outcome"] == "crash"]
    rules = {broken_rule(r["details"]["breaks"]) for r in crashes}
    assert VALID in rules and "rule rank:input" in rules, [(r["example"], r["details"]) for r in crashes]


def test_a_load_check_records_a_case_the_rules_admit():
    """A binding onnxruntime 1.18 cannot feed (int4) is only loaded; its repro bundle is rerun
    by a release that can feed it, so the case must be valid: QuantizeLinear-21's fixed edge case
    (y_scale shaped like x with no block_size) is not."""
    spec = harness.load_op("ai.onnx", "QuantizeLinear")
    version = spec.version(21)
    binding = {"T1": "tensor(float)", "T2": "tensor(int4)"}
    first = edge_cases(spec, version, binding, limit=1)[0]
    try:
        harness.expected_outputs(first)
        raise AssertionError("the premise: the first edge case is one the rules exclude")
    except harness.Invalid:
        pass
    case = valid_case(spec, version, binding)
    assert case is not None and harness.expected_outputs(case) is not None
    assert valid_case(spec, version, binding) == case  # deterministic


def test_the_attribute_batch_sets_every_attribute_to_each_out_of_domain_value():
    """onnxruntime 1.16's MaxPool died of SIGFPE on a stride of 0: random hostile variants reach
    one attribute value in ~200, so a version's search met it on some seeds only. The batch asks
    every attribute at each value, deterministically."""
    from opkit.cases.hostile import attribute_variants

    pool = harness.load_op("ai.onnx", "MaxPool")
    version = pool.version(12)
    base = make_case(pool, version, {"T": "tensor(float)", "I": "tensor(int64)"},
                     {"kernel_shape": [2, 2], "strides": [1, 1], "pads": [0, 0, 1, 1]},
                     [("X", np.ones((1, 1, 3, 3), np.float32))])
    variants = attribute_variants(base, version)
    changed = {h.change for h in variants}
    assert "attribute strides = [0, 0]" in changed and "attribute pads = [-1, -1, -1, -1]" in changed, changed
    assert {h.change.split(" = ")[0] for h in variants} >= {"attribute strides", "attribute pads",
                                                            "attribute dilations", "attribute ceil_mode"}
    assert [h.change for h in attribute_variants(base, version)] == [h.change for h in variants]  # deterministic
    assert len(variants) <= 32


def test_the_attribute_batch_is_asked_on_two_bases_that_say_much():
    from opkit.conformance.runner import ATTRIBUTE_BATCH, attribute_batch

    pool = harness.load_op("ai.onnx", "MaxPool")
    version = pool.version(12)
    x = np.ones((1, 1, 3, 3), np.float32)
    plain = make_case(pool, version, {"T": "tensor(float)", "I": "tensor(int64)"}, {"kernel_shape": [1, 1]}, [("X", x)])
    rich = make_case(pool, version, {"T": "tensor(float)", "I": "tensor(int64)"},
                     {"kernel_shape": [1, 1], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, [("X", x)])
    swept: list = []
    first = attribute_batch([(plain, 1), (rich, 2)], version, swept)
    assert first == [(rich, 2, ATTRIBUTE_BATCH)]
    second = attribute_batch([(plain, 1), (rich, 2)], version, swept)
    assert second == [(plain, 1, ATTRIBUTE_BATCH)]  # another base than the first
    assert attribute_batch([(plain, 1)], version, swept) == []  # two per op version


def test_two_crashes_replayed_in_one_binding_are_two_cases_with_their_own_bundles(tmp_path):
    """A repro bundle is one per (binding, suite, case name, outcome): two replays named alike
    shared the first one's bundle, so a recall run replayed GatherND's still-open batch_dims crash
    for its fixed batch-mismatch one and called the fixed bug still there."""
    from opkit.conformance.repro import ReproWriter

    backend_spec = resolve(f"{FAKES}:DiesOnExtremeKOrLowRank")
    with Worker(backend_spec, timeout=10.0) as worker:
        backend = BackendRunner(worker)
        runner = Runner(backend, max_examples=30, seed=1, timeout=10.0,
                        repro=ReproWriter(str(tmp_path), backend_spec, backend.info, backend.ir_version))
        runner.run_robustness(TRILU, TRILU.version(14), [{"T": "tensor(int64)"}])
        assert len([r for r in runner.results if r["outcome"] == "crash"]) == 2, runner.results
        runner.replay_expensive(TRILU, TRILU.version(14), "robustness", [{"T": "tensor(int64)"}, {"T": "tensor(int32)"}])
    replays = [r for r in runner.results if r["example"].startswith("robustness-replay")]
    assert sorted(r["example"] for r in replays) == ["robustness-replay", "robustness-replay-2"], replays
    assert len({r["repro"] for r in replays}) == 2
