"""Sphinx extension for the opkit site (docs/conf.py loads it).

* **Mounting generated/docs.** Sphinx reads documents below its source folder only. This
  extension swaps the project's class for ``MountedProject``, whose discovery adds every
  ``generated/docs/**.md`` under the document name ``generated/<path>``, pointing at the file where
  it lives. Nothing is copied or symlinked, relative links between generated pages keep working
  (the folder structure is kept under ``generated/``), incremental builds notice edits to
  generated files, and warnings name the real file. (A class rather than a patched method: Sphinx
  pickles the project with the environment, also between parallel workers.)
* ``{opkit-rest-toctree}``: a toctree of the pages no hand-written toctree lists (coverage,
  scoreboards, a guide someone just added ...), so a new page is never an unreachable orphan.
* **Operator pages stay out of the toctree.** Sphinx copies the whole global toctree into every
  page (and furo re-parses it for the sidebar), so 360 operator pages in it cost O(pages^2). The
  pages matching ``opkit_orphans`` are marked orphan instead; the operator index and the
  per-domain lists link to them, and search finds them. Likewise ``opkit_tocdepth`` cuts the
  changelogs' 2,000+ headings from the navigation. Measured on 2 shared cores: the first full
  build took 9.7 min; with both, 54-72 s of CPU (87-165 s wall while other jobs kept the load
  at 5-8).
* **Changelog links.** ONNX's changelogs link into the ONNX repository (``[def files](/onnx/defs)``,
  ``Broadcasting.md``); while the page is read those links are pointed at GitHub, so the
  generated files stay byte-for-byte ONNX's format.
* **Repro bundles** are linked as zips made at build time: ``opkit_bundles`` (loaded from here).
* The command reference: the line ``% opkit:cli-reference`` in docs/commands.md is replaced, while
  the page is read, by the reference rendered from opkit's argument parser.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from sphinx.project import Project

CONFIG = {
    # name: default
    "opkit_mount_dir": "",        # folder to mount (absolute, or relative to the source folder)
    "opkit_mount_prefix": "generated",
    "opkit_listed": (),           # pages the hand-written toctrees list (mounted ones with the prefix)
    "opkit_orphans": (),          # fnmatch patterns of pages kept out of every toctree on purpose
    "opkit_mount_only": (),       # fnmatch patterns: mount only these generated pages (fast test builds)
    "opkit_tocdepth": {},         # fnmatch pattern -> tocdepth for pages we cannot annotate themselves
}


class MountedProject(Project):
    """A Sphinx project that also finds the documents of one folder outside the source folder."""

    mount_dir: str = ""
    mount_prefix: str = "generated"
    mount_only: tuple = ()

    def discover(self, exclude_paths=(), include_paths=("**",)):
        docnames = super().discover(exclude_paths, include_paths)
        for docname, path in mounted_documents(self.mount_dir, self.mount_prefix, self.source_suffix):
            if self.mount_only and not any(fnmatch.fnmatchcase(docname, p) for p in self.mount_only):
                continue
            rel = Path(os.path.relpath(path, self.srcdir))
            self.docnames.add(docname)
            self._path_to_docname[rel] = docname
            self._docname_to_path[docname] = rel
        return docnames

    def path2doc(self, filename):
        """Also map absolute paths inside the mounted folder (MyST resolves links that way)."""
        path = Path(filename)
        if path.is_absolute() and self.mount_dir:
            try:
                rel = path.resolve().relative_to(self.mount_dir)
            except ValueError:
                pass
            else:
                for suffix in self.source_suffix:
                    if rel.name.endswith(suffix):
                        return f"{self.mount_prefix}/{rel.as_posix()[: -len(suffix)]}"
                return None
        return super().path2doc(filename)


def mounted_documents(folder: str, prefix: str, suffixes) -> list[tuple[str, Path]]:
    out = []
    base = Path(folder)
    if folder and base.is_dir():
        for path in sorted(base.rglob("*")):
            if path.is_file() and any(path.name.endswith(s) for s in suffixes):
                rel = path.relative_to(base)
                stem = rel.as_posix()
                for s in suffixes:
                    if stem.endswith(s):
                        stem = stem[: -len(s)]
                        break
                out.append((f"{prefix}/{stem}", path))
    return out


def _mount(app) -> None:
    folder = app.config.opkit_mount_dir
    if not folder:
        return
    project = app.project
    if not isinstance(project, MountedProject):
        project.__class__ = MountedProject
    project.mount_dir = str((Path(app.srcdir) / folder).resolve())
    project.mount_prefix = app.config.opkit_mount_prefix
    project.mount_only = tuple(app.config.opkit_mount_only)


_ONNX = "https://github.com/onnx/onnx/blob/main/"
_CHANGELOG_LINK = re.compile(r"\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:|#)(/?)([^)\s]+?)\)")


def _onnx_links(text: str) -> str:
    """ONNX's changelogs link into the ONNX repository ([def files](/onnx/defs), Broadcasting.md):
    point those links at GitHub. (The file on disk stays byte-for-byte ONNX's format.)"""
    def repl(m):
        target = m.group(2)
        if m.group(1):  # repository-absolute: /onnx/defs
            return f"]({_ONNX}{target.lstrip('/')})"
        if target.split("#")[0].endswith(".md"):
            return f"]({_ONNX}docs/{target})"
        return m.group(0)

    return _CHANGELOG_LINK.sub(repl, text)


def _is_orphan(config, docname: str) -> bool:
    return any(fnmatch.fnmatchcase(docname, pattern) for pattern in config.opkit_orphans)


def rest_entries(config, found_docs, docname: str) -> list[str]:
    """The pages the "More" toctree lists: every page no hand-written toctree lists and no orphan
    pattern covers (sorted, so the navigation does not depend on discovery order)."""
    listed = set(config.opkit_listed) | {config.root_doc, docname}
    return sorted(d for d in found_docs if d not in listed and not _is_orphan(config, d))


def _page_metadata(app, doctree) -> None:
    """Runs after Sphinx's metadata collector (generated pages carry no front matter: their first
    line is the @generated comment): operator pages are orphans by design, and the changelogs'
    thousands of headings are cut from the navigation with a tocdepth (Sphinx copies a listed
    page's whole TOC into every page before pruning it, so a 2,000-heading changelog would cost
    about a second per page)."""
    env = app.env
    meta = env.metadata[env.docname]
    if _is_orphan(app.config, env.docname):
        meta["orphan"] = True
    for pattern, depth in app.config.opkit_tocdepth.items():
        if fnmatch.fnmatchcase(env.docname, pattern):
            meta["tocdepth"] = depth


def _source_read(app, docname, source) -> None:
    prefix = app.config.opkit_mount_prefix + "/"
    if docname in (prefix + "Changelog", prefix + "Changelog-ml"):
        source[0] = _onnx_links(source[0])
        return
    marker = "% opkit:cli-reference"
    if docname == "commands" and marker in source[0]:
        from opkit.cli import build_parser
        from opkit.emit.cli_reference import render_cli_reference

        source[0] = source[0].replace(marker, render_cli_reference(build_parser()))


def setup(app):
    from docutils.statemachine import StringList
    from sphinx.directives.other import TocTree

    for name, default in CONFIG.items():
        app.add_config_value(name, default, "env")

    class RestToctree(TocTree):
        """A toctree of the pages that neither a hand-written toctree nor the orphan list covers."""

        has_content = False

        def run(self):
            env = self.state.document.settings.env
            entries = rest_entries(env.config, env.found_docs, env.docname)
            if not entries:
                return []
            self.content = StringList([f"/{d}" for d in entries])
            return super().run()

    app.add_directive("opkit-rest-toctree", RestToctree)
    app.setup_extension("opkit_bundles")  # {opkit-bundle}: repro bundles as zips (docs/_ext/opkit_bundles.py)
    app.connect("doctree-read", _page_metadata, priority=900)
    app.connect("builder-inited", _mount)
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
