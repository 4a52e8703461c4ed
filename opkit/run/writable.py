"""Whether the run can write its files, checked before the first case: the --report folder (made
if missing) and the repro folder, by really creating a file there."""

from __future__ import annotations

import os

from .options import TestUsageError


def _probe_folder(folder: str) -> str | None:
    """Why files cannot be created in ``folder`` (an existing directory), or None: a file is really
    created and removed, which also catches read-only mounts and full disks (and root, for whom
    the permission bits say nothing)."""
    import secrets

    probe = os.path.join(folder, f".opkit-write-check-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        os.write(fd, b"{}\n")  # a full disk refuses the first block
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)
        try:
            os.unlink(probe)
        except OSError:
            pass
    return None


def _check_report_path(path: str, option: str = "--report", example: str = "report.json") -> None:
    """--report (or --junit-xml) must name a file in a folder this process can write in. A missing
    folder is made now, before the first case (the README's `--report reports/...` runs in a fresh
    clone), so a folder that cannot be made fails here instead of after the run."""
    if os.path.isdir(path):
        raise TestUsageError(f"{option} {path}: is a folder; give a file name (e.g. {os.path.join(path, example)})")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise TestUsageError(f"{option} {path}: cannot make the folder {folder}: {exc.strerror or exc}") from None
    why = _probe_folder(folder)
    if why:
        raise TestUsageError(f"{option} {path}: cannot write in {folder}: {why}")


def _check_repro_dir(folder: str) -> str | None:
    """Why repro bundles cannot be written under ``folder`` (created on the first failure), or
    None: the folder, or its nearest existing parent, must be a writable directory."""
    probe = os.path.abspath(folder)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{probe} is not a folder"
    return _probe_folder(probe)
