"""A refusal of valid input (an op and type the runtime implements, an input every rule allows) is
charged as ``refused``; a runtime without a kernel for the op or type is ``unsupported``; the search
goes on past a refusal; refusals are grouped by what is refused and confirmed by a second opinion."""

from __future__ import annotations

import json

import pytest

from opkit.cli import main
from opkit.results.audit import judged
from opkit.results.causes import causes, classify_message, refused_words
from opkit.results.outcomes import FAILING, FINDING_OUTCOMES, REFUSED, load_expectations
from opkit.results.record import CaseRecord

SCATTER = ("RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
           "running ScatterElements node. Name:'' Status Message: CPU execution provider: BFloat16 data type is not "
           "supported with ScatterElements opset 18 when reduction is '{}'.")
LAYOUT = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Exception during initialization: /onnxruntime_src/onnxruntime/core/"
          "providers/cpu/rnn/lstm_base.h:54 onnxruntime::LSTMBase::LSTMBase(const onnxruntime::OpKernelInfo&) "
          "layout_ == 0 was false. Batchwise recurrent operations (layout == 1) are not supported. If you need "
          "support create a github issue with justification.\n")
NO_KERNEL = ("NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
             "Trilu(14) node with name ''")
NO_TYPE = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Exception during loading: MLDataType for: tensor(complex64) is "
           "not currently registered or supported")


@pytest.mark.parametrize("message, lacks", [(SCATTER.format("mul"), False), (LAYOUT, False), (NO_KERNEL, True),
                                            (NO_TYPE, True)])
def test_onnxruntime_words_tell_a_missing_kernel_from_a_refused_input(message, lacks):
    from opkit.backends.onnxruntime import lacks_kernel, says_unsupported

    exc = RuntimeError(message)
    assert says_unsupported(exc)
    assert lacks_kernel(exc) is lacks
    assert lacks_kernel(ValueError("not supported")) is None  # not onnxruntime's own words


def test_the_worker_answers_refused_only_when_the_backend_says_a_kernel_refused():
    from opkit.conformance.worker_engine import REFUSED as KIND, UNSUPPORTED, _Engine

    class Said:
        def is_unsupported(self, exc):
            return "not supported" in str(exc) or "no kernel" in str(exc)

        def lacks_kernel(self, exc):
            return {"no kernel": True, "not supported": False}.get(str(exc))

    engine = _Engine.__new__(_Engine)
    engine.backend = Said()
    assert engine._refusal(RuntimeError("not supported"), "run").kind == KIND
    missing = engine._refusal(RuntimeError("no kernel"), "load")
    assert missing.kind == UNSUPPORTED and missing.no_kernel
    assert engine._refusal(RuntimeError("boom"), "run").kind == "error"


def test_refused_is_a_charged_failing_outcome_that_expectations_can_name(tmp_path):
    assert REFUSED in FAILING and REFUSED in FINDING_OUTCOMES
    path = tmp_path / "e.yaml"
    path.write_text("backend: x\nexpectations:\n  - op: ScatterElements\n    outcome: refused\n"
                    "    reason: float16 reductions other than none\n")
    assert load_expectations(str(path)).entries[0].outcomes == ("refused",)


def test_refusals_are_grouped_by_what_they_refuse():
    assert refused_words(LAYOUT) == "Batchwise recurrent operations (layout == 1) are not supported"
    mul, add = (classify_message("refused", SCATTER.format(r), {}) for r in ("mul", "add"))
    assert mul != add and "'mul'" in mul and "Status Message" not in mul
    # an error keeps abstracting quoted words (one cause for every node name)
    assert classify_message("error", SCATTER.format("mul"), {}) == classify_message("error", SCATTER.format("add"), {})


def _record(outcome, message, opinions=None, types=None):
    return CaseRecord(backend="rt", suite="differential", op="ScatterElements", domain="ai.onnx", version=18,
                      types=types or {"T": "tensor(bfloat16)"}, example="differential", outcome=outcome,
                      message=message, examples_run=1, duration_s=0.0, second_opinion=opinions)


