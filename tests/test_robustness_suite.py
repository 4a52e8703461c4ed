"""The robustness suite: hostile variants of valid cases, where only a crash or a hang is a finding."""

from __future__ import annotations

import numpy as np

from opkit.backends.registry import resolve
from opkit.cases.hostile import hostile_variants
from opkit.conformance import harness
from opkit.results.causes import input_feature
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker import Worker
from opkit.results.audit import judged
from opkit.cases.case import Case

FAKES = "test_conformance_fakes"
DIV = harness.load_op("ai.onnx", "Div").version(14)
TRILU = harness.load_op("ai.onnx", "Trilu")


def _div_case(dtype=np.int32) -> Case:
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    b = np.full((2, 3), 2, dtype=dtype)
    return Case("ai.onnx", "Div", 14, (("T", f"tensor({np.dtype(dtype).name})"),), (), (("A", a), ("B", b)))


def test_variants_are_deterministic_and_change_one_thing_each():
    case = _div_case()
    first = hostile_variants(case, DIV, 40, seed=7)
    again = hostile_variants(case, DIV, 40, seed=7)
    assert [h.change for h in first] == [h.change for h in again]
    for h, g in zip(first, again):
        for (_, x), (_, y) in zip(h.case.inputs, g.case.inputs):
            assert np.array_equal(x, y)
    assert len(first) == 40
    changes = {h.change.split(": ", 1)[-1].split(" on axis")[0] for h in first}
    assert {"integer extremes", "extent 0", "rank 0", "extreme values"} <= changes, changes
    for h in first:
        if h.change.startswith(("A:", "B:")):  # one input changed, the other kept
            kept = "B" if h.change.startswith("A:") else "A"
            assert np.array_equal(dict(h.case.inputs)[kept], dict(case.inputs)[kept])


def test_integer_extremes_never_ask_for_huge_allocations():
    for dtype in (np.int32, np.int64):
        values = np.concatenate([dict(h.case.inputs)[n].reshape(-1)
                                 for h in hostile_variants(_div_case(dtype), DIV, 200, seed=3)
                                 if "extremes" in h.change or "extreme values" in h.change for n in "AB"])
        info = np.iinfo(dtype)
        assert values.min() == info.min  # INT_MIN is drawn (INT_MIN / -1)
        assert values.max() <= 64  # INT_MAX is not: as a size it is a valid request for a lot of memory
        assert -1 in values and 0 in values


def test_int_min_over_minus_one_meets_often():
    # the pair that overflows a signed division must meet at one position in a fair share of the
    # variants: the sweep runs only 5 examples x 15 variants per binding
    hits = [h for h in hostile_variants(_div_case(), DIV, 60, seed=11)
            if h.case.inputs[0][1].shape == h.case.inputs[1][1].shape
            and np.any((h.case.inputs[0][1] == np.iinfo(np.int32).min) & (h.case.inputs[1][1] == -1))]
    assert len(hits) >= 5, len(hits)


