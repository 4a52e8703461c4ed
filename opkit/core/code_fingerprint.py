"""A short fingerprint of the code that decides verdicts, recorded in every conformance report
(``target.code``) and compared by the pages that show a report, so a page can say when its results
came from other code than the one rendering it.

What counts: the Python files of the opkit package except the parts that only render pages or
parse command lines (``emit/``, ``commands/``, ``templates/``, ``cli.py``) and the audit
(``results/audit.py``: it judges a report's causes when a page shows them, after the run), and
the built-in specs as the spec catalog loads them (``<domain>/<Op>.yaml`` or ``.yml``; hidden and ``_`` folders and
hidden files skipped, as ``opkit.spec.catalog`` does). Paths are hashed relative to the package
(``opkit/...``) and to the spec folder (``specs/...``), and file bytes exactly as they are, so an
editable install, a clean clone and a wheel (which carries the specs under ``opkit/_builtin/``)
give the same value. ``_builtin/`` itself is skipped in the package walk: in a wheel it holds the
specs (hashed as ``specs/``) and generated files a checkout keeps outside the package.
"""

from __future__ import annotations

import functools
import hashlib
import os

LENGTH = 12  # hex digits shown: enough to tell code versions apart on a page
# top-level parts of the package that render pages or parse arguments: they cannot change a verdict
RENDERING = frozenset({"emit", "commands", "templates", "cli.py"})
# files below the top level that only judge or render what a run recorded
RENDERING_FILES = frozenset({"results/audit.py"})
# the adapters of runtimes that are never a default second opinion: each decides the verdicts of a
# run only when the run uses its runtime, so a report's code covers only the adapters it used
# (``code_scope``) and fixing the tract adapter leaves OpenVINO's report current
ADAPTERS = frozenset({"opkit/backends/openvino_backend.py", "opkit/backends/tract_backend.py",
                      "opkit/backends/torch_backend.py", "opkit/backends/iree_backend.py",
                      "opkit/backends/jax_backend.py"})
_SKIP_DIRS = frozenset({"__pycache__", "_builtin"})
SPEC_SUFFIXES = (".yaml", ".yml")  # what opkit.spec.catalog loads


def _package_files(package_dir: str) -> list[tuple[str, str]]:
    """(relative path "opkit/...", full path) of the verdict-deciding Python files."""
    out = []
    for folder, dirs, files in os.walk(package_dir):
        rel_folder = os.path.relpath(folder, package_dir)
        top = rel_folder == "."
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")
                   and not (top and d in RENDERING)]
        for name in files:
            if not name.endswith(".py") or (top and name in RENDERING):
                continue
            rel = name if top else os.path.join(rel_folder, name)
            if rel.replace(os.sep, "/") in RENDERING_FILES:
                continue
            out.append(("opkit/" + rel.replace(os.sep, "/"), os.path.join(folder, name)))
    return out


def _spec_files(specs_dir: str) -> list[tuple[str, str]]:
    """(relative path "specs/<domain>/<file>", full path) of the specs the catalog loads."""
    if not os.path.isdir(specs_dir):
        return []
    out = []
    for domain in os.listdir(specs_dir):
        folder = os.path.join(specs_dir, domain)
        if domain.startswith((".", "_")) or not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            if name.endswith(SPEC_SUFFIXES) and not name.startswith("."):
                out.append((f"specs/{domain}/{name}", os.path.join(folder, name)))
    return out


def adapter_scope(targets) -> tuple[str, ...]:
    """The ``ADAPTERS`` among backends' ``module:Class`` targets (those a run uses), sorted."""
    found = {str(t).split(":")[0].replace(".", "/") + ".py" for t in targets}
    return tuple(sorted(found & ADAPTERS))


def fingerprint(package_dir: str, specs_dir: str, scope: tuple[str, ...] | None = None) -> str:
    """The fingerprint of the package at ``package_dir`` with the specs in ``specs_dir``: the first
    ``LENGTH`` hex digits of a sha256 over each file's relative path and bytes, in path order.
    ``scope``: the ``ADAPTERS`` a run used (the others are left out); None: every file, as reports
    made before scopes were recorded were fingerprinted."""
    files = _package_files(package_dir)
    if scope is not None:
        files = [(rel, path) for rel, path in files if rel not in ADAPTERS or rel in scope]
    digest = hashlib.sha256()
    for rel, path in sorted(files + _spec_files(specs_dir)):
        with open(path, "rb") as f:
            data = f.read()
        # lengths framed in: no two different file sets can hash the same byte stream
        digest.update(f"{rel}\0{len(data)}\0".encode("utf-8"))
        digest.update(data)
    return digest.hexdigest()[:LENGTH]


@functools.lru_cache(maxsize=16)
def code_fingerprint(scope: tuple[str, ...] | None = None) -> str:
    """The fingerprint of the running opkit and its built-in specs, with the adapters in ``scope``
    (see ``fingerprint``; computed once per process and scope: hashing some 600 files costs tens of
    milliseconds, and the code a process runs does not change)."""
    from .project import PACKAGE_DIR, builtin_root  # where the catalog finds the built-in specs

    return fingerprint(PACKAGE_DIR, os.path.join(builtin_root(), "specs"), scope)


def report_scope(report: dict) -> tuple[str, ...] | None:
    """The adapter scope a report's code covers (``target.code_scope``), or None for a report made
    before scopes were recorded (its code covers every file)."""
    target = report.get("target") if isinstance(report.get("target"), dict) else {}
    scope = target.get("code_scope")
    if not isinstance(scope, list) or not all(isinstance(s, str) for s in scope):
        return None
    return tuple(sorted(scope))
