"""`opkit test --junit-xml FILE`: one testcase per case, in a file a JUnit parser reads."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from opkit.cli import main
from opkit.emit.junit import junit_xml
from opkit.results.record import CaseRecord


def _record(outcome, message="", **extra):
    return CaseRecord(backend="rt", suite="differential", op="Trilu", domain="ai.onnx", version=14,
                      types={"T": "tensor(float)"}, example="differential", outcome=outcome, message=message,
                      examples_run=1, duration_s=0.5, **extra)


def test_each_outcome_is_what_a_ci_system_should_flag():
    cases = [_record("pass"), _record("mismatch", "Y: values differ", repro=".opkit/repro/x"),
             _record("refused", "upper = 0 is not supported"), _record("crash", "killed by signal SIGSEGV"),
             _record("xfail", "no kernel", expected={"reason": "registered for 6 types only"}),
             _record("untested", "could not draw valid inputs")]
    root = ET.fromstring(junit_xml(cases))
    (suite,) = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("6", "2", "1", "2")
    tags = [[child.tag for child in case] for case in suite.findall("testcase")]
    assert tags == [[], ["failure"], ["failure"], ["error"], ["skipped"], ["skipped"]]
    mismatch = suite.findall("testcase")[1]
    assert mismatch.get("classname") == "rt.ai.onnx.Trilu-14" and mismatch.get("name") == "differential[T=float]"
    assert "repro: python .opkit/repro/x/repro.py" in mismatch.find("failure").text
    assert "registered for 6 types only" in suite.findall("testcase")[4].find("skipped").get("message")


def test_foreign_text_cannot_break_the_xml():
    hostile = "</failure><x>\x1b[31m\x00 & ]]> \ud800"
    root = ET.fromstring(junit_xml([_record("error", hostile)]))  # parses: escaped, control characters shown
    failure = root.find("testsuite/testcase/error")
    assert "</failure><x>" in failure.get("message") and "\\x1b" in failure.text and "\\x00" in failure.text


def test_opkit_test_writes_a_junit_file_beside_the_report(tmp_path):
    xml_path, report = tmp_path / "out" / "opkit.xml", tmp_path / "r.json"
    main(["test", "--backend", "reference", "--op", "Relu", "--suite", "differential", "--max-examples", "3",
          "--no-repro", "-q", "--report", str(report), "--junit-xml", str(xml_path)])
    cases = json.loads(report.read_text())["cases"]
    suite = ET.parse(xml_path).getroot().find("testsuite")
    assert int(suite.get("tests")) == len(cases) > 0
    assert len(suite.findall("testcase")) == len(cases)


def test_a_junit_path_that_is_a_folder_is_a_usage_error(tmp_path, capsys):
    code = main(["test", "--backend", "reference", "--op", "Relu", "--junit-xml", str(tmp_path)])
    assert code == 2 and "--junit-xml" in capsys.readouterr().err
