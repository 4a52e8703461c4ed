"""Where the project is: the folder holding specs/ that commands read and generated/ they write."""

from __future__ import annotations

import os

# the checkout this package was installed from (editable installs; the kernels live beside it)
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_project(folder: str) -> bool:
    return os.path.isdir(os.path.join(folder, "specs")) and os.path.exists(os.path.join(folder, "pyproject.toml"))


def project_root() -> str:
    """The current directory or the nearest parent holding specs/ and pyproject.toml; else the
    checkout opkit runs from, when it is one; else the current directory."""
    probe = os.path.abspath(os.getcwd())
    while True:
        if _is_project(probe):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return SOURCE_ROOT if _is_project(SOURCE_ROOT) else os.path.abspath(os.getcwd())
