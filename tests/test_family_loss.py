"""The loss family hook draws valid cases (opkit.cases.families.loss)."""

from __future__ import annotations

import pytest

from family_cases import kernel_versions, op_cases, assert_mostly_valid

FAMILY = "loss"
OPS = ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]

def _versions():
    return kernel_versions(OPS)


@pytest.mark.parametrize("spec,version", list(_versions()))
def test_valid_rate(spec, version):
    assert version.family == FAMILY
    assert_mostly_valid(spec, version, 3, 8)


def _drawn(op, since, n=60):
    return [(dict(case.attributes), dict(case.inputs)) for case in op_cases(op, since, n, seed_value=1)]


@pytest.mark.parametrize("op,data,labels,weights", [
    ("NegativeLogLikelihoodLoss", "input", "target", "weight"),
    ("SoftmaxCrossEntropyLoss", "scores", "labels", "weights")])
def test_labels_in_range_or_ignored(op, data, labels, weights):
    drawn = _drawn(op, 13, 80)
    for a, i in drawn:
        c = i[data].shape[1]
        t = i[labels]
        assert t.shape == i[data].shape[:1] + i[data].shape[2:]
        ok = (t >= 0) & (t < c)
        if a.get("ignore_index") is not None:
            ok |= t == a["ignore_index"]
        assert ok.all()
        assert i[weights] is None or i[weights].shape == (c,)
    # ignore_index both inside [0, C) and outside it, and labels that hit it
    ignored = [(a["ignore_index"], i) for a, i in drawn if a.get("ignore_index") is not None]
    assert any(ix < 0 for ix, _ in ignored) and any(0 <= ix < i[data].shape[1] for ix, i in ignored)
    assert any((i[labels] == ix).any() and i[labels].size for ix, i in ignored)
    assert {a.get("reduction") for a, _ in drawn} >= {"none", "sum", "mean"}
    assert any(i[data].ndim >= 3 for _, i in drawn) and any(i[weights] is not None for _, i in drawn)
