"""Repro bundles as zips on the site (docs/_ext/opkit_bundles.py, opkit/emit/bundles.py), and the
site's "More" navigation (docs/_ext/opkit_site.py with docs/conf.py's lists)."""

from __future__ import annotations

import io
import os
import runpy
import sys
import zipfile
from types import SimpleNamespace

import pytest

from opkit.emit.bundles import bundle_link, bundle_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs", "_ext"))

import opkit_bundles  # noqa: E402  (docs/_ext is not a package)

FILES = ("repro.py", "model.onnx", "inputs.npz", "expected.npz", "case.json")
BUNDLE = "docs/findings/rt/ai.onnx/Trilu-14/int64-differential-mismatch"


def _bundle(root) -> str:
    folder = root / BUNDLE
    folder.mkdir(parents=True)
    for i, name in enumerate(FILES):
        (folder / name).write_bytes(f"{name} {i}\n".encode() * 50)
    return str(folder)


def test_zip_holds_every_file_of_the_bundle_under_its_name(tmp_path):
    folder = _bundle(tmp_path)
    with zipfile.ZipFile(io.BytesIO(opkit_bundles.zip_bytes(folder))) as zf:
        names = zf.namelist()
        assert names == sorted(f"int64-differential-mismatch/{n}" for n in FILES)
        for name in FILES:
            assert zf.read(f"int64-differential-mismatch/{name}") == (tmp_path / BUNDLE / name).read_bytes()
        assert {i.date_time for i in zf.infolist()} == {opkit_bundles.FIXED_TIME}


def test_zip_bytes_are_deterministic(tmp_path):
    folder = _bundle(tmp_path)
    first = opkit_bundles.zip_bytes(folder)
    os.utime(os.path.join(folder, "repro.py"), (1_700_000_000, 1_700_000_000))  # a checkout's times vary
    assert opkit_bundles.zip_bytes(folder) == first
    target = tmp_path / "out" / "_bundles" / f"{BUNDLE}.zip"
    assert opkit_bundles.write_zip(folder, target) is True
    assert target.read_bytes() == first
    assert opkit_bundles.write_zip(folder, target) is False  # unchanged: not rewritten
    (tmp_path / BUNDLE / "case.json").write_text("{}")
    assert opkit_bundles.write_zip(folder, target) is True


def test_zip_url_is_relative_to_the_page():
    assert opkit_bundles.zip_url("generated/scoreboard/op-ai.onnx-Trilu", BUNDLE) == f"../../_bundles/{BUNDLE}.zip"
    assert opkit_bundles.zip_url("generated/operators/ai.onnx/Trilu", BUNDLE) == f"../../../_bundles/{BUNDLE}.zip"


def test_only_committed_bundles_are_linked(tmp_path):
    _bundle(tmp_path)
    root = str(tmp_path)
    assert bundle_path(root, BUNDLE) == BUNDLE
    assert bundle_path(root, BUNDLE + "/repro.py") == BUNDLE
    assert bundle_path(root, str(tmp_path / BUNDLE)) == BUNDLE  # absolute paths of this checkout
    assert bundle_link(root, BUNDLE) == f"{{opkit-bundle}}`repro <{BUNDLE}>`"
    (tmp_path / ".opkit" / "repros" / "x").mkdir(parents=True)
    (tmp_path / ".opkit" / "repros" / "x" / "repro.py").write_text("")
    for bad in (None, "", "docs/findings/rt/missing", ".opkit/repros/x", "docs/findings/../.opkit/repros/x",
                "docs/findings/rt/a`b> {download}`x", "/etc"):
        assert bundle_link(root, bad) == "", bad


def test_more_toctree_lists_no_scoreboard_runtime_or_op_page():
    """The home page's "More" toctree: the scoreboard index, not one entry per runtime (those
    showed as "Scoreboard: <runtime> ?" in the navigation) or per op."""
    from opkit_site import rest_entries

    conf = runpy.run_path(os.path.join(ROOT, "docs", "conf.py"))
    config = SimpleNamespace(opkit_listed=conf["opkit_listed"], opkit_orphans=conf["opkit_orphans"],
                             root_doc=conf["root_doc"])
    found = {"index", "install", "generated/scoreboard/index", "generated/scoreboard/runtime-opkit",
             "generated/scoreboard/runtime-onnxruntime", "generated/scoreboard/op-ai.onnx-Trilu",
             "generated/operators/ai.onnx/Trilu", "generated/findings/onnxruntime", "generated/coverage"}
    assert rest_entries(config, found, "index") == ["generated/coverage", "generated/findings/onnxruntime",
                                                    "generated/scoreboard/index"]


