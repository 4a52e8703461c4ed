"""Golden diagnostics: ``opkit validate`` output for every malformed spec in tests/bad_specs/.

Each ``<name>.yaml`` is paired with ``<name>.expected``: the exact stdout lines of
``opkit validate tests/bad_specs/<name>.yaml`` run from the project root. To regenerate after a
deliberate change to a message, run

    OPKIT_UPDATE_GOLDEN=1 python -m pytest tests/test_diagnostics_golden.py

and review the diff of every .expected file by hand before committing it.
"""

from __future__ import annotations

import os
import re

import pytest

from opkit.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = os.path.join(ROOT, "tests", "bad_specs")
CASES = sorted(f[:-5] for f in os.listdir(BAD) if f.endswith(".yaml"))
UPDATE = os.environ.get("OPKIT_UPDATE_GOLDEN") == "1"
LINE = re.compile(r"^tests/bad_specs/[A-Za-z0-9_]+\.yaml:[1-9][0-9]*:[1-9][0-9]*: error: \S.*$")


def _validate(capsys, monkeypatch, *paths: str) -> tuple[int, str, str]:
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    code = main(["validate", *paths])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", CASES)
def test_golden(name, capsys, monkeypatch):
    rel = f"tests/bad_specs/{name}.yaml"
    code, out, err = _validate(capsys, monkeypatch, rel)
    assert "Traceback" not in err and "Traceback" not in out
    assert code == 1, f"{rel} should fail validation"
    lines = out.splitlines()
    assert lines, f"{rel}: no diagnostics printed"
    for line in lines:
        assert LINE.match(line), f"not PATH:LINE:COL: error: message -> {line!r}"
    assert lines == sorted(lines, key=lambda s: [int(p) if p.isdigit() else p for p in s.split(":", 3)[:3]])
    expected_path = os.path.join(BAD, f"{name}.expected")
    if UPDATE:
        with open(expected_path, "w", encoding="utf-8") as f:
            f.write(out)
    with open(expected_path, encoding="utf-8") as f:
        assert out == f.read()
    # the summary goes to stderr and counts the diagnostics
    assert f": {len(lines)} error" in err


def test_whole_folder_reports_every_file(capsys, monkeypatch):
    """Validating the folder prints the union of the per-file diagnostics, sorted by file."""
    code, out, err = _validate(capsys, monkeypatch, "tests/bad_specs")
    assert code == 1 and "Traceback" not in err
    expected = []
    for name in CASES:
        with open(os.path.join(BAD, f"{name}.expected"), encoding="utf-8") as f:
            expected.extend(f.read().splitlines())
    assert out.splitlines() == expected


def test_good_spec_prints_nothing(capsys, monkeypatch, tmp_path):
    """The converse: a valid spec gives no stdout and exit code 0 (so the goldens mean something);
    kernel and lowering bodies are function bodies, so they may ``return``."""
    good = tmp_path / "good.yaml"
    good.write_text(
        "op: good\ndomain: test\nversions:\n- since: 1\n  inputs:\n  - {name: X, type: tensor(float)}\n"
        "  outputs:\n  - {name: Y, type: tensor(float)}\n"
        "  kernel:\n    python: |\n      if X.size == 0:\n          return X\n      return np.abs(X)\n"
        "  lowerings:\n  - {name: l, to: 'ai.onnx::Abs-13', python: return target(X)}\n", encoding="utf-8")
    code, out, err = _validate(capsys, monkeypatch, str(good))
    assert (code, out) == (0, "")
    assert "0 errors" in err


def test_corpus_is_complete():
    """(Runs after the goldens, so an OPKIT_UPDATE_GOLDEN=1 run writes new .expected files first.)"""
    assert len(CASES) >= 25
    expected = sorted(f[:-9] for f in os.listdir(BAD) if f.endswith(".expected"))
    assert expected == CASES, "every bad spec needs a .expected file and vice versa"
