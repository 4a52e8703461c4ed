"""``opkit compare`` across runtimes: per op version and type binding who agrees with the spec, the
committed reports by default, and how old each runtime's report is."""

from __future__ import annotations

import json

from opkit.cli import main as cli_main
from opkit.core.code_fingerprint import code_fingerprint
from opkit.results.record import CaseRecord


def _report(runtime, outcomes: dict, code=None):
    cases = [CaseRecord(backend=runtime, suite="differential", op="Trilu", domain="ai.onnx", version=14,
                        types={"T": f"tensor({t})"}, example="differential", outcome=o, message="").to_json()
             for t, o in outcomes.items()]
    target = {"backends": [{"name": runtime, "version": "1.0"}], "opkit": "0.1.0", "seed": 0,
              "created": "2026-11-29T03:00:00Z"}
    if code:
        target["code"] = code
    return {"format": "opkit-conformance-report/1", "target": target, "settings": {}, "cases": cases}


def test_the_committed_reports_side_by_side_with_their_age(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "conformance" / "reports"
    folder.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[tool.opkit]\n")
    (tmp_path / "specs").mkdir()
    (folder / "a.json").write_text(json.dumps(_report("rt-a", {"float": "pass", "int8": "mismatch"},
                                                      code=code_fingerprint())))
    (folder / "b.json").write_text(json.dumps(_report("rt-b", {"float": "pass", "int8": "pass"}, code="0123456789ab")))
    monkeypatch.chdir(tmp_path)
    assert cli_main(["compare", "--op", "Trilu"]) == 0
    out = capsys.readouterr().out
    assert "rt-a 1.0 (2026-11-29)" in out and "rt-b 1.0 (2026-11-29; older report)" in out
    assert "rt-a: agrees on 1/2 op x type bindings" in out and "rt-b: agrees on 2/2 op x type bindings" in out
    row = next(line for line in out.splitlines() if line.startswith("Trilu-14") and " int8 " in line)
    assert "x mismatch" in row and "= pass" in row


def test_no_report_and_none_committed_is_a_usage_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text("[tool.opkit]\n")
    (tmp_path / "specs").mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli_main(["compare"]) == 2
    assert "no reports named and none committed" in capsys.readouterr().err
