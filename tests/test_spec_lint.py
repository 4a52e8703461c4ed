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


def _warned(spec, version):
    return [d for d in missing_rules([dataclasses.replace(spec, versions=(version,))])]


def test_prose_that_only_sounds_like_a_constraint_is_not_warned_about():
    # Dropout-10 ("so during testing nothing needs to be done") and IsInf-20 ("Set this attribute to 0
    # if negative infinity should be mapped to false") constrain nothing: the phrases fired before
    dropout, isinf = harness.load_op("ai.onnx", "Dropout"), harness.load_op("ai.onnx", "IsInf")
    for spec, since, phrase in ((dropout, 10, "nothing needs to be done"),
                                (isinf, 20, "negative infinity should be mapped to false")):
        v = spec.version(since)
        texts = [v.doc] + [p.doc for p in v.inputs] + [a.doc for a in v.attributes]
        assert v.rules == () and any(phrase in t for t in texts)  # the real text, still without rules
        assert _warned(spec, v) == []


def test_a_real_constraint_next_to_such_prose_still_fires():
    for op, since in (("Dropout", 10), ("IsInf", 20)):
        spec = harness.load_op("ai.onnx", op)
        v = spec.version(since)
        constrained = dataclasses.replace(v, doc=v.doc + "\nThe input must be finite.")
        warnings = _warned(spec, constrained)
        assert len(warnings) == 1 and "The input must be finite." in str(warnings[0])


def test_the_exception_is_a_whole_phrase_not_its_constraint_word():
    spec = harness.load_op("ai.onnx", "Dropout")
    v = spec.version(10)
    for doc in ("The ratio needs to be below 1.", "If the ratio should be mapped to a mask, it must be < 1."):
        assert len(_warned(spec, dataclasses.replace(v, doc=doc))) == 1, doc
