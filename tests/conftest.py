"""Fixtures shared between test modules."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def full_site(tmp_path_factory):
    """The whole site (docs/ plus generated/docs/), built once per session with ``-W``: it takes
    minutes, so tests/test_docs_site.py (does it build cleanly?) and tests/test_site_browser.py
    (does it work in a browser?) share this one build. ``-W --keep-going`` writes every page even
    when a warning fails the build, so the result carries the outcome for the test that judges it."""
    if os.environ.get("OPKIT_DOCS_FULL") == "0":
        pytest.skip("whole-site build skipped: OPKIT_DOCS_FULL=0")
    if any(importlib.util.find_spec(m) is None for m in ("sphinx", "myst_parser", "furo")):
        pytest.skip("the docs extra (sphinx, myst-parser, furo) is not installed")
    base = tmp_path_factory.mktemp("full-site")
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-d", str(base / "doctrees"), "-W", "--keep-going",
           "-j", "auto", os.path.join(ROOT, "docs"), str(base / "html")]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    return SimpleNamespace(out=base / "html", done=done, seconds=time.perf_counter() - start)
