"""A crash is charged to the case that causes it: a crash in a worker that ran other cases first is
run again alone in a fresh process; one that needs the earlier cases is a finding of its own, with
the sequence (opkit.conformance.crash_confirmation)."""

from __future__ import annotations

import numpy as np

from opkit.backends.registry import resolve
from opkit.conformance.worker import Worker
from opkit.conformance.worker_engine import CRASH, OK

FAKE = "crash_history_fakes:CrashesOn"


def _req(value: int, key: str | None = None):
    return (key or f"m{value}", b"model", {"x": np.array([value], dtype=np.int64)})


def test_a_crash_that_reproduces_alone_is_the_cases():
    with Worker(resolve(FAKE), timeout=30) as worker:
        assert worker.run(*_req(1)).kind == OK
        result = worker.run(*_req(13))
        assert result.kind == CRASH
        assert result.replay == {"reproduced": "in a fresh process", "history": 1}
        assert worker.history_crashes == []


def test_a_crash_in_a_fresh_worker_needs_no_second_run():
    with Worker(resolve(FAKE), timeout=30) as worker:
        result = worker.run(*_req(13))
        assert result.kind == CRASH and result.replay["history"] == 0
        assert worker.restarts == 1  # the crash itself; nothing was run again


def test_a_crash_that_needs_the_history_is_not_the_cases_but_its_own_finding():
    with Worker(resolve(FAKE), timeout=30) as worker:
        for value in (1, 7, 2):
            assert worker.run(*_req(value)).kind == OK
        result = worker.run(*_req(9))
        # the case alone, in a fresh process, does not crash: its outcome is what it answered
        assert result.kind == OK and result.outputs[0].tolist() == [9]
        assert result.replay["after_history"] is True
        [found] = worker.history_crashes
        assert found["reproduced"] == "after the same 3 earlier model(s) in a fresh process"
        assert len(found["sequence"]) == 3 and "backend worker died" in found["crashed"]
        # the worker goes on serving, fresh (the replay's poisoned process is gone)
        assert worker.run(*_req(9, key="again")).kind == OK


def test_a_crash_in_a_batch_is_confirmed_and_the_rest_of_the_batch_is_still_asked():
    with Worker(resolve(FAKE), timeout=30) as worker:
        results = worker.run_many([_req(7), _req(9), _req(3)])
        assert [r.kind for r in results] == [OK, OK, OK]
        assert results[1].replay["after_history"] is True
        assert len(worker.history_crashes) == 1


def test_a_crash_nothing_reproduces_is_charged_to_no_one(tmp_path):
    marker = str(tmp_path / "crashed-once")
    with Worker(resolve(FAKE, marker=marker), timeout=30) as worker:
        assert worker.run(*_req(1)).kind == OK
        result = worker.run(*_req(5))
        assert result.kind == OK
        assert result.replay["after_history"] is False and result.replay["reproduced"].startswith("no:")
        assert worker.history_crashes == []


def test_the_audit_confirms_a_crash_only_once_it_was_reproduced_in_a_fresh_process():
    from opkit.results.audit import _confirmed
    from opkit.results.record import CaseRecord

    def crash(details):
        return CaseRecord(backend="rt", suite="robustness", op="Abs", domain="ai.onnx", version=13,
                          types={"T": "tensor(float)"}, example="robustness", outcome="crash",
                          message="backend worker died: killed by signal 11 (SIGSEGV)", details=details)

    assert _confirmed(crash({"crash_replay": {"reproduced": "in a fresh process", "history": 3}}))
    assert _confirmed(crash({"crash_replay": {"reproduced": "after the same 3 earlier model(s) in a fresh process"}}))
    assert not _confirmed(crash({}))  # a report made before crashes were replayed
    assert not _confirmed(crash({"crash_replay": {"reproduced": "no: neither alone nor after ..."}}))


def test_the_runner_records_a_crash_that_needs_the_history_as_a_case_of_its_own():
    """What the worker set aside (a crash that happens only after earlier models) becomes a record
    of its own, charged as a crash, with the sequence; the case that ran last is not charged."""
    from opkit.conformance import harness
    from opkit.conformance.runner import Runner

    class Stub:
        info = {"name": "rt"}
        found = [{"after_history": True, "crashed": "backend worker died: killed by signal 6 (SIGABRT)",
                  "reproduced": "after the same 2 earlier model(s) in a fresh process",
                  "sequence": ["Abs() on X: float32[3]", "Abs() on X: float32[0]"], "case": "Abs() on X: float32[2]"}]

        def drain_history_crashes(self):
            out, self.found = self.found, []
            return out

    spec = harness.load_op("ai.onnx", "Abs")
    runner = Runner(Stub())
    runner._record_history_crashes(spec, spec.versions[-1], "differential")
    [record] = runner.results
    assert (record.outcome, record.example) == ("crash", "differential-after-history")
    assert "only after 2 earlier models in the same process" in record.message
    assert record.details["crash_replay"]["sequence"][0] == "Abs() on X: float32[3]"
    runner._record_history_crashes(spec, spec.versions[-1], "differential")  # drained: nothing twice
    assert len(runner.results) == 1
