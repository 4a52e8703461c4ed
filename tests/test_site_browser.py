"""The built site in a browser: an op page's conformance link leads to the scoreboard, whose repro
link downloads the whole bundle as a zip.

Needs Playwright (``pip install playwright``) driving the system's Chromium (``apt install
chromium``): Playwright is never allowed to download a browser of its own. And a built site: the
folder in ``OPKIT_SITE`` or docs/_build/html (``opkit docs``). Without any of these it skips,
saying which is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.environ.get("OPKIT_SITE") or os.path.join(ROOT, "docs", "_build", "html")
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
OP_PAGE = os.path.join(SITE, "generated", "operators", "ai.onnx", "Trilu.html")

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="playwright is not installed"),
    pytest.mark.skipif(BROWSER is None, reason="no system chromium (apt install chromium); "
                                               "Playwright may not download one"),
    pytest.mark.skipif(not os.path.exists(OP_PAGE), reason=f"no built site at {SITE} (run opkit docs)"),
]


def test_op_page_to_scoreboard_to_bundle_zip(tmp_path):
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_context(accept_downloads=True).new_page()
            page.goto(f"file://{OP_PAGE}")
            assert page.locator("h3", has_text="Conformance").count() >= 1
            page.locator("a", has_text="scoreboard page").first.click()
            page.wait_for_load_state()
            assert page.url.endswith("/generated/scoreboard/op-ai.onnx-Trilu.html")
            assert page.locator("h1", has_text="Scoreboard: Trilu").count() == 1
            links = page.locator("a.opkit-bundle")
            assert links.count() > 0, "no repro bundle linked on Trilu's scoreboard page"
            with page.expect_download() as info:
                links.first.click()
            target = tmp_path / info.value.suggested_filename
            info.value.save_as(target)
        finally:
            browser.close()
    assert target.suffix == ".zip"
    with zipfile.ZipFile(target) as zf:
        names = {n.split("/", 1)[1] for n in zf.namelist()}
    assert {"repro.py", "case.json"} <= names
