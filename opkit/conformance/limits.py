"""Resource limits for conformance runs: drawn inputs can ask a kernel for absurd outputs (Range
from int64 min to max, Expand to 2**40 elements ...). A soft address-space limit turns those into a
MemoryError (an *error* outcome for a backend, a rejected input for the reference kernel) instead of
the kernel's OOM taking the machine down."""

from __future__ import annotations

import contextlib

DEFAULT_MEMORY_LIMIT_GB = 4.0


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
    want = int(gb * (1 << 30))
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft <= want:
        return None
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
