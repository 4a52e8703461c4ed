"""A temporary file one process of a run keeps while another process opens it by path.

The -j pool's partial results and a backend worker's output both need one: written by a child,
read by the process that made it. Where /proc is (Linux) the file never has a name: the child
opens it through ``/proc/<maker>/fd/N``, so no kill -9 of either process, at any moment, leaves
anything in the temporary folder. Elsewhere it is a named file that its maker removes.
"""

from __future__ import annotations

import os
import tempfile
from typing import BinaryIO


def shared_temp_file(prefix: str, suffix: str = "") -> tuple[BinaryIO, str, bool]:
    """(file, path, named): an unbuffered read/write temporary file, the path another process of
    this user opens it by, and whether that path is a name on disk the caller must unlink."""
    f = tempfile.TemporaryFile(prefix=prefix, suffix=suffix, buffering=0)
    path = f"/proc/{os.getpid()}/fd/{f.fileno()}"
    if os.path.exists(path):
        return f, path, False
    f.close()
    f = tempfile.NamedTemporaryFile(prefix=prefix, suffix=suffix, buffering=0, delete=False)
    return f, f.name, True


__all__ = ["shared_temp_file"]
