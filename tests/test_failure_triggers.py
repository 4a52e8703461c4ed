"""Two bugs of one binding that fail the same way are told apart by what triggered them
(opkit.conformance.triggers): an empty tensor, a NaN or infinity, or the rule a hostile input
breaks. Without it the second, found behind the first, was never searched for."""

from __future__ import annotations


import numpy as np

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.binding_checks import valid_case
from opkit.conformance.triggers import NON_FINITE, VALID, broken_rule, masked_by, regime, trigger
from opkit.conformance.worker import Worker
from opkit.cases.fixed import edge_cases
from opkit.cases.case import make_case

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
    assert [(r.example, r.outcome) for r in runner.results] == [("differential", "crash")], runner.results


def test_a_second_crash_breaking_another_rule_is_found_behind_the_first():
    """A batch of hostile variants stops at its first crash: once a crash is found, variants that
    break the same rule are not asked again, so the one behind it is met."""
    with Worker(resolve(f"{FAKES}:DiesOnExtremeKOrLowRank"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=30, seed=1, timeout=10.0)
        runner.run_robustness(TRILU, TRILU.version(14), [{"T": "tensor(int64)"}])
    crashes = [r for r in runner.results if r.outcome == "crash"]
    rules = {broken_rule(r.details["breaks"]) for r in crashes}
    assert VALID in rules and "rule rank:input" in rules, [(r.example, r.details) for r in crashes]


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
    from opkit.conformance.attribute_batches import ATTRIBUTE_BATCH, attribute_batch

    pool = harness.load_op("ai.onnx", "MaxPool")
    version = pool.version(12)
    x = np.ones((1, 1, 3, 3), np.float32)
    plain = make_case(pool, version, {"T": "tensor(float)", "I": "tensor(int64)"}, {"kernel_shape": [1, 1]}, [("X", x)])
    rich = make_case(pool, version, {"T": "tensor(float)", "I": "tensor(int64)"},
                     {"kernel_shape": [1, 1], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, [("X", x)])
    swept: list = []
    first = attribute_batch([(plain, 1), (rich, 2)], version, swept)
    assert first == [(rich, 2, ATTRIBUTE_BATCH)]
    (second, seed, which), = attribute_batch([(plain, 1), (rich, 2)], version, swept)
    assert (second.attributes, second.inputs[0][1].shape, seed, which) == (plain.attributes, (1, 1, 3, 3), 1, ATTRIBUTE_BATCH)
    # as the plainest model: X a constant (onnxruntime's shape inference sees its shape), no Indices
    assert (second.initializers, second.n_outputs) == (frozenset({"X"}), 1)
    assert attribute_batch([(plain, 1)], version, swept) == []  # two per op version


def test_the_second_attribute_batch_takes_the_plainest_base_of_another_rank():
    """onnxruntime 1.16's MaxPool died on a stride of 0 and on pads of -1 on the plain path and
    gave a clean error for both with dilations of 2: the two batches went to the richest 3-D
    draws of the float16 and float bindings and found nothing."""
    from opkit.conformance.attribute_batches import attribute_batch

    pool = harness.load_op("ai.onnx", "MaxPool")
    version = pool.version(12)
    types = {"T": "tensor(float)", "I": "tensor(int64)"}
    x3 = np.ones((1, 1, 3, 3, 3), np.float32)
    x2 = np.ones((1, 1, 3, 3), np.float32)
    rich = make_case(pool, version, types, {"kernel_shape": [2, 2, 2], "dilations": [2, 2, 2], "pads": [0, 0, 1, 0, 0, 1],
                                            "storage_order": 0, "ceil_mode": 0}, [("X", x3)])
    plain3 = make_case(pool, version, types, {"kernel_shape": [1, 1, 1]}, [("X", x3)])
    busy2 = make_case(pool, version, types, {"kernel_shape": [2, 2], "dilations": [2, 1], "strides": [2, 2], "ceil_mode": 1,
                                             "auto_pad": "NOTSET"}, [("X", x2)])
    plain2 = make_case(pool, version, types, {"kernel_shape": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0],
                                              "storage_order": 0}, [("X", x2)])
    bases = [(plain3, 1), (busy2, 2), (rich, 3), (plain2, 4)]
    swept: list = []
    assert attribute_batch(bases, version, swept)[0][0] is rich
    assert attribute_batch(bases, version, swept)[0][0].attributes == plain2.attributes  # another rank, the plainest
    swept = [rich]
    assert attribute_batch([(plain3, 1), (rich, 3)], version, swept)[0][0].attributes == plain3.attributes  # no other rank


def test_an_absent_list_attribute_gets_the_length_the_reference_accepts():
    """pads hold two values per axis, strides one: asked at both lengths, half the batch went to
    lists of the wrong length, and the round-robin cut at 32 never reached strides = [0, 0]."""
    from opkit.cases.hostile import attribute_variants
    from opkit.cases.derived import with_attribute
    from opkit.conformance.case_exec import _valid

    pool = harness.load_op("ai.onnx", "MaxPool")
    version = pool.version(12)
    base = make_case(pool, version, {"T": "tensor(float)", "I": "tensor(int64)"}, {"kernel_shape": [2, 2]},
                     [("X", np.ones((1, 1, 4, 4), np.float32))])
    changes = [h.change for h in attribute_variants(base, version, accepts=lambda n, v: _valid(with_attribute(base, n, v)))]
    assert "attribute strides = [0, 0]" in changes and "attribute pads = [-1, -1, -1, -1]" in changes, changes
    assert "attribute strides = [0, 0, 0, 0]" not in changes and "attribute pads = [0, 0]" not in changes
    assert changes.index("attribute strides = [0, 0]") < 12  # 0 and -1 come first: the values most often unchecked
    blind = [h.change for h in attribute_variants(base, version)]  # without the reference: both lengths
    assert "attribute strides = [0, 0, 0, 0]" in blind


def test_the_inputs_the_rules_bound_by_an_extent_are_indices():
    from opkit.cases.hostile import index_inputs

    def of(op, since, domain="ai.onnx"):
        return index_inputs(harness.load_op(domain, op).version(since))

    assert of("RoiAlign", 16) == {"batch_indices"} and of("Gather", 13) == {"indices"}
    assert of("GatherND", 13) == {"indices"} and of("TopK", 11) == {"K"} and of("MaxUnpool", 11) == {"I"}
    # a bound on arithmetic of the values (only Pad's crop is bounded), an equality (Split's sizes),
    # shapes only (Reshape's shape sizes the output): no index, a far value may be valid and huge
    assert of("Pad", 19) == of("Split", 18) == of("Reshape", 14) == of("Expand", 13) == of("Range", 11) == set()


def test_far_out_of_range_indices_are_asked(monkeypatch):
    """onnxruntime 1.16's RoiAlign returned garbage for batch index N (one past the batch) and read
    out of its memory from 65,536 on: the hostile pool's largest index was 64."""
    from opkit.cases import hostile

    roi = harness.load_op("ai.onnx", "RoiAlign")
    binding = {"T1": "tensor(float)", "T2": "tensor(int64)"}

    def crashes() -> list:
        with Worker(resolve(f"{FAKES}:ReadsFarIndices"), timeout=10.0) as worker:
            runner = Runner(BackendRunner(worker), max_examples=20, seed=0, timeout=10.0)
            runner.run_robustness(roi, roi.version(16), [binding])
        return [r for r in runner.results if r.outcome == "crash"]

    found = crashes()
    assert found, "no crash found"
    assert "batch_indices" in found[0].details["change"] or "every input" in found[0].details["change"], found
    assert "V3" in found[0].details["breaks"]  # an index out of range, not a valid input
    monkeypatch.setattr(hostile, "index_inputs", lambda version: frozenset())
    assert crashes() == []


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
        assert len([r for r in runner.results if r.outcome == "crash"]) == 2, runner.results
        runner.replay_expensive(TRILU, TRILU.version(14), "robustness", [{"T": "tensor(int64)"}, {"T": "tensor(int32)"}])
    replays = [r for r in runner.results if r.example.startswith("robustness-replay")]
    assert sorted(r.example for r in replays) == ["robustness-replay", "robustness-replay-2"], replays
    assert len({r.repro for r in replays}) == 2


def test_the_attribute_batch_tells_bases_apart_whatever_their_shapes():
    """A Case holds arrays: comparing two bases with != compared their inputs element by element,
    and DepthToSpace-1 bases of shapes (0, 4, 1, 1) and (1, 8, 1, 3) raised "operands could not be
    broadcast together" (a runner error on tract's sweep: the op version went untested)."""
    from opkit.conformance.attribute_batches import ATTRIBUTE_BATCH, attribute_batch

    op = harness.load_op("ai.onnx", "DepthToSpace")
    version = op.version(1)
    types = {"T": "tensor(float)"}
    empty = make_case(op, version, types, {"blocksize": 2}, [("input", np.ones((0, 4, 1, 1), np.float32))])
    wide = make_case(op, version, types, {"blocksize": 2}, [("input", np.ones((1, 8, 1, 3), np.float32))])
    swept: list = []
    (first, _, which), = attribute_batch([(empty, 1), (wide, 2)], version, swept)
    assert which == ATTRIBUTE_BATCH
    (second, _, _), = attribute_batch([(empty, 1), (wide, 2)], version, swept)
    assert {first.inputs[0][1].shape, second.inputs[0][1].shape} == {(0, 4, 1, 1), (1, 8, 1, 3)}
