"""Ctrl-C and SIGTERM during ``opkit test`` (``_Interrupts``): the first signal stops the run and
still gets its report written; later ones never cut the report short; a watchdog ends a run that
does not stop in time."""

from __future__ import annotations

import os
import threading
import time

INTERRUPT_GRACE_S = 5.0  # after the first Ctrl-C/SIGTERM the watchdog ends a run still going after this
SECOND_SIGNAL_GRACE_S = 1.0  # ... and this long after a further signal
AFTER_RUN_QUIET_S = 5.0  # signals this soon after an interrupted run ended are dropped (double Ctrl-C)


def _grace() -> float:
    try:
        return max(0.1, float(os.environ.get("OPKIT_INTERRUPT_GRACE", INTERRUPT_GRACE_S)))
    except ValueError:
        return INTERRUPT_GRACE_S


def _say(text: str) -> None:
    """Write a line to stderr from a signal handler or the watchdog thread (os.write: never a
    reentrant call into a sys.stderr the main thread is writing to)."""
    try:
        os.write(2, (text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


_QUIET_EXIT = []


def _quiet_exit_after_interrupt() -> None:
    """When the process exits after an interrupted run, ignore SIGINT: Python's finalization puts
    the default handler back, and the second Ctrl-C of a double Ctrl-C arriving then would kill
    the process (exit -SIGINT) instead of letting it exit 130 with its report written."""
    if _QUIET_EXIT:
        return
    import atexit
    import signal

    def ignore():
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except (ValueError, OSError):  # pragma: no cover
            pass

    atexit.register(ignore)
    _QUIET_EXIT.append(ignore)


def _swallowed_here(frame) -> bool:
    """Whether an exception raised in ``frame`` would be swallowed: Python ignores (only prints)
    exceptions from gc callbacks (hypothesis installs one that times collections; a Ctrl-C landing
    in it was lost) and from ``__del__``. There the stop flag alone ends the run, at the runner's
    next check."""
    import gc

    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    depth = 0
    while frame is not None and depth < 64:
        if frame.f_code in codes or frame.f_code.co_name == "__del__":
            return True
        frame, depth = frame.f_back, depth + 1
    return False


class _Interrupts:
    """SIGINT and SIGTERM for one run (main thread only; elsewhere nothing is installed).

    The first signal asks the runners to stop (``stopping.request_stop``: they re-check between
    examples, backend calls and records) and raises KeyboardInterrupt, unless the run is already
    writing its report. Later signals never raise (they would cut the report short); they only
    shorten the watchdog. The watchdog, started by the first signal, ends the process if the run
    is still going ``grace`` seconds later (``SECOND_SIGNAL_GRACE_S`` after another signal): it
    writes the partial report unless the run already wrote one, kills the process's descendants
    and exits with 130. When the run returns the watchdog is disarmed (in-process callers go on),
    and after an interrupted run signals are dropped for ``AFTER_RUN_QUIET_S`` seconds.
    """

    def __init__(self, run, grace: float | None = None):
        self.run = run
        self.grace = _grace() if grace is None else grace
        self.count = 0
        self.signame: str | None = None
        self.deadline = 0.0
        self.cancelled = threading.Event()
        self.previous: dict = {}
        self.ended = 0.0

    def __enter__(self):
        import signal

        from ..conformance.stopping import clear_stop

        clear_stop()
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    self.previous[signum] = signal.signal(signum, self._on_signal)
                except (ValueError, OSError):  # pragma: no cover
                    pass
        return self

    def __exit__(self, *exc):
        import signal

        from ..conformance.stopping import clear_stop

        self.cancelled.set()  # the run is over (in-process callers go on: no os._exit from here)
        self.ended = time.monotonic()
        for signum, handler in self.previous.items():
            # after an interrupt, a further Ctrl-C right after the run (the second of a double
            # Ctrl-C) must not turn a clean exit 130 into a KeyboardInterrupt traceback
            signal.signal(signum, self._after if self.count else handler)
        if self.count and self.previous:
            _quiet_exit_after_interrupt()
        clear_stop()
        return False

    def _after(self, signum, frame):
        """Signals within AFTER_RUN_QUIET_S of the end of an interrupted run are dropped; later
        ones go to the handler the run replaced (reinstalled)."""
        import signal

        if time.monotonic() - self.ended < AFTER_RUN_QUIET_S:
            return
        previous = self.previous.get(signum, signal.SIG_DFL)
        signal.signal(signum, previous)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            os.kill(os.getpid(), signum)

    def _on_signal(self, signum, frame):
        import signal

        from ..conformance.stopping import request_stop

        self.count += 1
        now = time.monotonic()
        if self.count == 1:
            self.signame = signal.Signals(signum).name
            request_stop()
            self.deadline = now + self.grace
            threading.Thread(target=self._watch, name="opkit-interrupt-watchdog", daemon=True).start()
            if not self.run.finishing and not _swallowed_here(frame):
                raise KeyboardInterrupt
            return
        self.deadline = min(self.deadline, now + SECOND_SIGNAL_GRACE_S)
        if self.count == 2:
            _say(f"opkit test: {signal.Signals(signum).name} again: the run ends with its report within "
                 f"{SECOND_SIGNAL_GRACE_S:g} s")

    def _watch(self):
        while not self.cancelled.wait(0.05):
            if time.monotonic() >= self.deadline:
                self.run.emergency_exit(self.signame or "a signal", self.grace)
                return
