"""Resource limits for conformance runs: drawn inputs can ask a kernel for absurd outputs (Range
from int64 min to max, Expand to 2**40 elements ...).

Two mechanisms, for two kinds of process:

* **Backend workers** are watched from outside: the parent sums the *resident* memory (RSS) of
  the worker's process group (the worker and everything it started) while it waits for an answer,
  and kills the group when it goes over the limit; the case's message then says
  ``killed: resident memory over N GB``. No address-space limit is set in a worker: engines
  reserve far more virtual memory than they use (onnxruntime's and OpenVINO's thread pools, glibc's
  per-thread malloc arenas, JIT code areas), and an ``RLIMIT_AS`` of a few GB makes them fail or
  hang on a machine with many cores. ``ResidentWatch`` is that watcher; ``lift_memory_limit``
  undoes an address-space limit the worker inherited from the runner.
* **The runner process** (reference kernels, NumPy) may lower its own soft ``RLIMIT_AS``
  (``set_memory_limit`` / ``memory_limit``): there an absurd allocation becomes a MemoryError, i.e.
  a rejected input, instead of the kernel's OOM taking the machine down.
"""

from __future__ import annotations

import contextlib
import os

DEFAULT_MEMORY_LIMIT_GB = 4.0
_GIB = 1 << 30
# the soft RLIMIT_AS a process had before opkit first lowered it (inherited by child processes, so
# that backend workers started under a lowered limit can go back to it); "inf" for none
_ORIGINAL_ENV = "OPKIT_ORIGINAL_RLIMIT_AS"


def limit_bytes(gb: float | None) -> int | None:
    """``gb`` GiB in bytes; None for no limit (None or 0)."""
    return int(gb * _GIB) if gb and gb > 0 else None


def format_gb(gb: float) -> str:
    return f"{gb:g}"


def set_memory_limit(gb: float | None):
    """Lower this process's soft RLIMIT_AS to ``gb`` GiB (None/0: leave it). Returns the previous
    soft limit (to restore) or None."""
    if not gb:
        return None
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = int(gb * _GIB)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft <= want:
        return None
    os.environ.setdefault(_ORIGINAL_ENV, "inf" if soft == resource.RLIM_INFINITY else str(soft))
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    return soft


def restore_memory_limit(previous) -> None:
    if previous is None:
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (previous, hard))


@contextlib.contextmanager
def memory_limit(gb: float | None):
    previous = set_memory_limit(gb)
    try:
        yield
    finally:
        restore_memory_limit(previous)


def lift_memory_limit() -> None:
    """Put the soft RLIMIT_AS back to what it was before opkit lowered it in this process or an
    ancestor (a backend worker inherits the runner's limit; engines must not run under it). A
    limit the user set (``ulimit -v``) is kept: only opkit's own lowering is undone."""
    original = os.environ.get(_ORIGINAL_ENV)
    if original is None:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = resource.RLIM_INFINITY if original == "inf" else int(original)
        if hard != resource.RLIM_INFINITY and (want == resource.RLIM_INFINITY or want > hard):
            want = hard
        if want != soft:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ImportError, ValueError, OSError):  # pragma: no cover
        pass


# ------------------------------------------------------------------------------------------------
# resident memory of a process group (Linux /proc)

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, resident bytes) of ``pid``, or None when it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()  # fields from the 3rd on (comm may hold spaces)
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[2]), int(fields[21]) * _PAGE


def group_members(pgid: int) -> list[int]:
    """The pids of the live processes in process group ``pgid`` (one pass over /proc)."""
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:  # pragma: no cover - no procfs
        return out
    for name in names:
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[0] == pgid:
                out.append(int(name))
    return out


def _pss(pid: int) -> int | None:
    """Proportional resident bytes of ``pid`` (pages shared with other processes, e.g. after a
    fork, counted in part), or None when unknown. Costs a page-table walk (~20 ms per GB)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class ResidentWatch:
    """Sums the resident memory of a process group. The members are found by a pass over /proc
    at most every ``rescan`` seconds (a few ms on a busy machine); in between only the known
    members are read, so polling every tenth of a second while a slow case runs costs little.

    The sum of RSS counts pages that forked processes share once per process; when it is over the
    cap and the group has several processes, the proportional set size (PSS) decides, checked at
    most every ``rescan`` seconds (it costs a page-table walk)."""

    def __init__(self, pgid: int, rescan: float = 1.0, exclude: tuple[int, ...] = ()):
        self.pgid = pgid
        self.rescan = rescan
        self.exclude = set(exclude)  # e.g. a tiny helper process forked from the worker
        self._members: list[int] = [pgid]
        self._scanned = float("-inf")
        self._pss_checked = float("-inf")
        self._pss_last = 0

    def _live(self, now: float) -> list[tuple[int, int]]:
        if now - self._scanned >= self.rescan:
            self._members = group_members(self.pgid) or [self.pgid]
            self._scanned = now
        out = []
        for pid in self._members:
            if pid in self.exclude:
                continue
            st = _stat(pid)
            if st is not None and st[0] == self.pgid:
                out.append((pid, st[1]))
        return out

    def resident(self, now: float) -> tuple[int, int]:
        """(resident bytes, processes counted): the RSS sum."""
        live = self._live(now)
        return sum(rss for _, rss in live), len(live)

    def over(self, cap: int, now: float) -> tuple[bool, int, int]:
        """(over ``cap``?, resident bytes, processes counted)."""
        live = self._live(now)
        total = sum(rss for _, rss in live)
        if total <= cap or len(live) < 2:
            return total > cap, total, len(live)
        if now - self._pss_checked >= self.rescan:
            self._pss_checked = now
            pss = [_pss(pid) for pid, _ in live]
            self._pss_last = sum(p if p is not None else rss for p, (_, rss) in zip(pss, live))
        return self._pss_last > cap, self._pss_last, len(live)
