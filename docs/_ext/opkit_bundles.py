"""Sphinx extension: repro bundles as zip downloads (opkit_site loads it).

Generated pages (scoreboard, operator pages) link a committed repro bundle with
``{opkit-bundle}`repro <docs/findings/rt/ai.onnx/Trilu-14/int64-differential-mismatch>``` (written by
opkit/emit/bundles.py). The role links ``_bundles/<path>.zip`` of the built site; once the build
is done the extension zips every linked folder there.

Why at build time and not an emitter: a zip is binary, so committing one per bundle would add
files nobody reviews that change whenever zlib does; the folders are committed already, and the
zips are a pure function of them. Why not Sphinx's ``{download}`` role: it copies a file that
exists in the source tree, and the zip does not exist until we make it. The zips are
reproducible: entries sorted, one fixed timestamp, fixed permissions, so two builds give the same
bytes (and an unchanged zip is not rewritten).
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path

from docutils import nodes

ROLE = "opkit-bundle"
OUT_DIR = "_bundles"
BUNDLE_ROOTS = ("docs/findings/",)  # keep in step with opkit/emit/bundles.py
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: no build date leaks in
_ROLE_TEXT = re.compile(r"^(?P<title>[^<]*?)\s*<(?P<path>[^<>]+)>$")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_.+=/-]+$")


def zip_bytes(folder: str | Path) -> bytes:
    """The folder's files as a zip whose entries sit under the folder's name: sorted, with a fixed
    timestamp and permissions, so the bytes depend on the files' names and contents only."""
    folder = Path(folder)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "__pycache__"
                       and "__pycache__" not in p.parts)
        for path in files:
            info = zipfile.ZipInfo(f"{folder.name}/{path.relative_to(folder).as_posix()}", FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever machine builds the site
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes(), compresslevel=9)
    return buffer.getvalue()


def write_zip(folder: str | Path, target: str | Path) -> bool:
    """Write the folder's zip to ``target`` unless it holds these bytes already (True: written)."""
    data = zip_bytes(folder)
    target = Path(target)
    if target.exists() and target.read_bytes() == data:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return True


def zip_url(docname: str, path: str) -> str:
    """The zip's URL relative to the page of ``docname`` (the html builder writes docname.html)."""
    return "../" * docname.count("/") + f"{OUT_DIR}/{path}.zip"


def _repository(srcdir, config) -> Path:
    return (Path(srcdir) / config.opkit_bundle_root).resolve()


def _valid(repository: Path, path: str) -> bool:
    if not _SAFE_PATH.match(path) or ".." in path.split("/") or not path.startswith(BUNDLE_ROOTS):
        return False
    return (repository / path / "repro.py").is_file()


def bundle_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    m = _ROLE_TEXT.match(text.strip())
    title, path = (m.group("title") or "repro", m.group("path").strip().rstrip("/")) if m else ("repro", text.strip())
    if not _valid(_repository(env.srcdir, env.config), path):
        msg = inliner.reporter.warning(f"{ROLE}: not a committed repro bundle under {', '.join(BUNDLE_ROOTS)}: {path!r}",
                                       line=lineno)
        return [nodes.literal(rawtext, path)], [msg]
    bundles = getattr(env, "opkit_bundles", None)
    if bundles is None:
        bundles = env.opkit_bundles = {}
    bundles.setdefault(env.docname, set()).add(path)
    ref = nodes.reference(rawtext, title + " (zip)", refuri=zip_url(env.docname, path),
                          classes=["opkit-bundle"])
    ref["reftitle"] = f"{path.rsplit('/', 1)[-1]}.zip: model.onnx, inputs, expected outputs, case.json, repro.py"
    return [ref], []


def _purge(app, env, docname) -> None:
    getattr(env, "opkit_bundles", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    """Parallel reads: each worker's environment brings the bundles its pages link."""
    mine = getattr(env, "opkit_bundles", None)
    if mine is None:
        mine = env.opkit_bundles = {}
    for docname, paths in getattr(other, "opkit_bundles", {}).items():
        if docname in docnames:
            mine.setdefault(docname, set()).update(paths)


def _write_zips(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    paths = sorted({p for ps in getattr(app.env, "opkit_bundles", {}).values() for p in ps})
    repository = _repository(app.srcdir, app.config)
    for path in paths:
        write_zip(repository / path, Path(app.outdir) / OUT_DIR / f"{path}.zip")


def setup(app):
    # the repository folder bundle paths are relative to (docs/ is the source folder)
    app.add_config_value("opkit_bundle_root", "..", "env")
    app.add_role(ROLE, bundle_role)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _write_zips)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
