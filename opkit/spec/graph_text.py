"""Graph attribute values written in a spec: ONNX's textual syntax (``onnx.parser.parse_graph``).

An example of If, Loop, Scan or SequenceMap writes its graph attributes as text, e.g.
``then_branch: "then_body () => (float[2] y) { y = Constant <value = float[2] {1, 2}> () }"``;
the loader checks that the text parses, the kernel evaluates it and the op page shows it as code.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=512)
def graph_text_problem(text: str) -> str | None:
    """Why ``text`` is not a graph in ONNX's textual syntax, or None."""
    import onnx.parser  # only specs with graph attributes need onnx here

    try:
        graph = onnx.parser.parse_graph(text)
    except Exception as exc:  # noqa: BLE001 - the parser raises its own error types
        return "the graph does not parse: " + " ".join(str(exc).split())[:300]
    if not graph.output:
        return "the graph declares no outputs"
    return None
