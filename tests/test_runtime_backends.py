"""The third-party runtime backends (openvino, tract, iree, torch, jax), `opkit compare` and the
scoreboard emitter.

Without an engine installed (the main venv), asking for its backend is a usage error (exit 2) whose
one-line message names the extra to install, with no traceback. With an engine installed (the
runtimes venv / tox -e runtimes) one Trilu example runs through the runner and its outcome is
recorded. The scoreboard renders the same pages twice from a small fixture report.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BACKENDS = {
    # name: (extra, module:Class, modules the engine needs)
    "openvino": ("openvino", "opkit.backends.openvino_backend:OpenVinoBackend", ("openvino",)),
    "tract": ("tract", "opkit.backends.tract_backend:TractBackend", ("tract",)),
    "iree": ("iree", "opkit.backends.iree_backend:IreeBackend", ("iree.compiler", "iree.runtime")),
    "torch": ("torch", "opkit.backends.torch_backend:TorchBackend", ("torch", "onnx2torch")),
    "jax": ("jax", "opkit.backends.jax_backend:JaxBackend", ("jax", "jaxonnxruntime")),
}


def _installed(modules) -> bool:
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


def _registered(name: str) -> bool:
    from opkit.backends.registry import names

    return name in names()


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_missing_engine_is_a_usage_error_naming_the_extra(name):
    extra, target, modules = BACKENDS[name]
    if _installed(modules):
        pytest.skip(f"{name}'s engine is installed here")
    backend = name if _registered(name) else target
    proc = subprocess.run([sys.executable, "-m", "opkit", "test", "--backend", backend, "--op", "Trilu",
                           "--suite", "examples", "--no-repro", "-q"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"pip install 'opkit-onnx[{extra}]'" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_missing_engine_import_error_in_process(name):
    extra, target, modules = BACKENDS[name]
    if _installed(modules):
        pytest.skip(f"{name}'s engine is installed here")
    from opkit.backends.backend_api import load_class

    cls = load_class(target)  # the module itself imports without the engine
    with pytest.raises(ImportError, match=rf"opkit-onnx\[{extra}\]"):
        cls()


def test_entry_points_registered():
    from opkit.backends.registry import names

    if not any(n in names() for n in BACKENDS):
        pytest.skip("opkit is not installed with its entry points (pip install -e .)")
    assert set(BACKENDS) <= set(names())


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_one_trilu_case_runs_and_is_recorded(name):
    extra, target, modules = BACKENDS[name]
    if not _installed(modules):
        pytest.skip(f"{name}'s engine is not installed (pip install 'opkit-onnx[{extra}]')")
    from opkit.backends.registry import BackendSpec
    from opkit.results.outcomes import OUTCOMES
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess
    from opkit.spec.load import load_spec_file

    spec, diags = load_spec_file(os.path.join(ROOT, "specs", "ai.onnx", "Trilu.yaml"))
    assert spec is not None and not diags
    version = spec.versions[0]
    example = next(e for e in version.examples if e.name == "triu")
    one = dataclasses.replace(version, examples=(example,))
    worker = InProcess(BackendSpec(name, target, "auto"))
    try:
        info = worker.describe()
        assert info["name"] == name and info["version"]
        runner = Runner(BackendRunner(worker, info), max_examples=1)
        runner.run_examples(spec, one)
    finally:
        worker.close()
    assert len(runner.results) == 1
    record = runner.results[0]
    assert record.backend == name and record.example == "triu"
    assert record.outcome in OUTCOMES
    if name != "torch":  # onnx2torch has no Trilu converter: unsupported
        assert record.outcome == "pass", record.message


# ------------------------------------------------------------------------------------------------
# opkit compare and the scoreboard


def _case(backend, types, outcome, suite="differential", example="differential", message="", repro=None):
    return {"backend": backend, "suite": suite, "op": "Trilu", "domain": "ai.onnx", "version": 14,
            "types": {"T": f"tensor({types})"}, "example": example, "outcome": outcome, "message": message,
            "examples_run": 3, "duration_s": 0.123, "repro": repro}


def _report(backend, version, cases, duration=1.5):
    return {"format": "opkit-conformance-report/1",
            "target": {"backends": [{"name": backend, "version": version, "device": "CPU", "max_ir_version": 13}],
                       "opkit": "0.1.0", "onnx": "1.23.2", "numpy": "2", "seed": 0,
                       "machine": {"platform": "x", "cpu_count": 2}},
            "settings": {}, "summary": {"total": len(cases), "outcomes": {}, "ok": False, "duration_s": duration},
            "cases": cases}


@pytest.fixture()
def fixture_root(tmp_path):
    reports = tmp_path / "conformance" / "reports"
    reports.mkdir(parents=True)
    bundle = tmp_path / "docs" / "findings" / "rt-b" / "ai.onnx" / "Trilu-14" / "int64-differential-mismatch"
    bundle.mkdir(parents=True)
    (bundle / "repro.py").write_text("# repro\n")
    a = _report("rt-a", "1.0", [_case("rt-a", "int64", "pass"), _case("rt-a", "int64", "pass", "examples", "triu"),
                                _case("rt-a", "string", "unsupported", message="no strings")])
    b = _report("rt-b", "2.0", [_case("rt-b", "int64", "mismatch", message="1/6 elements differ | at [1, 0]",
                                      repro="docs/findings/rt-b/ai.onnx/Trilu-14/int64-differential-mismatch"),
                                _case("rt-b", "int64", "pass", "examples", "triu"),
                                _case("rt-b", "string", "error", message="boom at 0xdeadbeef12")], duration=9.9)
    (reports / "rt-a-trilu.json").write_text(json.dumps(a))
    (reports / "rt-b-trilu.json").write_text(json.dumps(b))
    return tmp_path


def test_compare_command(fixture_root, capsys):
    from opkit.commands.compare import main

    paths = sorted(str(p) for p in (fixture_root / "conformance" / "reports").glob("*.json"))
    assert main(paths) == 0
    out = capsys.readouterr().out
    # the fixture reports recorded no code or date: each runtime is flagged as an older report
    assert "rt-a 1.0 (older report), rt-b 2.0 (older report)" in out
    int64 = next(line for line in out.splitlines() if " int64 " in line)
    assert "= pass" in int64 and "x mismatch (1/2)" in int64
    assert "rt-a: agrees on 1/2" in out and "rt-b: agrees on 0/2" in out
    assert main(paths + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = next(r for r in data["rows"] if r["types"] == "int64")
    assert row["runtimes"]["rt-b"]["outcome"] == "mismatch" and row["runtimes"]["rt-a"]["agrees"]
    assert main([str(fixture_root / "nope.json")]) == 2


def test_scoreboard_pages_are_deterministic(fixture_root):
    from opkit.emit import scoreboard

    first = scoreboard.render(str(fixture_root), scoreboard.load(str(fixture_root)))
    second = scoreboard.render(str(fixture_root), scoreboard.load(str(fixture_root)))
    assert first == second
    base = "generated/docs/scoreboard"
    assert set(first) == {f"{base}/index.md", f"{base}/op-ai.onnx-Trilu.md", f"{base}/runtime-rt-a.md",
                          f"{base}/runtime-rt-b.md"}
    for text in first.values():
        assert text.startswith("<!-- @generated by opkit")
        assert "0.123" not in text and "9.9" not in text  # no durations
        assert "deadbeef" not in text
    op_page = first[f"{base}/op-ai.onnx-Trilu.md"]
    # the link is the zip of the whole bundle, made by the site's extension (docs/_ext/opkit_bundles.py)
    assert "| int64 | pass | **mismatch (1/2)** {opkit-bundle}`repro <docs/findings/rt-b/ai.onnx/Trilu-14/" \
           "int64-differential-mismatch>` |" in op_page
    assert "| string | unsupported (1/1) | **error (1/1)** |" in op_page
    index = first[f"{base}/index.md"]
    assert "[rt-a](runtime-rt-a.md) | 1.0 | 1/2" in index
    assert "device: CPU" in index


def test_scoreboard_with_no_reports(tmp_path):
    from opkit.emit import scoreboard

    pages = scoreboard.render(str(tmp_path), scoreboard.load(str(tmp_path)))
    assert list(pages) == ["generated/docs/scoreboard/index.md"]
    assert "No reports are committed yet." in pages["generated/docs/scoreboard/index.md"]


def test_model_files_leave_nothing_behind_even_when_the_process_is_killed(tmp_path):
    """tract loads models from a path: model_file gives one that is anonymous memory on Linux, so a
    killed worker leaves no file in the temporary folder (a folder per backend used to be left)."""
    import signal

    from opkit.backends._runtime_common import model_file

    with model_file(b"\x08\x07model bytes") as path:
        with open(path, "rb") as f:
            assert f.read() == b"\x08\x07model bytes"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    code = ("import os, signal\nfrom opkit.backends._runtime_common import model_file\n"
            "with model_file(b'x' * 5000000) as p:\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert os.listdir(tmp_path) == []
