"""``opkit import`` merges: imported fields are refreshed, hand-written extensions are kept, and a
spec file that does not load is never overwritten. Everything that writes uses a temporary tree."""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import replace

import pytest
from onnxruntime_pin import require_recorded_onnxruntime

from opkit.cli import main
from opkit.spec.dump import dump_spec
from opkit.spec.load import load_spec_file
from opkit.spec.model import (
    Example, Kernel, Lowering, OpVersion, Property, RankRule, Rule, TensorValue, Tolerance, ValueDomain,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(ROOT, "specs")

pytest.importorskip("onnx")


@functools.lru_cache(maxsize=None)
def _imported_trilu():
    from opkit.importers.onnx_defs import import_onnx

    return next(s for s in import_onnx() if s.name == "Trilu" and s.domain == "ai.onnx")


def _with_extensions(spec):
    """The imported Trilu plus one of every hand-written extension, and a stale imported field."""
    v = spec.versions[0]
    upper = replace(v.attribute("upper"), domain=ValueDomain((0, 1)), doc="stale attribute doc")
    inputs = (replace(v.inputs[0], rank=RankRule(2, None)), replace(v.inputs[1], rank=RankRule(0, 0)))
    example = Example(
        "triu_neg", "k = -1 keeps one diagonal below the main one.", (("upper", 1),),
        (("input", TensorValue("int64", (2, 2), ((1, 2), (3, 4)))), ("k", TensorValue("int64", (), -1))),
        (("output", TensorValue("int64", (2, 2), ((1, 2), (3, 4)))),),
    )
    v = replace(
        v, doc="stale doc", attributes=(upper,), inputs=inputs,
        outputs=(replace(v.outputs[0], rank=RankRule(2, 4)),),
        changes="First version.", semantics="keep input[..., i, j] where j - i >= k (upper)",
        rules=(Rule("C1", "input.ndim >= 2", "rank at least 2"),),
        kernel=Kernel(python="return np.triu(input, k)\n"),
        properties=(Property("idempotent", "equal(op(op(input, k), k), op(input, k))", "numeric"),),
        lowerings=(Lowering("dml", "directml::DiagonalMatrix1-1", "return target(input)\n"),),
        tolerances=(Tolerance("float16", 0.001, 0.0),),
        examples=(example,),
    )
    hand_written = OpVersion(since=99, doc="A hand-written future version.",
                             outputs=(replace(spec.versions[0].outputs[0], type="tensor(float)"),),
                             semantics="hand-written")
    return replace(spec, versions=(v, hand_written), doc="Op-level note, hand-written.")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "specs"
    (root / "ai.onnx").mkdir(parents=True)
    return root


def _run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_import_keeps_extensions(tree, capsys):
    imported = _imported_trilu()
    old = _with_extensions(imported)
    path = tree / "ai.onnx" / "Trilu.yaml"
    path.write_text(dump_spec(old), encoding="utf-8")
    assert load_spec_file(str(path))[1] == []

    code, out, err = _run(capsys, "--specs", str(tree), "import", "onnx", "--op", "Trilu")
    assert code == 0, out + err
    merged, diags = load_spec_file(str(path))
    assert not diags
    new, kept = merged.versions
    ext = old.versions[0]
    # extensions survive, field by field
    for key in ("changes", "semantics", "rules", "kernel", "properties", "lowerings", "tolerances", "examples"):
        assert getattr(new, key) == getattr(ext, key), key
    assert new.attribute("upper").domain == ValueDomain((0, 1))
    assert [p.rank for p in new.inputs] == [RankRule(2, None), RankRule(0, 0)]
    assert new.outputs[0].rank == RankRule(2, 4)
    assert merged.doc == "Op-level note, hand-written."
    # a version only on disk is kept as written
    assert kept == old.versions[1]
    # imported fields are refreshed from onnx
    assert new.doc == imported.versions[0].doc != "stale doc"
    assert new.attribute("upper").doc == imported.versions[0].attribute("upper").doc
    # and re-importing is a no-op
    before = path.read_bytes()
    code, out, err = _run(capsys, "--specs", str(tree), "import", "onnx", "--op", "Trilu", "--check")
    assert code == 0 and out == ""
    assert path.read_bytes() == before


def test_import_leaves_broken_file_untouched(tree, capsys):
    path = tree / "ai.onnx" / "Trilu.yaml"
    broken = b"op: Trilu\ndomain: ai.onnx\nversions:\n- since: 14\n  semantics: hand-written\n  bogus: 1\n"
    path.write_bytes(broken)
    code, out, err = _run(capsys, "--specs", str(tree), "import", "onnx", "--op", "Trilu")
    assert code == 1
    assert path.read_bytes() == broken
    assert f"{path}:6:3: error: unknown key 'bogus' in a version" in out
    assert "left untouched" in err


def test_import_writes_missing_files(tree, capsys):
    code, out, err = _run(capsys, "--specs", str(tree), "import", "onnx", "--op", "Trilu", "--op", "Abs")
    assert code == 0
    assert sorted(os.listdir(tree / "ai.onnx")) == ["Abs.yaml", "Trilu.yaml"]
    spec, diags = load_spec_file(str(tree / "ai.onnx" / "Trilu.yaml"))
    assert not diags and spec == _imported_trilu()


def test_import_check_fails_on_stale_tree(tree, capsys):
    path = tree / "ai.onnx" / "Trilu.yaml"
    stale = replace(_imported_trilu(), versions=(replace(_imported_trilu().versions[0], doc="stale"),))
    path.write_text(dump_spec(stale), encoding="utf-8")
    before = path.read_bytes()
    code, out, err = _run(capsys, "--specs", str(tree), "import", "onnx", "--op", "Trilu", "--check")
    assert code == 1
    assert "out of date" in out and "Trilu.yaml" in out
    assert path.read_bytes() == before


def _snapshot(root: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


@pytest.mark.parametrize("source", ["onnx", "onnxruntime"])
def test_import_check_is_clean_on_committed_tree(source, capsys, monkeypatch, tmp_path):
    """The committed specs are exactly what an import would write (extensions merged in)."""
    if source == "onnxruntime":
        require_recorded_onnxruntime()
    # check a copy, so concurrent edits of specs/ cannot race the comparison
    copy = tmp_path / "specs"
    shutil.copytree(SPECS, copy)
    before = _snapshot(str(copy))
    monkeypatch.chdir(ROOT)
    code, out, err = _run(capsys, "--specs", str(copy), "import", source, "--check")
    assert code == 0, out + err
    assert out == ""
    assert _snapshot(str(copy)) == before
