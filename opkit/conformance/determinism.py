"""Keep a hypothesis run a function of its strategy and seed alone.

``opkit test --seed S`` promises the same cases and outcomes on every run. Hypothesis (6.131 and
later) breaks that on its own: about one draw in twenty takes a constant from a pool that mixes
its fixed global constants with constants it reads from the source of every *local* module loaded
at the time (anything outside the standard library and site-packages: opkit itself in an editable
install, the generated kernels, a project's own kernels). That pool depends on what the process
did before (the kernels the reference loaded so far, the ops a ``-j`` pool process happened to run
first) and on the text of those files, so the same seed drew other cases in another process, on
another checkout, or after an unrelated edit. ``local_constants_off`` gives a hypothesis run an
empty local pool and its own cache of the allowed constants (the global pool stays: it is fixed
by the hypothesis release, which the report's environment records).
"""

from __future__ import annotations

import contextlib
import threading

_LOCK = threading.Lock()
_OWN_CACHE = None  # the constants cache our runs use: a function of the global pool only
# runs inside the block now (Dask worker threads run several ops at once) and what the first one
# replaced: the last one out restores it, so no run ends the block under another's feet
_ACTIVE = 0
_SAVED: tuple | None = None


def _providers():
    """Hypothesis's provider module when it has the local-constants pool, else None (a release
    before it, or one that reorganised it: nothing to switch off then, or nothing we know how to)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        return None
    if not (hasattr(providers, "_get_local_constants") and hasattr(providers, "CONSTANTS_CACHE")):
        return None
    return providers, Constants


@contextlib.contextmanager
def local_constants_off():
    """Within the block, hypothesis draws no constants from local modules' source. The previous
    state is restored when the last block open in the process ends (other hypothesis users in the
    process keep their behaviour outside opkit's runs)."""
    global _OWN_CACHE, _ACTIVE, _SAVED
    found = _providers()
    if found is None:
        yield
        return
    providers, constants = found
    with _LOCK:
        if _ACTIVE == 0:
            empty = constants()
            if _OWN_CACHE is None:
                _OWN_CACHE = type(providers.CONSTANTS_CACHE)(1024)
            _SAVED = providers._get_local_constants, providers.CONSTANTS_CACHE
            providers._get_local_constants = lambda: empty
            providers.CONSTANTS_CACHE = _OWN_CACHE
        _ACTIVE += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0:
                providers._get_local_constants, providers.CONSTANTS_CACHE = _SAVED
                _SAVED = None
