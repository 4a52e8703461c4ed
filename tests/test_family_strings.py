"""The strings family hook draws valid cases (opkit.cases.families.strings), and string
attributes with a fixed set of values declare them (``values:``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from opkit.cases.families.strings import PATTERNS
from opkit.conformance import harness

from family_cases import kernel_versions, op_cases, assert_mostly_valid

FAMILY = "strings"
OPS = ["StringNormalizer", "StringSplit", "StringConcat", "RegexFullMatch", "BitShift", "TfIdfVectorizer"]


def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 4, 10)


def _drawn(op, since, n=100, types=None):
    return [(dict(case.attributes), dict(case.inputs)) for case in op_cases(op, since, n, seed_value=1, types=types)]


def test_string_normalizer():
    drawn = _drawn("StringNormalizer", 10, 120)
    assert {a.get("case_change_action") for a, _ in drawn} >= {None, "LOWER", "UPPER", "NONE"}
    assert {a.get("is_case_sensitive") for a, _ in drawn} >= {0, 1}
    with_stop = [(a, i) for a, i in drawn if a.get("stopwords")]
    assert with_stop
    # some stopword matches an input word only when case is ignored
    assert any(any(s not in list(i["X"]) and s.lower() in [w.lower() for w in i["X"]] for s in a["stopwords"])
               for a, i in with_stop)
    assert all(i["X"].ndim == 1 and i["X"].size >= 1 for _, i in drawn)


def test_string_split():
    drawn = _drawn("StringSplit", 20, 120)
    delims = [a.get("delimiter") for a, _ in drawn]
    assert None in delims and "" in delims and any(d for d in delims)
    assert any(a.get("maxsplit") is not None for a, _ in drawn)
    assert any(i["X"].ndim == 0 for _, i in drawn) and any(i["X"].ndim >= 2 for _, i in drawn)
    # empty fields: a doubled, leading or trailing delimiter
    assert any(a.get("delimiter") and any(s.startswith(a["delimiter"]) or s.endswith(a["delimiter"])
                                          for s in np.ravel(i["X"])) for a, i in drawn)


def test_regex_patterns_match_and_miss():
    for p in PATTERNS:
        re.compile(p)
    drawn = _drawn("RegexFullMatch", 20, 120)
    assert len({a["pattern"] for a, _ in drawn}) >= 5
    fn = harness.oracle("ai.onnx", "RegexFullMatch", 20)
    results = np.concatenate([np.ravel(fn(i["X"], pattern=a["pattern"])[0]) for a, i in drawn])
    assert results.any() and not results.all()


def test_string_concat_broadcasts():
    drawn = _drawn("StringConcat", 20, 80)
    for _, i in drawn:
        np.broadcast_shapes(i["X"].shape, i["Y"].shape)
    assert any(i["X"].shape != i["Y"].shape for _, i in drawn)


def test_bitshift_amounts():
    for since, types in ((11, ("uint8", "uint64")), (28, ("int8", "uint32", "int64"))):
        for t in types:
            drawn = _drawn("BitShift", since, 60, {"T": f"tensor({t})"})
            bits = np.dtype(t).itemsize * 8
            assert {a["direction"] for a, _ in drawn} == {"LEFT", "RIGHT"}
            for _, i in drawn:
                np.broadcast_shapes(i["X"].shape, i["Y"].shape)
            ys = np.concatenate([np.ravel(i["Y"]).astype(np.int64) for _, i in drawn])
            if since == 11:  # shifting by the bit width or more is undefined there
                assert ys.min() >= 0 and ys.max() < bits
            else:  # defined since 28: some occur
                assert ys.max() >= bits or ys.min() < 0


# string attributes whose ONNX doc lists the values they may take
ENUMS = {
    ("AveragePool", "auto_pad"), ("Conv", "auto_pad"), ("ConvInteger", "auto_pad"), ("ConvTranspose", "auto_pad"),
    ("LpPool", "auto_pad"), ("MaxPool", "auto_pad"), ("QLinearConv", "auto_pad"), ("BitShift", "direction"),
    ("Cast", "round_mode"), ("CastLike", "round_mode"), ("CausalConvWithState", "activation"),
    ("DepthToSpace", "mode"), ("SpaceToDepth", "mode"), ("Gelu", "approximate"), ("GridSample", "mode"),
    ("GridSample", "padding_mode"), ("ImageDecoder", "pixel_format"), ("LinearAttention", "update_rule"),
    ("NegativeLogLikelihoodLoss", "reduction"), ("SoftmaxCrossEntropyLoss", "reduction"), ("Pad", "mode"),
    ("Resize", "mode"), ("Resize", "coordinate_transformation_mode"), ("Resize", "nearest_mode"),
    ("Resize", "keep_aspect_ratio_policy"), ("RoiAlign", "mode"), ("RoiAlign", "coordinate_transformation_mode"),
    ("ScatterElements", "reduction"), ("ScatterND", "reduction"), ("TensorScatter", "mode"),
    ("TfIdfVectorizer", "mode"), ("Upsample", "mode"), ("StringNormalizer", "case_change_action"),
    ("RNN", "direction"), ("LSTM", "direction"),
}


@pytest.mark.parametrize("op,attr", sorted(ENUMS))
def test_string_enums_declare_values(op, attr):
    found = 0
    for v in harness.load_op("ai.onnx", op).versions:
        a = v.attribute(attr)
        if a is not None:
            found += 1
            assert a.domain is not None and a.domain.values, f"{op}-{v.since}.{attr} has no values"
            assert a.default is None or a.default in a.domain.values
    assert found
    resize19 = harness.load_op("ai.onnx", "Resize").version(19).attribute("coordinate_transformation_mode")
    assert "half_pixel_symmetric" in resize19.domain.values


def test_tfidf_pool_layout_and_hits():
    """ngram_counts has one start per gram length, ngram_indexes one distinct coordinate per pooled
    n-gram, weights the same length, the pool type matches X's; inputs hit the pool and miss it.
    (Drawn freely, 3 of 60 cases were valid.)"""
    for types in ({"T": "tensor(string)"}, {"T": "tensor(int32)"}):
        drawn = _drawn("TfIdfVectorizer", 9, 60, types=types)
        hits = misses = 0
        for attrs, inputs in drawn:
            pool = attrs.get("pool_strings", attrs.get("pool_int64s"))
            assert ("pool_strings" in attrs) == (types["T"] == "tensor(string)")
            starts = attrs["ngram_counts"]
            assert len(starts) == attrs["max_gram_length"] >= attrs["min_gram_length"] >= 1
            bounds = list(starts) + [len(pool)]
            grams = sum((bounds[g + 1] - bounds[g]) // (g + 1) for g in range(len(starts)))
            assert all((bounds[g + 1] - bounds[g]) % (g + 1) == 0 for g in range(len(starts)))
            idx = attrs["ngram_indexes"]
            assert len(idx) == grams >= 1 and len(set(idx)) == len(idx) and min(idx) >= 0
            assert "weights" not in attrs or len(attrs["weights"]) == grams
            tokens = set(np.ravel(inputs["X"]).tolist())
            hits += bool(tokens & set(pool))
            misses += bool(tokens - set(pool))
        assert hits and misses