def _robustness(cls: str, max_examples: int = 10):
    with Worker(resolve(f"{FAKES}:{cls}"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=max_examples, seed=1, timeout=10.0)
        runner.run_robustness(TRILU, TRILU.version(14), [{"T": "tensor(int64)"}])
        return runner.results


def test_a_backend_that_answers_or_refuses_passes():
    results = _robustness("Correct")
    assert [r.outcome for r in results] == ["pass"]
    assert results[0].suite == "robustness" and results[0].examples_run > 10


def test_a_process_that_dies_on_a_hostile_input_is_a_crash_with_what_triggered_it():
    results = _robustness("DiesOnExtremeK", max_examples=30)
    assert [r.outcome for r in results] == ["crash"]
    record = results[0]
    assert "SIGFPE" in record.message
    assert record.details["change"].startswith(("k:", "every input"))
    assert record.details["breaks"]  # what the reference kernel says of the input
    assert input_feature(record).startswith("hostile ")
    # a process death is the runtime's defect whatever the input: confirmed without an audit
    status, why, confirmed = judged(None, [record], ())
    assert status == "real" and confirmed == 1 and "never crash" in why


def test_the_search_goes_on_after_a_failure_and_reports_a_second_distinct_bug():
    with Worker(resolve(f"{FAKES}:TwoBugs"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=30, seed=1, timeout=10.0)
        runner.run_differential(TRILU, TRILU.version(14), [{"T": "tensor(float)"}])
    by_example = {r.example: r for r in runner.results}
    assert set(by_example) == {"differential", "differential-2"}, [(r.example, r.outcome) for r in runner.results]
    assert {r.outcome for r in runner.results} == {"mismatch", "error"}
    assert "empty tensors" in next(r for r in runner.results if r.outcome == "error").message


def test_a_single_bug_is_reported_once():
    with Worker(resolve(f"{FAKES}:WrongValues"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=20, seed=1, timeout=10.0)
        runner.run_differential(TRILU, TRILU.version(14), [{"T": "tensor(float)"}])
    assert [(r.example, r.outcome) for r in runner.results] == [("differential", "mismatch")]


def test_the_search_goes_on_after_a_crash():
    # a crash used to end the binding's search: a second bug behind it was never seen
    with Worker(resolve(f"{FAKES}:DiesOnExtremeKAndFailsEmpty"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=40, seed=1, timeout=10.0)
        runner.run_differential(TRILU, TRILU.version(14), [{"T": "tensor(float)"}])
    outcomes = {r.outcome for r in runner.results}
    assert {"crash", "error"} <= outcomes, [(r.example, r.outcome, r.message[:60]) for r in runner.results]


def test_a_crash_shrunk_in_one_binding_is_recorded_unshrunk_in_the_next():
    """Each shrink step of a crash restarts the worker; the same crash in a sibling binding of the
    op version is recorded as found, with what it was, and not shrunk again."""
    bindings = [{"T": "tensor(int64)"}, {"T": "tensor(int32)"}]
    with Worker(resolve(f"{FAKES}:DiesOnExtremeK"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=30, seed=1, timeout=10.0)
        runner.run_robustness(TRILU, TRILU.version(14), bindings)
    crashes = [r for r in runner.results if r.outcome == "crash" and r.example == "robustness"]
    assert [r.types["T"] for r in crashes] == ["tensor(int64)", "tensor(int32)"], runner.results
    first, second = crashes
    assert "shrunk" not in first.details
    assert second.details["shrunk"].startswith("no: the same failure")
    assert "SIGFPE" in second.message and second.details["change"]
    # found again on the first crashing draw: far fewer worker restarts than the shrink of the first
    assert second.examples_run < first.examples_run


def test_a_mismatch_shrunk_in_one_binding_is_shrunk_briefly_in_the_next():
    bindings = [{"T": "tensor(float)"}, {"T": "tensor(double)"}, {"T": "tensor(int32)"}]
    with Worker(resolve(f"{FAKES}:WrongValues"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=20, seed=1, timeout=10.0)
        runner.run_differential(TRILU, TRILU.version(14), bindings)
    first, *others = [r for r in runner.results if r.example == "differential"]
    assert first.outcome == "mismatch" and "shrunk" not in first.details
    assert others and all(r.outcome == "mismatch" for r in others)
    assert all(r.details["shrunk"].startswith("briefly (at most 8 draws)") for r in others), others
    assert all(r.minimal_example for r in others)


def test_a_crash_of_one_binding_is_replayed_on_the_others_after_the_search():
    """Runs each binding's own search first; then the crash's minimal case, cast to a binding whose
    search did not meet it, is asked again there (a search in int32 may never draw what uint8 met)."""
    with Worker(resolve(f"{FAKES}:DiesOnExtremeK"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=30, seed=1, timeout=10.0)
        runner.run_robustness(TRILU, TRILU.version(14), [{"T": "tensor(int64)"}])
        assert [r.outcome for r in runner.results] == ["crash"]
        runner.replay_expensive(TRILU, TRILU.version(14), "robustness",
                                [{"T": "tensor(int64)"}, {"T": "tensor(int32)"}, {"T": "tensor(float)"}])
    replays = [r for r in runner.results if r.example == "robustness-replay"]
    assert sorted(r.types["T"] for r in replays) == ["tensor(float)", "tensor(int32)"], runner.results
    assert all(r.outcome == "crash" and r.details["replayed_from"] == {"T": "tensor(int64)"} for r in replays)
    assert all("int32" in r.minimal_example or "float32" in r.minimal_example for r in replays)


def test_recast_carries_values_to_another_binding_or_says_it_cannot():
    from opkit.cases.derived import recast

    case = _div_case(np.uint8)
    as_int32 = recast(case, DIV, {"T": "tensor(int32)"})
    assert as_int32.types == (("T", "tensor(int32)"),)
    assert all(arr.dtype == np.int32 and np.array_equal(arr, old) for (_, arr), (_, old) in
               zip(as_int32.inputs, case.inputs))
    nan = Case("ai.onnx", "Div", 14, (("T", "tensor(float)"),), (),
               (("A", np.array([np.nan], np.float32)), ("B", np.array([1.0], np.float32))))
    assert recast(nan, DIV, {"T": "tensor(int32)"}) is None  # NaN has no integer value


def test_opkit_test_help_names_the_robustness_suite(capsys):
    # `opkit test` replaced the suite help to add onnx-node and had dropped robustness from it
    import pytest

    from opkit import cli
    from opkit.run.options import SUITE_CHOICES

    with pytest.raises(SystemExit):
        cli.main(["test", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    suite_help = out.split("--suite SUITE ", 1)[1].split("--max-examples", 1)[0]
    for suite in SUITE_CHOICES + ("onnx-node",):
        assert suite in suite_help, (suite, suite_help)
    assert "'all' means examples, properties, differential, robustness and lowerings" in out