def test_a_refusal_another_engine_computes_is_confirmed():
    computed = [{"backend": "onnx-reference", "verdict": "agrees with opkit"}]
    cannot = [{"backend": "onnx-reference", "verdict": "cannot run it"}]
    confirmed = [_record(REFUSED, SCATTER.format("mul"), computed)]
    (cause,) = causes(confirmed)
    assert judged(cause, confirmed, ())[0] == "real"
    unconfirmed = [_record(REFUSED, SCATTER.format("mul"), cannot)]
    (cause,) = causes(unconfirmed)
    assert judged(cause, unconfirmed, ())[0] == "unaudited"


def _run(tmp_path, backend, *extra):
    report = tmp_path / "r.json"
    main(["test", "--backend", f"tests.test_conformance_fakes:{backend}", "--op", "Trilu", "--suite", "differential",
          "--max-examples", "25", "--no-repro", "--no-isolate", "--no-expectations", "--no-second-opinion",
          "--report", str(report), "-q", *extra])
    return json.loads(report.read_text())["cases"]


def test_a_runtime_refusing_one_attribute_value_is_charged_refused(tmp_path):
    cases = _run(tmp_path, "RefusesLower", "--max-bindings", "4")
    refused = [c for c in cases if c["outcome"] == "refused"]
    assert refused, "the refusal of upper = 0 is charged"
    assert not [c for c in cases if c["outcome"] == "unsupported"]
    assert all("upper=0" in (c.get("details") or {}).get("refused_with", "") for c in refused)
    assert all("upper" in c["minimal_example"] for c in refused)


def test_a_runtime_without_the_kernel_stays_unsupported(tmp_path):
    cases = _run(tmp_path, "RefusesToLoad", "--max-bindings", "4")
    assert {c["outcome"] for c in cases} == {"unsupported"}


def test_the_search_goes_on_past_a_refusal(tmp_path):
    cases = _run(tmp_path, "RefusesLowerAndWrongOnLarger", "--max-bindings", "6")
    by_binding: dict = {}
    for c in cases:
        by_binding.setdefault(json.dumps(c["types"], sort_keys=True), set()).add(c["outcome"])
    # (wrong values: plus one, which leaves bool and string outputs as they are)
    refused_first = [b for b, outcomes in by_binding.items() if "refused" in outcomes
                     and "bool" not in b and "string" not in b]
    assert len(refused_first) >= 10
    # a refusal no longer ends the binding's search: the wrong values are found in the same bindings
    assert all("mismatch" in by_binding[b] for b in refused_first)


def test_a_backend_api_class_wrapping_onnxruntime_speaks_its_words():
    import unittest

    from opkit.backends.backend_api import BackendAPIBackend

    backend = BackendAPIBackend.__new__(BackendAPIBackend)
    assert backend.lacks_kernel(RuntimeError(NO_KERNEL)) is True
    assert backend.lacks_kernel(RuntimeError(SCATTER.format("mul"))) is False
    assert backend.lacks_kernel(unittest.SkipTest("only released onnx opsets are supported")) is True
    assert backend.lacks_kernel(NotImplementedError("upper = 0 is not supported")) is None  # the binding decides


def test_a_cause_line_shows_the_runtime_sentence_not_the_grouping_key():
    from opkit.results.causes import readable_message

    (cause,) = causes([_record(REFUSED, SCATTER.format("mul"))])
    line = cause.line()
    assert "BFloat16 data type is not supported with ScatterElements opset 18 when reduction is 'mul'" in line
    assert "BFloat1N" not in line and "Status Message" not in line
    long = "error: " + "word " * 80
    assert readable_message("error", long).endswith(" ...") and len(readable_message("error", long)) <= 165


