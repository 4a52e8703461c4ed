"""Targeted edge strategies: a fixed share of the draws gets one narrow trigger (a NaN at the first
or last position, subnormals, a long last axis, a conversion at the saturation edge ...)."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import HealthCheck, given, settings

from opkit.backends.registry import resolve
from opkit.cases.edges import EDGE_SHARE, LONG_AXIS, STRATEGIES, applicable, apply_edge
from opkit.cases.generator import cases
from opkit.conformance import harness
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker import Worker
from opkit.cases.case import Case

FAKES = "test_conformance_fakes"


def _names(op, since):
    return [s.name for s in applicable(harness.load_op("ai.onnx", op).version(since))]


def test_strategies_apply_by_what_the_version_can_hold():
    assert {"subnormals", "one NaN", "long last axis", "rank 6"} <= set(_names("Erf", 13))
    assert "integer extremes" not in _names("Erf", 13) and "integer extremes" in _names("Add", 14)
    assert "saturation edge" not in _names("Erf", 13)  # same type in and out: nothing saturates
    assert "rank 6" not in _names("Trilu", 14)  # a rank rule on its input
    # a version whose family hook builds its cases keeps them as built (its validity is the hook's)
    assert _names("Cast", 21) == [] and _names("ArgMax", 13) == []


def _case(x, attributes=()):
    return Case("ai.onnx", "Add", 14, (("T", "tensor(float)"),), attributes, (("A", x), ("B", x[..., :1])))


def test_each_strategy_is_deterministic_and_changes_what_it_says():
    add = harness.load_op("ai.onnx", "Add").version(14)
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    for s in STRATEGIES:
        a, b = apply_edge(s.name, _case(x), add, 5), apply_edge(s.name, _case(x), add, 5)
        assert all(np.array_equal(p[1], q[1], equal_nan=True) for p, q in zip(a.inputs, b.inputs)), s.name
    long = apply_edge("long last axis", _case(x), add, 1)
    assert long.edge == "long last axis" and long.inputs[0][1].shape[-1] in LONG_AXIS
    assert long.inputs[1][1].shape == (2, 1)  # the broadcasting input keeps its extent of 1
    six = apply_edge("rank 6", _case(x), add, 1)
    assert six.inputs[0][1].shape == (1, 1, 1, 1, 2, 3) and six.inputs[1][1].shape == (1, 1, 1, 1, 2, 1)
    sub = apply_edge("subnormals", _case(x), add, 2)
    changed = next(arr for (_, arr), (_, old) in zip(sub.inputs, _case(x).inputs) if not np.array_equal(arr, old))
    assert np.all(np.abs(changed) < np.finfo(np.float32).tiny) and np.all(changed != 0)
    nan = apply_edge("one NaN", _case(x), add, 3)
    flat = [arr.reshape(-1) for _, arr in nan.inputs]
    assert sum(int(np.isnan(f).sum()) for f in flat) == 1
    assert any(np.isnan(f[0]) or np.isnan(f[-1]) for f in flat)


def test_a_fixed_share_of_draws_gets_an_edge_and_every_edge_is_drawn():
    spec = harness.load_op("ai.onnx", "Erf")
    seen = collections.Counter()

    @settings(max_examples=400, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases(spec, spec.version(13), types={"T": "tensor(float)"}))
    def draw(case):
        seen[case.edge] += 1

    draw()
    total = sum(seen.values())
    share = 1 - seen[""] / total
    assert 0.5 / EDGE_SHARE < share < 1.6 / EDGE_SHARE, seen
    assert set(seen) - {""} <= set(_names("Erf", 13)) and len(set(seen) - {""}) >= 4, seen


def test_a_bug_past_the_vector_width_is_found_only_with_the_long_axis():
    trilu = harness.load_op("ai.onnx", "Trilu")
    with Worker(resolve(f"{FAKES}:WrongPastSixteen"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=150, seed=1, timeout=10.0)
        runner.run_differential(trilu, trilu.version(14), [{"T": "tensor(float)"}])
    found = [r for r in runner.results if r.outcome == "mismatch"]
    assert found and "edge=long last axis" in found[0].minimal_example, runner.results


def _reduce_max_failures(monkeypatch, seed, sweep=True):
    from opkit.conformance import runner as runner_module

    if not sweep:
        monkeypatch.setattr(runner_module, "edge_sweep", lambda bases, version, **kw: [])
    reduce_max = harness.load_op("ai.onnx", "ReduceMax")
    with Worker(resolve(f"{FAKES}:SkipsLateNaN"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=5, seed=seed, timeout=10.0)
        runner.run_differential(reduce_max, reduce_max.version(18), [{"T": "tensor(float)"}])
    monkeypatch.undo()
    return [r for r in runner.results if r.outcome == "mismatch" and "nan" in r.message.lower()]


def test_the_edge_sweep_meets_every_edge_whatever_the_seed_draws(monkeypatch):
    """ReduceMax's cases are built by a family hook (no random edges); the sweep still puts one NaN
    at the last position of a drawn case, so a max that skips a late NaN is found on every seed."""
    found = [_reduce_max_failures(monkeypatch, seed) for seed in range(3)]
    assert all(found), found
    assert any("edge=one NaN (last)" in f[0].minimal_example for f in found), found
    # the search alone, with the same seeds and budget, misses it at least once
    assert not all(_reduce_max_failures(monkeypatch, seed, sweep=False) for seed in range(3))


def test_the_sweep_applies_each_strategy_and_variant_once():
    from opkit.cases.edges import sweep

    add = harness.load_op("ai.onnx", "Add").version(14)
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    edged = sweep([_case(x), _case(x + 1)], add)
    names = [c.edge for c in edged]
    assert names.count("one NaN (first)") == 1 and names.count("one NaN (last)") == 1
    assert {"special values", "subnormals", "long last axis", "rank 6"} <= set(names)
    last = next(c for c in edged if c.edge == "one NaN (last)")
    assert any(np.isnan(arr.reshape(-1)[-1]) for _, arr in last.inputs)
    # a family version gets only the strategies that change floating-point values
    reduce_max = harness.load_op("ai.onnx", "ReduceMax").version(18)
    assert {s.name for s in applicable(reduce_max, swept=True)} <= {"special values", "one NaN", "subnormals",
                                                                      "saturation edge"}
    assert "one NaN" in {s.name for s in applicable(reduce_max, swept=True)} and not applicable(reduce_max)


def test_a_family_versions_page_lists_what_its_sweep_applies():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "generated/docs/operators/ai.onnx/ReduceMax.md").read_text()
    family_part = page.split("built valid by construction by the `shape` family")[1].split("## ")[0]
    assert "runs each of these targeted triggers once on" in family_part
    assert "*one NaN*" in family_part and "*rank 6*" not in family_part


def test_the_sweep_sets_flag_and_enumerated_attributes_on_cases_no_hook_built():
    """Each value of a flag or enumerated attribute is set on the drawn cases that give the most
    other attributes (two attribute values at once). A family hook's cases get none: the hook
    keeps attribute values apart on purpose (Pad's reflect only with pads below the size, TopK's
    sorted=0 never, its order being open), and the sweep once charged onnxruntime with both."""
    from opkit.cases.edges import _attribute_pairs, sweep
    from opkit.cases.case import make_case

    trilu_spec = harness.load_op("ai.onnx", "Trilu")
    trilu = trilu_spec.version(14)
    assert _attribute_pairs(trilu) == [("upper", 0), ("upper", 1)]
    m = make_case(trilu_spec, trilu, {"T": "tensor(float)"}, {}, [("input", np.ones((2, 2), np.float32))])
    edged = [c for c in sweep([m], trilu) if c.edge.startswith("attribute")]
    assert [dict(c.attributes) for c in edged] == [{"upper": 0}], edged  # upper=1 is the case's default
    pad = harness.load_op("ai.onnx", "Pad")
    version = pad.version(19)
    assert ("mode", "reflect") in _attribute_pairs(version) and version.family
    base = make_case(pad, version, {"T": "tensor(float)", "Tind": "tensor(int64)"}, {},
                     [("data", np.ones((2, 2), np.float32)), ("pads", np.array([0, 3, 0, 3], np.int64))])
    assert not [c for c in sweep([base], version) if c.edge.startswith("attribute")]
