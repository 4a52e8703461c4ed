"""Warnings about specs that load but leave users guessing (``opkit validate`` prints them).

Today: an op version with inputs and a kernel but no ``rules:`` whose ONNX text states
constraints ("must be", "should be", "in the range" ...). Without rules the kernel cannot say why
an input is invalid, the generated cases cannot be held to them and the op page cannot tell a
user which inputs are valid.
"""

from __future__ import annotations

import re

from .diagnostics import Diagnostic
from .model import Location, OpSpec

# wording by which ONNX's operator text states a constraint on inputs or attributes
CONSTRAINT_WORDS = re.compile(
    r"\b(must|should be|should have|has to|have to|is required to|are required to|cannot|can not|needs? to be|"
    r"in the range|valid range|only valid|is expected to|are expected to|at least|at most|no larger than|"
    r"no greater than|must not)\b", re.IGNORECASE)

# Phrases of ONNX's text that use one of those words but constrain no input or attribute: they say
# what the op does or advise which value to pick. Each is matched as a whole and taken out before
# CONSTRAINT_WORDS looks, so a real constraint in the same text still fires. Keep every entry a
# full phrase of one op's text, never a single word.
NOT_CONSTRAINTS = re.compile(
    r"nothing needs to be done"  # Dropout-1..10: "(scaling in training,) so during testing nothing needs to be done"
    r"|if (?:positive|negative) infinity should be mapped to false",  # IsInf: when to set detect_* to 0
    re.IGNORECASE)


def missing_rules(specs: list[OpSpec]) -> list[Diagnostic]:
    out = []
    for spec in specs:
        for v in spec.versions:
            if v.rules or not v.inputs or v.kernel is None or v.deprecated:
                continue
            texts = [NOT_CONSTRAINTS.sub(" ", t or "") for t in
                     [v.doc] + [p.doc for p in v.inputs] + [a.doc for a in v.attributes]]
            hit = next((m for m in (CONSTRAINT_WORDS.search(t or "") for t in texts) if m), None)
            if hit is None:
                continue
            sentence = _sentence_around(hit.string, hit.start())
            out.append(Diagnostic(v.location or Location(spec.path or "?", 1, 1),
                                  f"{spec.name}-{v.since} has a kernel but no 'rules:' although its ONNX text states "
                                  f"constraints (\"{sentence}\"); add labelled rules so the kernel, the generated "
                                  f"cases and the op page say which inputs are valid", "warning"))
    return out


def _sentence_around(text: str, at: int, width: int = 90) -> str:
    start = max(text.rfind(".", 0, at) + 1, at - width // 2, 0)
    snippet = " ".join(text[start:start + width].split())
    return snippet.replace('"', "'")
