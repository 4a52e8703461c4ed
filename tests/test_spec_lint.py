"""opkit validate warns on op versions whose ONNX text states constraints but which have no rules."""

from __future__ import annotations

import dataclasses

from opkit.conformance import harness
from opkit.spec.lint import missing_rules
from opkit.spec.model import Rule


def test_a_version_without_rules_whose_text_says_must_is_warned_about():
    spec = harness.load_op("ai.onnx", "Conv")
    v = spec.version(22)
    bare = dataclasses.replace(v, rules=(), doc="The input must be 4-D.")
    warnings = missing_rules([dataclasses.replace(spec, versions=(bare,))])
    assert len(warnings) == 1
    text = str(warnings[0])
    assert text.startswith(f"{spec.path}:") and ": warning: Conv-22 has a kernel but no 'rules:'" in text
    assert "The input must be 4-D." in text


def test_rules_or_no_constraint_words_silence_it():
    spec = harness.load_op("ai.onnx", "Conv")
    v = spec.version(22)
    ruled = dataclasses.replace(v, doc="The input must be 4-D.", rules=(Rule(label="V1", holds="True"),))
    plain = dataclasses.replace(v, rules=(), doc="Computes a convolution.", inputs=tuple(
        dataclasses.replace(p, doc="data") for p in v.inputs), attributes=tuple(
        dataclasses.replace(a, doc="") for a in v.attributes))
    assert missing_rules([dataclasses.replace(spec, versions=(ruled, plain))]) == []
