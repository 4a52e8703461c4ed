"""What a backend worker process writes to its stdout and stderr.

A runtime under test writes to the process's own file descriptors: onnxruntime's warnings, and
when it dies, the C++ runtime's last words ("terminate called without an active exception", a
failed assertion). Left on the terminal, those lines interleave with opkit's progress and say
nothing of which case they belong to. So each worker's descriptors 1 and 2 go to a file of its
own, emptied before every request; when the worker crashes, hangs or is killed for memory, the
file's last lines are the runtime's own account of that case, kept with the finding.

The file never has a name where /proc is (Linux: ``shared_file``), so no kill -9 of either process
leaves anything in the temporary folder; elsewhere it is a named file, unlinked once the worker has
said it started. A worker that cannot open it keeps the descriptors it had. The text is foreign data: it is decoded leniently and stripped of control
characters, never interpreted.
"""

from __future__ import annotations

import os
import re

from .shared_file import shared_temp_file

TAIL_BYTES = 8192  # read at most this much of the end of the file
TAIL_CHARS = 600  # keep at most this many characters of it
TAIL_LINES = 6
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")  # ANSI escapes, control characters


def redirect_output(path: str) -> None:
    """In the worker: send descriptors 1 and 2 to ``path`` (appending, so the parent's truncation
    between requests moves the writes back to the start)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:  # /proc of the parent not readable here: the output stays where it was
        return
    try:
        for target in (1, 2):
            os.dup2(fd, target)
    finally:
        os.close(fd)


def tail_text(data: bytes) -> str:
    """The last lines of ``data`` as one line of plain text (``" | "`` between lines)."""
    text = _CONTROL.sub("", data.decode("utf-8", errors="replace").replace("\r", "\n"))
    lines = [line.strip() for line in text.split("\n") if line.strip()][-TAIL_LINES:]
    joined = " | ".join(lines)
    return joined if len(joined) <= TAIL_CHARS else "... " + joined[-(TAIL_CHARS - 4):]


class WorkerOutput:
    """The parent's side of one worker's output file."""

    def __init__(self, name: str):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:40]
        self._file, self.path, self._named = shared_temp_file(f"opkit-{safe}-", ".out")

    def opened(self) -> None:
        """The worker has opened the file: take its name away, where it has one (the descriptors
        stay valid)."""
        self._unlink()

    def clear(self) -> None:
        """Forget what earlier requests wrote: what the file holds next is the next case's."""
        if self._file is not None:
            try:
                os.ftruncate(self._file.fileno(), 0)
            except OSError:
                pass

    def tail(self) -> str:
        """The last lines written since ``clear``, as one line ("" when nothing was written)."""
        if self._file is None:
            return ""
        try:
            fd = self._file.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - TAIL_BYTES)
            data = os.pread(fd, size - start, start)
        except OSError:
            return ""
        return tail_text(data)

    def close(self) -> None:
        self._unlink()
        if self._file is not None:
            self._file.close()
            self._file = None

    def _unlink(self) -> None:
        if self._named:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            self._named = False


__all__ = ["WorkerOutput", "redirect_output", "tail_text"]
