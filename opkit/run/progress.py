"""The progress of an ``opkit test`` run on the terminal.

On a terminal, one line redrawn in place by rich (fitted to the terminal's width, cleared at the
end): how many ops of the run are done, the outcome counts so far, what is running, the time spent
and an estimate of the time left. Anywhere else (a CI log, a file), a plain line every ``every``
seconds: nothing is rewritten, so nothing floods a log with carriage returns.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from ..results.outcomes import LETTERS
from ..results.record import CaseRecord
from ..results.report_text import _short_type


class Progress:
    """Counts every record of the run and shows how far along it is. ``total``: the ops the run
    will test (per backend), ``running``: how many run at a time (``-j``), for the count of ops done:
    an op is done once a later one has started in its place."""

    def __init__(self, stream=None, every: float = 10.0, enabled: bool = True, total: int = 0, running: int = 1):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = every
        self.enabled = enabled
        self.total = total
        self.running = max(1, running)
        self.start = self.last = time.perf_counter()
        self.counts: Counter = Counter()
        self.examples = 0
        self.detail = None  # a callable whose text ends the line (a Dask run: cases per worker)
        self._ops: dict[tuple, None] = {}  # the ops met so far, in order
        self._bar = None
        self._task = None

    # -- what the line says
    def ops_done(self) -> int:
        return min(self.total, max(0, len(self._ops) - self.running)) if self.total else 0

    def counts_text(self) -> str:
        return " ".join(f"{n}{LETTERS[o]}" for o, n in sorted(self.counts.items()))

    def line(self, case: CaseRecord) -> str:
        """The plain line (also the text after the bar on a terminal)."""
        detail = f"  [{self.detail()}]" if self.detail else ""
        ops = f"op {self.ops_done()}/{self.total} done, " if self.total else ""
        return (f"{ops}{sum(self.counts.values())} cases: {self.counts_text()}{detail}  "
                f"now {case.backend} {case.op}-{case.version} {_short_type(case.types)}")

    # -- updates
    def __call__(self, case: CaseRecord) -> None:
        self.counts[case.outcome] += 1
        self.examples += case.examples_run
        self._ops.setdefault((case.backend, case.domain, case.op), None)
        if not self.enabled:
            return
        if self.tty:
            self._draw(case)
            return
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.stream.write(f"[{now - self.start:6.0f}s] {self.line(case)}\n")
            self.stream.flush()
            self.last = now

    def _draw(self, case: CaseRecord) -> None:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, \
                TimeElapsedColumn, TimeRemainingColumn

            console = Console(file=self.stream, highlight=False, markup=False, emoji=False)
            # the text column last: rich gives it what the terminal's width leaves and cuts it there
            self._bar = Bar(BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(),
                            TimeRemainingColumn(), TextColumn("{task.description}", markup=False),
                            console=console, transient=True, refresh_per_second=4)
            self._bar.start()
            self._task = self._bar.add_task("", total=self.total or None)
        description = self.line(case).split("op ", 1)[-1].split(" done, ", 1)[-1] if self.total else self.line(case)
        self._bar.update(self._task, completed=self.ops_done(), description=description)

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()  # transient: the line is gone, the summary follows
            self._bar = None
