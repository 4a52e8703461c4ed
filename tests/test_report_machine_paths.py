"""A report is written without the paths of the machine it was made on (opkit.results.report
``machine_free``): a cluster's workers wrote absolute repro folders and engines put their build
folders in messages, so a committed report had to be rewritten by hand."""

from __future__ import annotations

import json

from opkit.results.record import CaseRecord
from opkit.results.report import build_report, machine_free


def test_repro_folders_inside_the_project_are_relative_and_messages_portable(tmp_path):
    root = str(tmp_path / "proj")
    case = CaseRecord(backend="tract", suite="differential", op="Abs", domain="ai.onnx", version=13, outcome="crash",
                      message="panicked at /tmp/python-build.abc123/tract/src/ops.rs:58 (see /home/bob/x.log)",
                      repro=f"{root}/.opkit/repro/tract/ai.onnx/Abs-13/int8-differential-crash",
                      second_opinion=[{"backend": "onnxruntime", "verdict": "also fails",
                                       "message": f"error: cannot open {root}/conformance/x.yaml"}])
    outside = CaseRecord(backend="tract", suite="differential", op="Neg", domain="ai.onnx", version=13,
                         outcome="mismatch", repro="/data/bundles/Neg-13/int8-differential-mismatch")
    report = machine_free(build_report([case, outside], {"backends": [{"name": "tract"}]}, {}, 1.0), root)
    first, second = report["cases"]
    assert first["repro"] == ".opkit/repro/tract/ai.onnx/Abs-13/int8-differential-crash"
    assert first["message"] == "panicked at /tmp/... (see ~/x.log)"
    assert first["second_opinion"][0]["message"] == "error: cannot open conformance/x.yaml"
    assert second["repro"] == "/data/bundles/Neg-13/int8-differential-mismatch"  # the user's own folder
    text = json.dumps(report)
    assert "/tmp/python-build" not in text and "/home/bob" not in text and root not in text


def test_build_report_writes_repro_folders_relative_to_the_active_project(tmp_path, monkeypatch):
    from opkit.core import project

    monkeypatch.setattr(project, "active", lambda: type("P", (), {"root": str(tmp_path)})())
    case = CaseRecord(backend="rt", suite="examples", op="Abs", domain="ai.onnx", version=13, outcome="mismatch",
                      repro=str(tmp_path / ".opkit" / "repro" / "rt" / "Abs-13"))
    report = build_report([case], {"backends": [{"name": "rt"}]}, {}, 1.0)
    assert report["cases"][0]["repro"] == ".opkit/repro/rt/Abs-13"
