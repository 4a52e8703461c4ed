"""Tests that compare specs/com.microsoft/ with onnxruntime's schemas run only against the release
those specs were imported from (their ``source: {onnxruntime: X}``).

A newer onnxruntime is news, not a failure: ``opkit import onnxruntime --check`` reports what it
adds or changes. The dev extra pins the recorded release, so CI always runs the comparison.
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC_DIR = os.path.join(ROOT, "specs", "com.microsoft")


def recorded_onnxruntime_versions() -> set[str]:
    """Every onnxruntime release named in a com.microsoft spec's ``source``."""
    found = set()
    for path in glob.glob(os.path.join(SPEC_DIR, "*.yaml")):
        with open(path, encoding="utf-8") as fh:
            source = (yaml.safe_load(fh) or {}).get("source") or {}
        if "onnxruntime" in source:
            found.add(str(source["onnxruntime"]))
    return found


def require_recorded_onnxruntime() -> None:
    """Skip unless the installed onnxruntime is the release the specs were imported from."""
    ort = pytest.importorskip("onnxruntime")
    recorded = recorded_onnxruntime_versions()
    assert len(recorded) == 1, f"com.microsoft specs name several onnxruntime releases: {sorted(recorded)}"
    (version,) = recorded
    if ort.__version__ != version:
        pytest.skip(f"onnxruntime {ort.__version__} is installed; specs/com.microsoft was imported from "
                    f"{version} (pip install 'onnxruntime=={version}', or see what changed with "
                    "`opkit import onnxruntime --check`)")
