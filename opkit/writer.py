"""The one place that writes generated and imported files.

Writes only files whose content changed (so timestamps and incremental builds stay quiet) and
implements ``--check``: report what would change without touching the tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class WriteResult:
    written: tuple[str, ...]  # created or changed (or, with check=True, that would be)
    unchanged: int
    stale: tuple[str, ...] = ()  # files under a managed folder that no emitter produces any more


def write_files(files: Mapping[str, str], *, check: bool = False, managed_dirs: tuple[str, ...] = ()) -> WriteResult:
    """Write ``{path: text}``. With ``managed_dirs``, files there that are not in ``files`` are
    stale: removed (or, with ``check``, reported)."""
    written, unchanged = [], 0
    for path in sorted(files):
        text = files[path]
        try:
            with open(path, encoding="utf-8", newline="") as f:
                if f.read() == text:
                    unchanged += 1
                    continue
        except (FileNotFoundError, UnicodeDecodeError):
            pass
        written.append(path)
        if not check:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            tmp = f"{path}.tmp-{os.getpid()}"
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            os.replace(tmp, path)  # never leave a half-written file behind
    wanted = {os.path.normpath(p) for p in files}
    stale = []
    for folder in managed_dirs:
        for root, dirs, names in os.walk(folder):
            # tool caches (__pycache__, .hypothesis, .pytest_cache) live beside generated tests
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
            for name in names:
                path = os.path.normpath(os.path.join(root, name))
                if path not in wanted:
                    stale.append(path)
    if not check:
        for path in stale:
            os.remove(path)
    return WriteResult(tuple(written), unchanged, tuple(sorted(stale)))
