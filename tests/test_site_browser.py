"""The built site in a browser: an op page's conformance link leads to the scoreboard, whose repro
link downloads the whole bundle as a zip.

Needs Playwright (in the dev extra) driving the system's Chromium (``apt-get install chromium``;
.ci/run installs it where it can): Playwright is never allowed to download a browser of its own,
so ``playwright install`` is never run. Without either the test skips, saying which is missing.
The site is the folder in ``OPKIT_SITE`` if set, else the session's whole-site build
(tests/conftest.py's ``full_site``, shared with tests/test_docs_site.py).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import zipfile
from pathlib import Path

import pytest

OP_PAGE = Path("generated", "operators", "ai.onnx", "Trilu.html")
# Without these, Chromium waits on the network it cannot reach here (component updates, sync,
# QUIC probes) and the launch or first page hangs.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def why_no_browser() -> str | None:
    """One line saying what is missing for a browser test here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[dev]')"
    if chromium() is None:
        return "no system Chromium (apt-get install chromium); Playwright may not download one"
    return None


MISSING = why_no_browser()


@pytest.fixture
def built_site(request) -> Path:
    if os.environ.get("OPKIT_SITE"):
        return Path(os.environ["OPKIT_SITE"])
    if os.environ.get("OPKIT_DOCS_FULL") == "0":
        pytest.skip("no site to browse: OPKIT_DOCS_FULL=0 skips the whole-site build (set OPKIT_SITE to a built one)")
    built = request.getfixturevalue("full_site")  # only without OPKIT_SITE: the build takes minutes
    assert (built.out / OP_PAGE).exists(), f"the site build wrote no {OP_PAGE}: {built.done.stderr[-3000:]}"
    return built.out


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
def test_op_page_to_scoreboard_to_bundle_zip(built_site, tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # a persistent context so the profile is a new empty folder of ours
        context = p.chromium.launch_persistent_context(tmp_path / "profile", executable_path=chromium(),
                                                       headless=True, args=CHROMIUM_ARGS, accept_downloads=True)
        try:
            page = context.new_page()
            page.goto((built_site / OP_PAGE).resolve().as_uri())
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
            context.close()
    assert target.suffix == ".zip"
    with zipfile.ZipFile(target) as zf:
        names = {n.split("/", 1)[1] for n in zf.namelist()}
    assert {"repro.py", "case.json"} <= names


def test_skips_say_what_is_missing(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "playwright" else real(name, *a))
    assert why_no_browser() == "playwright is not installed (pip install -e '.[dev]')"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert why_no_browser().startswith("no system Chromium (apt-get install chromium)")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/chromium" if name == "chromium" else None)
    assert why_no_browser() is None


# JavaScript run in each page: the header cells whose text the browser laid out on more than one
# line (a header wrapped inside or between words), and the version sections the page holds
_WRAPPED_HEADERS = """() => Array.from(document.querySelectorAll('article table th')).filter(th => {
    // the line boxes of the header's text: a rect starting below the previous one by more than half
    // its height is a new line (inline code sits a pixel or two off the text's baseline)
    const rects = [];
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent.trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) if (r.width > 0) rects.push(r);
    }
    rects.sort((a, b) => a.top - b.top);
    let lines = rects.length ? 1 : 0;
    for (let k = 1; k < rects.length; k++) if (rects[k].top > rects[k - 1].top + rects[k - 1].height / 2) lines++;
    return lines > 1;
}).map(th => th.textContent.trim())"""


@pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
@pytest.mark.parametrize("op", ["Trilu", "Conv", "Resize"])
def test_pages_read_at_laptop_width(built_site, tmp_path, monkeypatch, op):
    """At 1280 px: no table header is wrapped, the page shows the newest version first, and each
    older version is one click away on a page of its own."""
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    page_path = built_site / "generated" / "operators" / "ai.onnx" / f"{op}.html"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.resolve().as_uri())
            assert page.evaluate(_WRAPPED_HEADERS) == []
            titles = page.locator("article h2").all_inner_texts()
            sections = [t for t in titles if t.startswith(f"{op} - ")]
            assert len(sections) == 1, titles  # the newest version only
            versions = page.locator("article li", has_text="versions (newest first)").first
            links = versions.locator("a")
            numbers = [int(t) for t in links.all_inner_texts()]
            assert numbers == sorted(numbers, reverse=True) and sections[0] == f"{op} - {numbers[0]}"
            if len(numbers) > 1:  # one click to an older version's own page
                links.nth(1).click()
                page.wait_for_load_state()
                assert page.url.split("#")[0].endswith(f"/{op}-{numbers[1]}.html"), page.url
                assert page.locator("article h2", has_text=f"{op} - {numbers[1]}").count() == 1
                assert page.evaluate(_WRAPPED_HEADERS) == []
        finally:
            browser.close()
