"""Failures grouped by root cause (opkit.results.causes)."""

from __future__ import annotations

from opkit.results.causes import causes, causes_text, input_feature, message_class
from opkit.results.record import CaseRecord
from opkit.results.report import build_report, validate_report


def _case(op="Pad", version=13, types=None, outcome="error", message="", minimal="data=float32[2, 3]", **extra):
    return CaseRecord.from_json({"backend": "rt", "suite": "differential", "op": op, "domain": "ai.onnx",
                                 "version": version, "types": types or {"T": "tensor(float)"},
                                 "example": "differential", "outcome": outcome, "message": message, "repro": None,
                                 "minimal_example": minimal, **extra})


ORT = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Pad node. Name:'' "
       "Status Message: Pad: invalid mode: {n} with zero effective input extent")


def test_message_class_abstracts_numbers_names_and_types():
    a = message_class(_case(message=ORT.format(n=3)))
    b = message_class(_case(message=ORT.format(n=1)))
    assert a == b and "N" in a and "[...]" in a
    t1 = message_class(_case(message="Type parameter (T) bound to different types (tensor(float16) and tensor(float))"))
    t2 = message_class(_case(message="Type parameter (T) bound to different types (tensor(double) and tensor(int8))"))
    assert t1 == t2
    shape = _case(outcome="mismatch", message="reduced: shape [1, 2, 0], expected [1, 1, 0]", details={"what": "shape"})
    values = _case(outcome="mismatch", message="reduced: 1/4 elements differ", details={"what": "values"})
    assert message_class(shape) == "reduced: shape differs" and message_class(values) == "reduced: values differ"


def test_input_feature():
    assert input_feature(_case(minimal="data=float32[1, 0], axis=-2")) == "zero-size"
    assert input_feature(_case(minimal="x=float32:1.0, y=float32[2]")) == "scalar"
    assert input_feature(_case(message="got 'nan', expected 0.0; 1 NaN position(s) differ")) == "nan"
    assert input_feature(_case(message="got '-inf', expected -1.79e+308")) == "inf"
    assert input_feature(_case(minimal="data=float32[2, 3]")) == ""


def test_one_cause_spans_versions_and_types_and_keeps_the_smallest_case():
    cases = [_case(version=v, types={"T": t}, message=ORT.format(n=v), minimal=m, repro=r)
             for v, t, m, r in [(11, "tensor(float)", "data=float32[2, 3], pads=[1, 1, 1, 1]", "b/1"),
                                (13, "tensor(int64)", "data=int64[2, 3]", "b/2"),
                                (18, "tensor(float)", "data=float32[3, 3, 3]", None)]]
    cases.append(_case(op="Pad", outcome="mismatch", message="output: 1/2 elements differ", details={"what": "values"}))
    cases.append(_case(outcome="pass"))
    found = causes(cases)
    assert len(found) == 2
    error = next(c for c in found if c.outcome == "error")
    assert error.cases == 3 and error.versions == (11, 13, 18) and error.types == ("T=float", "T=int64")
    assert error.example["repro"] == "b/2"  # the smallest case with a bundle
    assert "Pad-11,13,18" in causes_text(found) and "3 cases" in causes_text(found)


def test_report_lists_causes_and_validates():
    cases = [_case(message=ORT.format(n=n)) for n in (1, 2, 3)]
    report = build_report(cases, {"backends": [], "opkit": "x", "onnx": "x", "numpy": "x", "seed": 0,
                                  "machine": {"platform": "x", "cpu_count": 1}}, {}, 0.1)
    assert report["summary"]["causes"] == 1 and report["causes"][0]["cases"] == 3
    assert validate_report(report) == []
