"""How a backend worker process starts: forked from a fork server that has imported the runtime,
or spawned as a fresh interpreter.

A crash or a hang costs a new worker, and a sweep meets hundreds of them (267 crashes in the
onnxruntime sweep, over a thousand on OpenVINO and tract, each often met again while hypothesis
shrinks it). A spawned worker imports numpy, onnx and the runtime again: about 0.2 s of CPU for
onnxruntime, more for the larger runtimes. A worker forked from a server that imported them once
starts in about 20 ms. The forked worker is as fresh as a spawned one for what a case can change:
the server imports modules and runs nothing, so no model, session or runtime state exists before
the worker's first case.

Forking is only safe for a runtime that starts no thread and opens no device when imported: the
backend's spec says which modules its server may import (``BackendSpec.preload``, empty for any
runtime not known to be safe). ``OPKIT_WORKER_START=spawn`` (or ``forkserver``) overrides the choice.

A forked worker is the fork server's child, not this process's: the server reaps it and reports its
exit status (``process_kill._exited`` reads it from there), and its parent-death signal follows the
server, which exits when this process dies.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys

ENV = "OPKIT_WORKER_START"  # spawn | forkserver: override the choice (debugging, benchmarks, tests)
# imported by every fork server: what each worker runs
_WORKER_MODULES = ("opkit.conformance.worker_process",)
_preloaded: set[str] = set()  # what this process's fork server was asked to import


def start_method(spec) -> str:
    """``forkserver`` for a backend whose runtime may be imported before forking, on a platform
    that has it; ``spawn`` otherwise (or what ``OPKIT_WORKER_START`` says)."""
    chosen = os.environ.get(ENV, "").strip().lower()
    if chosen in ("spawn", "forkserver"):
        return chosen if chosen == "spawn" or _has_forkserver() else "spawn"
    return "forkserver" if getattr(spec, "preload", ()) and _has_forkserver() else "spawn"


def _has_forkserver() -> bool:
    return sys.platform.startswith("linux") and "forkserver" in mp.get_all_start_methods()


def context_for(spec):
    """The multiprocessing context a worker for ``spec`` starts in. The fork server is one per
    process and imports what it is asked before it first starts; a backend met after it started
    imports its runtime in each worker (still correct, only slower)."""
    method = start_method(spec)
    ctx = mp.get_context(method)
    if method == "forkserver":
        wanted = set(_WORKER_MODULES) | set(getattr(spec, "preload", ()))
        if not wanted <= _preloaded:
            _preloaded.update(wanted)
            ctx.set_forkserver_preload(sorted(_preloaded))
    return ctx

