"""Recall lists: known runtime failures matched against a report's cases."""

from __future__ import annotations

import os

import pytest

from opkit.results.recall import KnownFailureError, load_known, match, parse_entry, recall

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _case(outcome, types=None, version=14, op="Add", message="", suite="differential"):
    return {"op": op, "domain": "ai.onnx", "version": version, "types": types or {"T": "tensor(int8)"},
            "outcome": outcome, "message": message, "suite": suite}


def test_a_known_failure_is_found_only_by_a_failure_of_its_kind_in_its_binding():
    known = parse_entry({"id": "add-int8", "op": "Add", "versions": [14], "binding": {"T": "int8"},
                         "class": "registration"}, "t")
    assert match(known, [_case("pass")]).status == "missed"
    assert match(known, [_case("mismatch")]).status == "missed"  # not a registration
    assert match(known, [_case("unsupported", {"T": "tensor(int16)"})]).status == "not-tested"
    assert match(known, [_case("unsupported", version=13)]).status == "not-tested"
    assert match(known, [_case("pass"), _case("unsupported")]).status == "found"
    # a failure opkit's audit calls its own mistake is never a finding
    assert match(known, [_case("unsupported")], own=lambda c: True).status == "opkit"


def test_peer_spellings_and_any_type_and_message():
    known = parse_entry({"id": "x", "op": "Cast", "binding": {"T1": "<U0", "T2": "float64"}, "message": "stod"}, "t")
    types = {"T1": "tensor(string)", "T2": "tensor(double)"}
    assert match(known, [_case("error", types, op="Cast", message="RUNTIME_EXCEPTION ... stod")]).status == "found"
    assert match(known, [_case("error", types, op="Cast", message="saturate")]).status == "missed"
    one = parse_entry({"id": "y", "op": "Pow", "any_type": "float32"}, "t")
    assert match(one, [_case("mismatch", {"T": "tensor(int32)", "T1": "tensor(float)"}, op="Pow")]).status == "found"
    assert recall([match(known, []), match(one, [])]) == (0, 2)


def test_bad_lists_fail_with_one_line_naming_file_and_place(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("failures:\n- {id: a, op: Add\n")
    with pytest.raises(KnownFailureError, match=r"^bad.yaml:\d+:\d+: not valid YAML"):
        load_known(str(bad))
    bad.write_text("failures:\n- {id: a, op: Add, class: sometimes}\n")
    with pytest.raises(KnownFailureError, match="entry 1 .a.: class must be one of"):
        load_known(str(bad))
    bad.write_text("failures:\n- {id: a, op: Add, verdict: undefind}\n")  # would be set apart, silently
    with pytest.raises(KnownFailureError, match="entry 1 .a.: verdict must be one of deviates, undefined"):
        load_known(str(bad))
    bad.write_text("failures:\n- {id: a, op: Add}\n- {id: a, op: Sub}\n")
    with pytest.raises(KnownFailureError, match="id 'a' is used twice"):
        load_known(str(bad))


def test_the_committed_lists_load_and_say_where_they_come_from():
    for name in ("onnx-tests-onnxruntime.yaml", "onnxruntime-known-bugs.yaml"):
        head, entries = load_known(os.path.join(ROOT, "conformance", "recall", name))
        assert head["source"] and len(entries) > 20
    _, peer = load_known(os.path.join(ROOT, "conformance", "recall", "onnx-tests-onnxruntime.yaml"))
    verdicts = {e.extra.get("verdict") for e in peer} - {None}
    assert verdicts <= {"deviates", "undefined", "rounding", "fixed"}
    _, bugs = load_known(os.path.join(ROOT, "conformance", "recall", "onnxruntime-known-bugs.yaml"))
    assert all(e.extra.get("broken") and e.extra.get("fixed") for e in bugs)


def test_the_broken_release_is_read_without_its_note():
    from opkit.results.recall import first_broken_release, parse_entry

    entry = parse_entry({"id": "ReduceMax-keepdims", "op": "ReduceMax", "versions": [13], "class": "wrong-value",
                         "broken": ["1.16.3 (keepdims=0 only)", "1.17.3"]}, "known.yaml:1")
    assert first_broken_release(entry) == "1.16.3"
    assert first_broken_release(parse_entry({"id": "x", "op": "Add", "versions": [14], "class": "any"},
                                            "known.yaml:2")) == "?"


def test_a_bug_counts_as_the_fixed_one_only_when_a_finding_is_gone_on_the_fixed_release():
    from opkit.results.recall import findings, parse_entry, settle

    assert settle([1, 0]) == "gone"  # one finding gone: the other may be a second, still-open bug
    assert settle([1, 1]) == "reproduces"
    assert settle([1, 3]) == "changed" and settle([3, 0]) == "gone"  # 3: the recorded failure gone, another now
    assert settle([1, None]) == "cannot tell" and settle([]) == "cannot tell" and settle([2]) == "cannot tell"
    entry = parse_entry({"id": "div", "op": "Div", "versions": [14], "class": "crash",
                         "binding": {"T": "int32"}}, "known.yaml:1")
    cases = [{"op": "Div", "domain": "ai.onnx", "version": 14, "types": {"T": "tensor(int32)"}, "outcome": "crash",
              "suite": "robustness", "message": "backend worker died: killed by signal SIGFPE"},
             {"op": "Div", "domain": "ai.onnx", "version": 14, "types": {"T": "tensor(int64)"}, "outcome": "crash",
              "suite": "robustness", "message": "backend worker died: killed by signal SIGFPE"}]
    assert findings(entry, cases) == cases[:1]
    assert findings(entry, cases, own=lambda c: True) == []


def test_the_recall_benchmark_says_a_bad_list_in_one_line(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("failures:\n- {id: a, op: Add, verdict: undefind}\n")
    for args in (["releases", str(bad), "--runs", str(tmp_path / "runs")], ["peer", str(bad), str(tmp_path / "r.json")]):
        done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "recall.py"), *args],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == ["recall: bad.yaml: entry 1 (a): verdict must be one of deviates, "
                                                    "undefined, rounding, fixed"]
