"""The progress of `opkit test`: one line redrawn in place on a terminal, fitted to its width and
cleared at the end; plain periodic lines anywhere else (a CI log)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

from opkit.results.record import CaseRecord
from opkit.run.progress import Progress

ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _record(op="Relu", outcome="pass"):
    return CaseRecord(backend="reference", suite="differential", op=op, domain="ai.onnx", version=14,
                      types={"T": "tensor(float)"}, example="differential", outcome=outcome, message="",
                      examples_run=3, duration_s=0.0)


def _in_a_terminal(columns: int, argv: list[str]) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), out.decode("utf-8", "replace")


def test_in_an_80_column_terminal_the_progress_stays_on_one_line_and_is_cleared():
    code, out = _in_a_terminal(80, [sys.executable, "-m", "opkit", "test", "--backend", "reference", "--op", "Relu",
                                    "--op", "Trilu", "--max-examples", "3", "--no-repro", "--suite", "differential"])
    assert code == 0, out[-2000:]
    before_summary = out.split("reference  Relu", 1)[0]
    assert before_summary.count("\n") <= 2, before_summary[-500:]  # redrawn in place, not scrolled
    assert before_summary.count("\r") > 3  # ... and it was drawn, more than once
    for frame in ESCAPE.sub("", before_summary).split("\r"):
        assert len(frame) <= 80, frame  # fitted to the terminal's width: no wrapped line left behind


def test_the_line_says_how_far_the_run_is_and_what_runs():
    progress = Progress(stream=io.StringIO(), every=0.0, total=3)
    for op in ("Relu", "Relu", "Trilu", "Add"):
        progress(_record(op))
    line = progress.line(_record("Add"))
    assert "op 2/3 done" in line and "now reference Add-14" in line and "4 cases: 4." in line


def test_outside_a_terminal_progress_is_plain_periodic_lines():
    stream = io.StringIO()
    progress = Progress(stream=stream, every=0.0, total=2)
    progress(_record("Relu"))
    progress(_record("Trilu", "mismatch"))
    progress.done()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()
    assert "1M" in lines[1] and "op 1/2 done" in lines[1]
