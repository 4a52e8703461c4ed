"""Reading the JSON files a project commits and ``opkit gen`` reads (conformance reports, the
onnx-node suite results).

``read_json`` turns every way such a file can be broken (truncated by an interrupted run, a merge
conflict, not UTF-8, unreadable) into one ``JSONFileError`` line, ``PATH:LINE:COL: not valid JSON
(why): run `COMMAND` again or delete it``, that commands print as is (no traceback).

``portable`` rewrites machine-specific absolute paths inside strings read from such a file, so
that pages rendered from a report do not carry the folder it was made in: the text only depends on
the file, never on the machine that renders it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any


class JSONFileError(Exception):
    """A committed JSON input that cannot be used: the message is one line naming the file."""


def display_path(path: str) -> str:
    """``path`` as a user wants to see it: relative to the current folder when inside it."""
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full)
    except ValueError:  # another drive (Windows)
        return full
    return full if rel == ".." or rel.startswith(".." + os.sep) else rel


def _advice(shown: str, rebuild: str | None) -> str:
    command = (rebuild or "opkit test ... --report {path}").format(path=shown)
    return f"run `{command}` again or delete it"


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of byte ``offset``."""
    before = raw[:offset]
    line = before.count(b"\n") + 1
    return line, offset - (before.rfind(b"\n") + 1) + 1


def read_json(path: str, *, rebuild: str | None = None) -> Any:
    """The decoded contents of the JSON file ``path``.

    ``rebuild`` is the command that writes the file again (``{path}`` is replaced by the path), for
    the advice in the error; the default names ``opkit test ... --report PATH``."""
    shown = display_path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise JSONFileError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(raw, exc.start)
        raise JSONFileError(f"{shown}:{line}:{col}: not valid JSON (not UTF-8 text): "
                            f"{_advice(shown, rebuild)}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONFileError(f"{shown}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}): "
                            f"{_advice(shown, rebuild)}") from None
    except RecursionError:
        raise JSONFileError(f"{shown}:1:1: not valid JSON (nested too deeply): {_advice(shown, rebuild)}") from None


def invalid(path: str, why: str, *, rebuild: str | None = None) -> JSONFileError:
    """The error for a file that is JSON but not the document expected (``why``: what is wrong)."""
    shown = display_path(path)
    return JSONFileError(f"{shown}: {why}: {_advice(shown, rebuild)}")


# ------------------------------------------------------------------------------------------------
# machine-specific paths

# top-level folders of an opkit project (or a checkout of opkit, or an installed package): an
# absolute path through one of them is shown from there, relative
_ANCHORS = ("specs", "generated", "conformance", "docs", "tests", "opkit", ".opkit", "reports", "repro",
            "site-packages", "dist-packages")
_SEGMENT = r"[^/\\\s'\"`,;:()\[\]{}<>|=]+"
_START = r"(?<![\w.~$%+/:-])"  # not inside a word, a relative path or a URL (scheme://host/...)
_ANCHORED = re.compile(_START + rf"(?:/{_SEGMENT})+?/(?=(?:{'|'.join(map(re.escape, _ANCHORS))})/)")
_TEMP = re.compile(_START + r"(?:/private)?(?:/tmp|/var/folders|/var/tmp)/[^\s'\")\]]+")
_HOME = re.compile(_START + rf"(?:/home/{_SEGMENT}|/Users/{_SEGMENT}|/root)(?=/|\b)")


def portable_text(text: str) -> str:
    """``text`` without machine-specific absolute paths: ``/any/where/conformance/x.yaml`` ->
    ``conformance/x.yaml`` (any project folder, site-packages), temporary files -> ``/tmp/...``,
    home folders -> ``~``. Depends on ``text`` alone, so pages stay the same on every machine."""
    if "/" not in text:
        return text
    text = _ANCHORED.sub("", text)
    text = _TEMP.sub("/tmp/...", text)
    return _HOME.sub("~", text)


def portable(value: Any) -> Any:
    """``value`` (decoded JSON) with ``portable_text`` applied to every string in it."""
    if isinstance(value, str):
        return portable_text(value)
    if isinstance(value, list):
        return [portable(v) for v in value]
    if isinstance(value, dict):
        return {portable_text(k) if isinstance(k, str) else k: portable(v) for k, v in value.items()}
    return value


def read_report(path: str, *, rebuild: str | None = None) -> Any:
    """A committed report, as ``read_json`` reads it, with ``portable`` paths."""
    return portable(read_json(path, rebuild=rebuild))
