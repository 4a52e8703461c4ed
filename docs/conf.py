"""Sphinx configuration for the opkit site: ``sphinx-build -W -b html docs docs/_build/html``.

Pages come from two trees:

* ``docs/`` (this folder): the hand-written guides;
* ``generated/docs/``: what ``opkit gen`` writes (operator pages, operator index, changelogs,
  spec field reference, coverage and scoreboard pages).

Sphinx only reads documents below its source folder, so the generated tree is *mounted* by the
local extension ``_ext/opkit_site.py``: its project class adds every ``generated/docs/**.md`` under
the document name ``generated/<path>``, pointing at the file where it lives. Nothing is copied or
symlinked, relative links between generated pages keep working, incremental rebuilds see edits to
generated files, and warnings name the real file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

sys.path.insert(0, str(ROOT))

project = "opkit"
author = "opkit developers"
copyright = "opkit developers"
try:
    from opkit import __version__ as release
except Exception:  # pragma: no cover - the site can be built without opkit installed
    release = ""
version = release

sys.path.insert(0, str(DOCS / "_ext"))
# opkit.core.sphinx_safe: spec text is data, so no directive may read local files into the site
extensions = ["myst_parser", "opkit_site", "opkit.core.sphinx_safe"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "generated", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["deflist"]  # definition lists: docs/spec-format.md
myst_heading_anchors = 0
# The changelogs are ONNX's gen_doc markdown, kept byte-for-byte: they start at H2 and jump from H1
# to H3. That is the format we reproduce, not a mistake in our pages, so MyST's heading-level
# check is silenced (the op pages' heading structure is checked by tests/test_docs_pages.py).
suppress_warnings = ["myst.header"]

# Docutils' SmartQuotes pass costs ~15% of the build and would turn the quotes inside ONNX's
# docs ("upper", 'constant') into typographic ones that no longer match the specs.
smartquotes = False

html_theme = "furo"
html_title = "opkit"
html_static_path = ["_static"]
html_css_files = ["opkit.css"]
html_copy_source = False  # the sources are in the repository; this keeps the site small
html_show_sourcelink = False
html_last_updated_fmt = None

# The generated tree is mounted under the document name prefix "generated/" (see _ext/opkit_site.py).
opkit_mount_dir = "../generated/docs"
opkit_mount_prefix = "generated"
# Pages the toctrees of index.md and changelog.md list; every other page (a generated report, a
# guide added later) lands in the home page's "More" toctree, so none is unreachable.
opkit_listed = (
    "install", "custom-op", "conformance", "commands", "design", "spec-format", "changelog",
    "generated/spec-fields", "generated/Operators", "generated/operators/index",
    "generated/Changelog", "generated/Changelog-ml",
)
# Operator pages are kept out of the toctree (the sidebar would hold 360 entries on every page and
# the build would take minutes); the operator index links to them. See _ext/opkit_site.py.
# The scoreboard's per-op pages likewise (192 once the all-ops sweeps are committed): the
# scoreboard index links each one. Its per-runtime pages too: in the "More" toctree they showed as
# a row of "Scoreboard: <runtime> <version>" entries (a stray "Scoreboard: opkit ?" among them).
opkit_orphans = ("generated/operators/*/*", "generated/scoreboard/op-*", "generated/scoreboard/runtime-*")
# The changelogs have a heading per op version (2,000+): keep the version groups in the navigation.
opkit_tocdepth = {"generated/Changelog*": 2}
# OPKIT_DOCS_ONLY="generated/operators/*/Trilu,generated/Operators" mounts only the generated pages
# matching these patterns, for a quick look at a few pages (tests/test_docs_site.py instead mounts
# a folder of freshly emitted pages with -D opkit_mount_dir=...). Links to the pages left out become
# warnings, so such builds run without -W.
opkit_mount_only = tuple(p for p in os.environ.get("OPKIT_DOCS_ONLY", "").split(",") if p)
