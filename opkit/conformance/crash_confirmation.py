"""A crash is charged to the case that causes it.

A long-lived worker runs many cases; when it dies, the case it was running is not always the one to
blame: an earlier case may have corrupted the engine's memory, exhausted a resource or left a cached
kernel in a broken state. So a crash met in a worker that had run other cases is run again alone in
a fresh process before it counts. If it crashes again, it is the case's crash (``reproduced``). If
it does not, the case's outcome is what the fresh process answered, and the earlier sequence is
replayed in another fresh process: a crash there is a finding of its own, the sequence that causes
it attached (``after_history``); no crash there either, and nothing is charged to anyone.

A crash in a worker that had run nothing before is already a fresh-process crash.
"""

from __future__ import annotations

from dataclasses import replace

from .worker_engine import CRASH, TIMEOUT, Result

# requests remembered per worker process: the sequence replayed when a crash does not reproduce
# alone (the last few cases are where a corrupted state most likely came from)
HISTORY = 16


def fresh_crash(crash: Result) -> Result:
    """A crash of a worker that had run nothing before this request: reproduced as it stands."""
    return replace(crash, replay={"reproduced": "in a fresh process", "history": 0})


def confirm(worker, request, history: list, crash: Result, timeout) -> Result:
    """The outcome to charge for ``request``, which crashed (``crash``) in a worker that had run
    ``history`` (oldest first) since it started. ``worker`` is the crashed ``Worker``: its next run
    starts a fresh process."""
    if not history:
        return fresh_crash(crash)
    alone = worker.run(*request, timeout=timeout, retry=False, confirm=False)
    if alone.kind == CRASH:
        return replace(alone, replay={"reproduced": "in a fresh process", "history": len(history)})
    sequence = [describe_request(r) for r in history]
    again = replay_sequence(worker, request, history, timeout)
    worker.restart()  # what the replay left in the process is not the next case's concern
    if again is not None and again.kind == CRASH:
        info = {"after_history": True, "crashed": crash.message, "crash_output": crash.output,
                "reproduced": f"after the same {len(history)} earlier model(s) in a fresh process",
                "sequence": sequence, "case": describe_request(request)}
        worker.history_crashes.append(info)  # its own finding: the runner records it (drain_history_crashes)
    else:
        info = {"after_history": False, "crashed": crash.message,
                "reproduced": "no: neither alone nor after the same earlier models in a fresh process",
                "sequence": sequence}
    return replace(alone, replay=info)


def replay_sequence(worker, request, history: list, timeout) -> Result | None:
    """Run ``history`` then ``request`` in a fresh process; the request's result, or None when an
    earlier request of the sequence itself crashed or hung (the sequence is then not a replay)."""
    worker.restart()
    for earlier in history:
        result = worker.run(*earlier, timeout=timeout, retry=False, confirm=False)
        if result.kind in (CRASH, TIMEOUT):
            return None
    return worker.run(*request, timeout=timeout, retry=False, confirm=False)


def describe_request(request) -> str:
    """One earlier request in words: the op, its attributes and its inputs' types and shapes (a
    model key alone names nothing a reader can rebuild)."""
    key, model_bytes, feeds = request
    try:
        import onnx
        from onnx import helper

        data = model_bytes() if callable(model_bytes) else model_bytes
        if data is None:
            return f"model {key}"
        graph = onnx.load_from_string(data).graph
        nodes = ", ".join(f"{n.op_type}({', '.join(f'{a.name}={helper.get_attribute_value(a)!r}' for a in n.attribute)})"
                          for n in graph.node)
        shapes = ", ".join(f"{name}: {getattr(value, 'dtype', type(value).__name__)}{list(getattr(value, 'shape', ()))}"
                           for name, value in (feeds or {}).items())
        return f"{nodes} on {shapes or 'no inputs'}"[:400]
    except Exception:  # noqa: BLE001 - a description is a courtesy: the key still names the model
        return f"model {key}"