def test_a_refusal_in_the_robustness_suite_gets_a_second_opinion(tmp_path):
    """The robustness suite's refused case is its valid base case: another engine is asked about it
    as about a differential refusal (without it, 40% of a sweep's refusals went unconfirmed)."""
    report = tmp_path / "r.json"
    main(["test", "--backend", "tests.test_conformance_fakes:RefusesLower", "--op", "Trilu", "--suite", "robustness",
          "--max-examples", "25", "--no-repro", "--no-isolate", "--no-expectations", "--max-bindings", "3",
          "--report", str(report), "-q"])
    refused = [c for c in json.loads(report.read_text())["cases"] if c["outcome"] == "refused"]
    assert refused and all(c.get("second_opinion") for c in refused)


def test_the_robustness_suite_asks_a_bare_case_alone():
    """The search asks whether a refused case runs with its optional attributes at their defaults by
    handing the suite's executor a bare case; the robustness executor took only drawn (case, seed)
    tuples, so that question ended the op version in a runner error (8 op versions on JAX)."""
    from opkit.backends.registry import resolve
    from opkit.cases.derived import with_attribute
    from opkit.conformance import harness
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess

    spec = harness.load_op("ai.onnx", "Trilu")
    version = spec.versions[-1]
    case, _ = harness.example_case(spec, version, version.examples[0])
    runner = Runner(BackendRunner(InProcess(resolve("tests.test_conformance_fakes:RefusesLower"))), max_examples=2)
    lower = runner.execute_robustness(version, with_attribute(case, "upper", 0))
    assert lower.outcome in ("unsupported", "refused") and "lower triangle" in lower.message and lower.count == 1
    assert runner.execute_robustness(version, with_attribute(case, "upper", 1)).outcome == "pass"


def test_a_hang_on_a_hostile_input_is_confirmed_by_an_engine_that_answers_it(tmp_path):
    """A robustness timeout was charged with no second opinion, so a sweep's hangs stayed unplaced
    (39 of torch's Slice cases): the engines are asked now, and the hang is the runtime's once one
    of them computes the same input within the same limits."""
    from opkit.results.record import report_records

    report = tmp_path / "r.json"
    main(["test", "--backend", "tests.test_conformance_fakes:HangsOnExtremeK", "--op", "ai.onnx::Trilu",
          "--suite", "robustness", "--max-examples", "10", "--timeout", "1", "--shrink-budget", "2", "--no-repro",
          "--no-expectations", "--max-bindings", "1", "--second-opinion", "onnx-reference", "--report", str(report),
          "-q"])
    records = [r for r in report_records(json.loads(report.read_text())) if r.outcome == "timeout"]
    assert records and all(r.second_opinion for r in records)
    assert {o["backend"] for r in records for o in r.second_opinion} == {"onnx-reference"}
    (cause,) = causes(records)  # one op, one outcome, one message class
    status, why, confirmed = judged(cause, records, ())
    assert status == "real" and confirmed == len(records)


@pytest.mark.parametrize("verdicts, confirmed", [
    (["differs from both"], True),  # computed it (opkit's kernel had no expected output for the hostile input)
    (["agrees with opkit", "also fails"], False),  # another engine hangs too: the input may ask for the work
    (["cannot run it"], False),  # refused or unsupported there: no opinion on the work it needs
    ([], False)])
def test_a_robustness_hang_needs_an_engine_that_computed_the_input_and_none_that_also_hangs(verdicts, confirmed):
    from opkit.results.audit import _confirmed

    opinions = [{"backend": f"e{i}", "verdict": v} for i, v in enumerate(verdicts)]
    record = CaseRecord(backend="rt", suite="robustness", op="Slice", domain="ai.onnx", version=13,
                        types={"T": "tensor(float)"}, example="robustness", outcome="timeout",
                        message="no answer within 10 s (worker killed and restarted)", examples_run=1,
                        duration_s=10.0, second_opinion=opinions)
    assert _confirmed(record) is confirmed
