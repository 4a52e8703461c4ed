"""Links from generated pages to committed repro bundles, as zips of the whole bundle.

A repro bundle is a folder (model.onnx, inputs.npz, expected.npz, case.json, repro.py); a link to
its repro.py alone gives a script that cannot run without the rest. Pages therefore link a zip of
the folder through the ``{opkit-bundle}`` role of the site's Sphinx extension
(docs/_ext/opkit_bundles.py), which writes the zip into the built site. The zips are made at build
time, not committed: binary files in the tree would change with every zlib and be reviewed by
nobody, while the extension makes them byte-for-byte reproducible from the committed folders.

Report paths are foreign text: a bundle is linked only when it is a committed folder under
``BUNDLE_ROOTS`` holding a repro.py, and its path uses only characters that cannot end the role.
"""

from __future__ import annotations

import os
import re

ROLE = "opkit-bundle"
BUNDLE_ROOTS = ("docs/findings/",)  # repository folders where committed bundles live
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_.+=/-]+$")


def bundle_path(root: str, repro: str | None) -> str:
    """The repository-relative folder of a committed bundle, or "" when it is not one."""
    if not repro:
        return ""
    rel = str(repro).replace(os.sep, "/")
    if os.path.isabs(rel):
        try:
            rel = os.path.relpath(rel, root).replace(os.sep, "/")
        except ValueError:
            return ""
    rel = rel.rstrip("/")
    if rel.endswith("/repro.py"):
        rel = rel[: -len("/repro.py")]
    if (not _SAFE_PATH.match(rel) or ".." in rel.split("/") or "//" in rel
            or not rel.startswith(BUNDLE_ROOTS)):
        return ""
    return rel if os.path.isfile(os.path.join(root, rel, "repro.py")) else ""


def bundle_link(root: str, repro: str | None, title: str = "repro") -> str:
    """Role markup that links the zip of a committed bundle, or "" when there is none."""
    rel = bundle_path(root, repro)
    return f"{{{ROLE}}}`{title} <{rel}>`" if rel else ""
