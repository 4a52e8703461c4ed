"""Compute helpers of the control-flow ops (If, Loop, Scan, SequenceMap) and the ``Body`` interface.

A graph attribute reaches a kernel as a ``Body``: a callable ``body(*values) -> tuple of values``
taking the graph's formal inputs in order and returning its formal outputs in order. Whoever calls
the kernel decides how the graph is evaluated: the reference backend runs the subgraph with its
outer scope (``opkit.backends.reference``); a spec example or a generated case carries the graph
as ONNX text (or a GraphProto), which ``graph_attribute`` turns into a Body evaluated with opkit's
kernels at the op's opset (``opkit.kernels.graph_body``). The helpers below only call bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..runtime import fail

__all__ = ["Body", "graph_attribute", "if_core", "loop_core", "scan_core", "scan8_core", "sequence_map_core"]


@dataclass(frozen=True, repr=False)
class Body:
    """A graph attribute as a kernel calls it.

    ``run(*inputs)`` returns the graph's outputs (an iterable, one value per formal output);
    ``n_inputs`` / ``n_outputs`` are the graph's formal counts; ``output_types`` the ONNX type
    strings of its outputs where the graph declares them (a Loop that runs zero times still needs
    the element type of its scan outputs); ``text`` the graph in ONNX's textual syntax (repr)."""

    run: Callable[..., object] = field(compare=False)
    n_inputs: int
    n_outputs: int
    output_types: tuple = ()
    output_shapes: tuple = ()  # per output: a tuple of ints / None (unknown dim), or None (unranked)
    text: str = ""

    def __call__(self, *values):
        if len(values) != self.n_inputs:
            raise ValueError(f"the body takes {self.n_inputs} input(s), it was given {len(values)}")
        out = tuple(self.run(*values))
        if len(out) != self.n_outputs:
            raise ValueError(f"the body declares {self.n_outputs} output(s), it returned {len(out)}")
        return out

    def __repr__(self) -> str:
        return self.text or f"Body({self.n_inputs} -> {self.n_outputs})"


def graph_attribute(op: str, since: int, name: str, value):
    """The graph attribute ``name`` as a Body: a Body stays itself; ONNX text or a GraphProto is
    evaluated with opkit's kernels at opset ``since``; anything else breaks ``attribute-type``."""
    if value is None or isinstance(value, Body):
        return value
    if isinstance(value, str) or hasattr(value, "SerializeToString"):
        from ..graph_body import body_from_graph  # onnx is needed only for text and protos

        try:
            return body_from_graph(value, since)
        except Exception as exc:  # noqa: BLE001 - the parser's and checker's own errors
            fail(op, since, f"attribute-type:{name}", f"graph attribute {name!r} does not parse: {exc}")
    fail(op, since, f"attribute-type:{name}", f"graph attribute {name!r} must be a Body, ONNX text or a "
         f"GraphProto, got {type(value).__name__}")


def _flag(value) -> bool:
    return bool(np.asarray(value).reshape(-1)[0])


def if_core(cond, then_branch: Body, else_branch: Body):
    """The outputs of ``then_branch`` when the single element of ``cond`` is true, else of
    ``else_branch`` (the other branch is not run)."""
    return (then_branch if _flag(cond) else else_branch)()


def _elem_dtype(type_str) -> np.dtype:
    from ..runtime import ONNX_TO_NUMPY  # element type name -> NumPy dtype

    inner = type_str[len("tensor("):-1] if isinstance(type_str, str) and type_str.startswith("tensor(") else None
    return np.dtype(ONNX_TO_NUMPY[inner]) if inner in ONNX_TO_NUMPY else np.dtype(np.float32)


def _stack(values: list, type_str, shape, what: str):
    """Per-iteration values stacked on a new leading axis; with no iteration, an empty tensor of
    the body's declared element type and (where declared) per-iteration shape."""
    if values:
        if not isinstance(values[0], (np.ndarray, np.generic)):
            raise ValueError(f"{what}: only tensors can be scan outputs, got {type(values[0]).__name__}")
        values = [np.asarray(v) for v in values]
        first = values[0].shape
        if any(v.shape != first for v in values):
            raise ValueError(f"{what}: the per-iteration values have different shapes "
                             f"({sorted({v.shape for v in values})})")
        return np.stack(values)
    dims = tuple(d if isinstance(d, int) else 0 for d in shape) if shape is not None else ()
    return np.zeros((0,) + dims, dtype=_elem_dtype(type_str))


def loop_core(M, cond, v_initial, body: Body):
    """Loop: run ``body(i, cond, carried...)`` -> ``(cond, carried..., scan_elements...)`` for
    i = 0, 1, ... while i < M (when M is given) and the condition holds (when cond is given: the
    input first, then each body's returned condition; without it the returned one is ignored).
    Returns the final carried values, then each scan output stacked over the iterations."""
    carried = list(v_initial or [])
    n_carried = len(carried)
    n_scan = body.n_outputs - 1 - n_carried
    if n_scan < 0:
        raise ValueError(f"the body returns {body.n_outputs} value(s): fewer than 1 + {n_carried} carried")
    trips = None if M is None else int(np.asarray(M).reshape(-1)[0])
    keep = True if cond is None else _flag(cond)
    scans: list[list] = [[] for _ in range(n_scan)]
    i = 0
    while keep and (trips is None or i < trips):
        out = body(np.array(i, dtype=np.int64), np.array(keep), *carried)
        if cond is not None:
            keep = _flag(out[0])
        carried = list(out[1:1 + n_carried])
        for k, value in enumerate(out[1 + n_carried:]):
            scans[k].append(value)
        i += 1
    types = body.output_types[1 + n_carried:] or (None,) * n_scan
    shapes = body.output_shapes[1 + n_carried:] or (None,) * n_scan
    return tuple(carried) + tuple(_stack(v, t, s, "Loop") for v, t, s in zip(scans, types, shapes))


