"""The one place that writes generated and imported files.

Writes only files whose content changed (so timestamps and incremental builds stay quiet) and
implements ``--check``: report what would change without touching the tree.

Every file is written to a temporary file beside it and moved into place with ``os.replace``, so a
reader never sees half a file. What can go wrong is one line (``WriteError``), never a traceback:

- a path that resolves outside the folders the caller allows (``roots``) is refused before
  anything is written (``..`` in a name, a symlinked folder pointing elsewhere);
- a file that cannot be written (read-only folder, full disk, ...) names the file and the reason,
  and its temporary file is removed: no ``*.tmp-*`` is ever left behind;
- ``locked`` serializes writers of one tree (two ``opkit gen`` at once): a second one waits, or
  gives up with a clear message after a timeout.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from .jsonfiles import display_path


class WriteError(Exception):
    """A file could not be written (or may not be): the message is one line naming it."""


class LockTimeout(WriteError):
    """Another writer held the lock for longer than the caller would wait."""


@dataclass(frozen=True)
class WriteResult:
    written: tuple[str, ...]  # created or changed (or, with check=True, that would be)
    unchanged: int
    stale: tuple[str, ...] = ()  # files under a managed folder that no emitter produces any more


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _resolved(path: str) -> str:
    """Where writing ``path`` lands: its folder with symlinks resolved, plus its own name (a symlink
    as the last component is replaced, not followed, by ``os.replace``)."""
    path = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_paths(paths: Iterable[str], roots: Iterable[str], *, folders: Iterable[str] = ()) -> None:
    """Raise ``WriteError`` for the first of ``paths`` (files) or ``folders`` that resolves outside
    every one of ``roots``."""
    real_roots = [os.path.realpath(r) for r in roots]
    shown_roots = " or ".join(display_path(r) + os.sep for r in roots)
    for path in paths:
        name = os.path.basename(os.path.abspath(path))
        target = _resolved(path)
        if name in ("", ".", "..") or not any(_inside(target, r) and target != r for r in real_roots):
            raise WriteError(f"{display_path(path)}: refusing to write outside {shown_roots} "
                             f"(resolves to {target})")
    for folder in folders:
        target = os.path.realpath(folder)
        if not any(_inside(target, r) for r in real_roots):
            raise WriteError(f"{display_path(folder)}: refusing to clean a folder outside {shown_roots} "
                             f"(resolves to {target})")


def _write_one(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)  # never leave a half-written file behind
    except BaseException as exc:  # OSError, and Ctrl-C between open and replace
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise WriteError(f"{display_path(path)}: cannot write: {_reason(exc)}") from None
        raise


def write_files(files: Mapping[str, str], *, check: bool = False, managed_dirs: tuple[str, ...] = (),
                roots: tuple[str, ...] | None = None) -> WriteResult:
    """Write ``{path: text}``. With ``managed_dirs``, files there that are not in ``files`` are
    stale: removed (or, with ``check``, reported).

    With ``roots``, every path and managed folder must resolve inside one of them, else
    ``WriteError`` before anything is written. Any ``OSError`` writing or removing a file is a
    ``WriteError`` naming it (the files before it are written, the temporary file is removed)."""
    if roots is not None:
        check_paths(files, roots, folders=managed_dirs)
    written, unchanged = [], 0
    for path in sorted(files):
        text = files[path]
        try:
            with open(path, encoding="utf-8", newline="") as f:
                if f.read() == text:
                    unchanged += 1
                    continue
        except (OSError, UnicodeDecodeError):  # missing, unreadable, a folder: (re)write it
            pass
        written.append(path)
        if not check:
            _write_one(path, text)
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
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise WriteError(f"{display_path(path)}: cannot remove this stale file: {_reason(exc)}") from None
    return WriteResult(tuple(written), unchanged, tuple(sorted(stale)))


# ------------------------------------------------------------------------------------------------
# one writer at a time

LOCK_TIMEOUT_ENV = "OPKIT_GEN_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 600.0  # seconds


def _default_timeout() -> float:
    try:
        return float(os.environ.get(LOCK_TIMEOUT_ENV, DEFAULT_LOCK_TIMEOUT))
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(lock_path: str, *, shared: bool = False, timeout: float | None = None, who: str = "opkit gen",
           on_wait: Callable[[str], None] = _say) -> Iterator[None]:
    """Hold an ``fcntl.flock`` on ``lock_path`` for the block: exclusive for writers, ``shared``
    for readers (``--check``), so a check never sees a half-done ``gen``. Waits for the holder,
    saying so once through ``on_wait``; after ``timeout`` seconds (default: $OPKIT_GEN_LOCK_TIMEOUT
    or 600) raises ``LockTimeout``. The lock goes with the process: a killed ``gen`` leaves none.

    Where there is no ``fcntl`` (Windows) the block runs unlocked. A lock file that cannot be
    created (a read-only tree) is a ``WriteError`` for writers; readers run unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    timeout = _default_timeout() if timeout is None else timeout
    shown = display_path(lock_path)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if shared:
            yield
            return
        raise WriteError(f"{shown}: cannot create the lock file: {_reason(exc)}") from None
    try:
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(f"{who}: waiting for another opkit gen in this project to finish (lock {shown}; "
                    f"giving up after {timeout:g} s) ...")
            deadline = time.monotonic() + timeout
            while True:
                time.sleep(0.05)
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(
                            f"{who}: gave up after {timeout:g} s waiting for another opkit gen in this project "
                            f"(it holds {shown}); let it finish and run again, or set "
                            f"{LOCK_TIMEOUT_ENV}=SECONDS to wait longer") from None
        except OSError as exc:  # a file system without flock (some network mounts): go on unlocked
            on_wait(f"{who}: warning: cannot lock {shown} ({_reason(exc)}); not guarding against a "
                    "concurrent opkit gen")
        yield
    finally:
        os.close(fd)  # releases the lock