def test_runtime_page_title_has_no_question_mark(tmp_path):
    import json

    from opkit.emit import scoreboard

    folder = tmp_path / "conformance" / "reports"
    folder.mkdir(parents=True)
    case = {"backend": "rt", "suite": "differential", "op": "Trilu", "domain": "ai.onnx", "version": 14,
            "types": {"T": "tensor(float)"}, "example": "differential", "outcome": "pass", "message": "",
            "repro": None}
    (folder / "rt.json").write_text(json.dumps({"target": {}, "cases": [case]}))
    pages = scoreboard.render(str(tmp_path), scoreboard.load(str(tmp_path)))
    title = next(line for line in pages["generated/docs/scoreboard/runtime-rt.md"].splitlines() if line.startswith("# "))
    assert title == "# Scoreboard: rt"


@pytest.mark.parametrize("rows", [["float", "double", "int64"]])
def test_scoreboard_groups_types_with_the_same_cells(tmp_path, rows):
    import json

    from opkit.emit import scoreboard

    folder = tmp_path / "conformance" / "reports"
    folder.mkdir(parents=True)
    cases = [{"backend": "rt", "suite": "differential", "op": "Trilu", "domain": "ai.onnx", "version": 14,
              "types": {"T": f"tensor({t})"}, "example": "differential", "outcome": "pass", "message": "",
              "repro": None} for t in rows]
    (folder / "rt.json").write_text(json.dumps({"target": {"backends": [{"name": "rt", "version": "1"}]},
                                                "cases": cases}))
    page = scoreboard.render(str(tmp_path), scoreboard.load(str(tmp_path)))["generated/docs/scoreboard/op-ai.onnx-Trilu.md"]
    assert "| int64, float, double | pass |" in page


def _mismatch(repro, suite="differential"):
    return {"backend": "rt", "suite": suite, "op": "Trilu", "domain": "ai.onnx", "version": 14,
            "types": {"T": "tensor(int64)"}, "example": suite, "outcome": "mismatch", "message": "wrong",
            "repro": repro}


def test_a_cell_links_a_committed_bundle_of_its_outcome_from_any_report(tmp_path):
    """A sweep's bundles live in an uncommitted folder; a smaller report of the same op may commit
    its bundles. The cell shows the sweep's case first, yet must link the committed bundle, on the
    op page and on the runtime page's Not passing table."""
    import json

    from opkit.emit import scoreboard

    _bundle(tmp_path)
    folder = tmp_path / "conformance" / "reports"
    folder.mkdir(parents=True)
    target = {"backends": [{"name": "rt", "version": "1"}]}
    (folder / "a-sweep.json").write_text(json.dumps(
        {"target": target, "cases": [_mismatch(".opkit/repro/rt/ai.onnx/Trilu-14/int64-differential-mismatch")]}))
    (folder / "b-trilu.json").write_text(json.dumps(
        {"target": target, "cases": [_mismatch(BUNDLE, "properties"), _mismatch("docs/findings/rt/missing")]}))
    pages = scoreboard.render(str(tmp_path), scoreboard.load(str(tmp_path)))
    link = f"{{opkit-bundle}}`repro <{BUNDLE}>`"
    assert f"| int64 | **mismatch (3/3)** {link} |" in pages["generated/docs/scoreboard/op-ai.onnx-Trilu.md"]
    assert link in pages["generated/docs/scoreboard/runtime-rt.md"]
    # nothing committed: no link at all, never a path to an uncommitted folder
    (folder / "b-trilu.json").unlink()
    pages = scoreboard.render(str(tmp_path), scoreboard.load(str(tmp_path)))
    assert "| int64 | **mismatch (1/1)** |" in pages["generated/docs/scoreboard/op-ai.onnx-Trilu.md"]