def _axes(values, count: int, what: str) -> list[int]:
    values = list(values) if values is not None else [0] * count
    if len(values) != count:
        raise ValueError(f"{what} has {len(values)} entries for {count} value(s)")
    return [int(v) for v in values]


def scan_core(states_and_scans, body: Body, num_scan_inputs: int, scan_input_axes=None,
              scan_input_directions=None, scan_output_axes=None, scan_output_directions=None):
    """Scan-9 and later: the last ``num_scan_inputs`` inputs are sliced along their scan axis
    (``scan_input_axes``, negative counted from the end), in reverse where
    ``scan_input_directions`` says 1; the body maps (states..., slices...) to (states...,
    scan_elements...); each scan output stacks its elements along ``scan_output_axes`` (an axis
    of the output, rank + 1), prepended instead of appended where ``scan_output_directions`` is 1."""
    values = list(states_and_scans)
    n_state = len(values) - num_scan_inputs
    states, scans = values[:n_state], values[n_state:]
    in_axes = _axes(scan_input_axes, num_scan_inputs, "scan_input_axes")
    in_dirs = _axes(scan_input_directions, num_scan_inputs, "scan_input_directions")
    scans = [np.moveaxis(x, a if a >= 0 else a + x.ndim, 0) for x, a in zip(scans, in_axes)]
    steps = {x.shape[0] for x in scans}
    if len(steps) > 1:
        raise ValueError(f"the scan inputs have different lengths along their scan axes: {sorted(steps)}")
    n_steps = steps.pop() if steps else 0
    n_out = body.n_outputs - n_state
    out_axes = _axes(scan_output_axes, n_out, "scan_output_axes")
    out_dirs = _axes(scan_output_directions, n_out, "scan_output_directions")
    collected: list[list] = [[] for _ in range(n_out)]
    for t in range(n_steps):
        slices = [x[n_steps - 1 - t] if d else x[t] for x, d in zip(scans, in_dirs)]
        out = body(*states, *slices)
        states = list(out[:n_state])
        for k, value in enumerate(out[n_state:]):
            collected[k].append(value)
    types = body.output_types[n_state:] or (None,) * n_out
    shapes = body.output_shapes[n_state:] or (None,) * n_out
    outs = []
    for k, elems in enumerate(collected):
        stacked = _stack(elems[::-1] if out_dirs[k] else elems, types[k], shapes[k], "Scan")
        axis = out_axes[k] if out_axes[k] >= 0 else out_axes[k] + stacked.ndim
        outs.append(np.moveaxis(stacked, 0, axis))
    return tuple(states) + tuple(outs)


def scan8_core(sequence_lens, states_and_scans, body: Body, num_scan_inputs: int, directions=None):
    """Scan-8: axis 0 of every input is the batch, axis 1 of a scan input the sequence. Each batch
    entry is scanned on its own over its first ``sequence_lens[b]`` steps (all of them without
    ``sequence_lens``); scan outputs are padded with zeros to the longest sequence (the text
    leaves those values undefined)."""
    values = list(states_and_scans)
    n_state = len(values) - num_scan_inputs
    batch = values[0].shape[0] if values else 0
    dirs = _axes(directions, num_scan_inputs, "directions")
    max_len = values[n_state].shape[1] if num_scan_inputs else 0
    results = []
    for b in range(batch):
        length = max_len if sequence_lens is None else int(np.asarray(sequence_lens).reshape(-1)[b])
        if not 0 <= length <= max_len:
            raise ValueError(f"sequence_lens[{b}] = {length} is outside [0, {max_len}]")
        entry = [v[b] for v in values[:n_state]] + [v[b][:length] for v in values[n_state:]]
        out = scan_core(entry, body, num_scan_inputs, None, dirs, None, None)
        padded = list(out[:n_state])
        for so in out[n_state:]:
            pad = [(0, max_len - so.shape[0])] + [(0, 0)] * (so.ndim - 1)
            padded.append(np.pad(so, pad) if so.shape[0] < max_len else so)
        results.append(padded)
    if not results:
        raise ValueError("Scan-8 with a batch of 0 has no per-batch shapes to stack")
    return tuple(np.stack([r[k] for r in results]) for k in range(len(results[0])))


def sequence_map_core(input_sequence, additional_inputs, body: Body):
    """SequenceMap: for i over ``input_sequence``, run the body on its i-th tensor and, per
    additional input, its i-th tensor (a sequence, which must be as long) or the whole tensor;
    the body's k-th outputs make the k-th output sequence."""
    extra = list(additional_inputs or [])
    n = len(input_sequence)
    for j, x in enumerate(extra):
        if isinstance(x, list) and len(x) != n:
            raise ValueError(f"additional input {j} is a sequence of {len(x)} tensors, input_sequence has {n}")
    outs: list[list] = [[] for _ in range(body.n_outputs)]
    for i in range(n):
        args = [input_sequence[i]] + [x[i] if isinstance(x, list) else x for x in extra]
        for k, value in enumerate(body(*args)):
            outs[k].append(value)
    return tuple(outs)
