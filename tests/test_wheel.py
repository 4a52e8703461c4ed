"""The wheel carries the toolkit: built from this checkout and installed into a folder of its own,
opkit runs from an empty directory with no checkout in sight.

The installed copy is put first on PYTHONPATH, so it shadows this checkout's editable install; the
tests check that the code and the specs really come from the installed copy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_WHEEL_MB = 3.0  # docs/install.md reports the size; a wheel past this carries something it should not


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the dev extra pins setuptools and wheel, so no index is needed here
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), ROOT],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = out.glob("*.whl")
    return path


def test_the_wheel_is_named_for_a_distribution_no_other_project_holds(wheel):
    """The package index's ``opkit`` is someone else's: opkit's wheel is ``opkit-onnx``, and the
    install hints name that distribution."""
    from opkit.core.distribution import DISTRIBUTION, pip_install

    assert wheel.name.startswith(DISTRIBUTION.replace("-", "_") + "-")
    assert pip_install("ort") == "pip install 'opkit-onnx[ort]'"


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--target", str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return target


def run_installed(installed, cwd, *argv):
    env = {k: v for k, v in os.environ.items() if k not in ("OPKIT_PROJECT", "PYTHONPATH")}
    env["PYTHONPATH"] = str(installed)
    return subprocess.run([sys.executable, "-m", "opkit.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_wheel_holds_specs_kernels_tests_and_no_caches(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "opkit/_builtin/specs/ai.onnx/Trilu.yaml" in names
    assert "opkit/_builtin/generated/kernels/ai.onnx/trilu.py" in names
    assert "opkit/_builtin/generated/tests/ai.onnx/test_trilu.py" in names
    assert "opkit/_builtin/conformance/expectations/onnxruntime.yaml" in names
    assert "opkit/templates/init/ScaledTanh.yaml.j2" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/." in n]
    assert os.path.getsize(wheel) < MAX_WHEEL_MB * 2**20


def test_installed_wheel_works_from_an_empty_folder(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_installed(installed, empty, "--version")
    assert done.returncode == 0 and done.stdout.startswith("opkit "), done.stderr
    done = run_installed(installed, empty, "show", "Trilu")
    assert done.returncode == 0, done.stderr
    assert "Trilu  (ai.onnx, version 14)" in done.stdout
    assert str(installed) in done.stdout or "_builtin" in done.stdout  # the spec shown is the installed one
    # the main job's shape, on the reference backend (no runtime needed): examples pass, from package data
    report = tmp_path / "r.json"
    done = run_installed(installed, empty, "test", "--backend", "reference", "--op", "Trilu", "--suite", "examples",
                         "--report", str(report), "-q")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert report.exists()
    assert not (empty / "generated").exists()


def test_installed_wheel_serves_a_user_project_and_never_writes_into_itself(installed, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    assert run_installed(installed, project, "init").returncode == 0
    for argv in (["validate"], ["gen", "-q"],
                 ["test", "--backend", "reference", "--op", "my.ops::ScaledTanh", "--max-examples", "10", "-q"]):
        done = run_installed(installed, project, *argv)
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
    assert (project / "generated" / "kernels" / "my.ops" / "scaled_tanh.py").exists()
    assert not list((installed / "opkit" / "_builtin" / "generated" / "kernels").glob("my.ops"))
    # pointing gen at the installed specs is refused
    done = run_installed(installed, project, "--specs", str(installed / "opkit" / "_builtin" / "specs"), "gen")
    assert done.returncode == 2 and "installed package" in done.stderr
