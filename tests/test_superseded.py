"""An older op version that a newer one in the same run computes the same way (same kernel, same
parameters and rules, the same attributes or more with defaults) is probed, not searched, on the
bindings both have; run alone it is searched in full."""

from __future__ import annotations

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import PROBE_EXAMPLES, Runner
from opkit.conformance.superseded import TYPE_LIST, rule_contract, superseding
from opkit.conformance.worker_engine import InProcess


def test_which_newer_version_stands_in():
    if_ = harness.load_op("ai.onnx", "If")
    assert superseding(if_, if_.version(11), None).since == if_.versions[-1].since
    assert superseding(if_, if_.version(11), frozenset({11, 13})).since == 13  # the newest in the run
    assert superseding(if_, if_.version(11), frozenset({11})) is None  # alone: searched in full
    cast = harness.load_op("ai.onnx", "Cast")
    # Cast-19 adds saturate, optional with a default: Cast-13's calls are Cast-19's with saturate=1
    assert superseding(cast, cast.version(13), frozenset({13, 19})).since == 19
    argmax = harness.load_op("ai.onnx", "ArgMax")
    assert superseding(argmax, argmax.version(11), frozenset({11, 13})).since == 13  # select_last_index=0
    pad = harness.load_op("ai.onnx", "Pad")
    assert superseding(pad, pad.version(13), None) is None  # Pad-18 adds axes


def test_an_added_attribute_must_be_optional_with_a_default_and_the_rest_unchanged():
    """The newer version covers the older one's calls only when what it adds cannot change them."""
    from dataclasses import replace

    cast = harness.load_op("ai.onnx", "Cast")
    older, newer = cast.version(13), cast.version(19)
    saturate = next(a for a in newer.attributes if a.name == "saturate")
    required = replace(newer, attributes=tuple(replace(a, required=True, default=None) if a is saturate else a
                                               for a in newer.attributes))
    no_default = replace(newer, attributes=tuple(replace(a, default=None) if a is saturate else a
                                                 for a in newer.attributes))
    to = next(a for a in older.attributes if a.name == "to")
    retyped = replace(newer, attributes=tuple(replace(a, type="int64") if a.name == "to" else a
                                              for a in newer.attributes))
    dropped = replace(older, attributes=(*older.attributes, replace(to, name="extra", required=False, default=0)))
    for other in (required, no_default, retyped):
        spec = replace(cast, versions=(older, other))
        assert superseding(spec, older, None) is None, other
    # the older version has an attribute the newer one lacks: not covered either
    spec = replace(cast, versions=(dropped, newer))
    assert superseding(spec, dropped, None) is None


def test_a_rule_listing_type_names_reads_as_a_type_list():
    """Cast-21 and Cast-23 differ only in the target types rule D-to lists (and the type
    constraints): the same contract. Other literals stay what they are."""
    assert rule_contract("element_name(to) in ('float', 'int4')") == f"element_name(to) in {TYPE_LIST}"
    assert rule_contract("mode in ('constant', 'reflect')") == "mode in ('constant', 'reflect')"
    assert rule_contract("x in ('float', 'constant')") == "x in ('float', 'constant')"  # not only type names
    cast = harness.load_op("ai.onnx", "Cast")
    assert superseding(cast, cast.version(21), frozenset({19, 21, 23})).since == 23
    assert superseding(cast, cast.version(24), frozenset({24, 25})).since == 25
    assert superseding(cast, cast.version(23), frozenset({23, 24})) is None  # Cast-24 adds round_mode


def _examples(versions, backend="reference", max_opset=None):
    spec = harness.load_op("ai.onnx", "Identity")
    worker = InProcess(resolve(backend))
    info = worker.describe()
    if max_opset is not None:
        info = dict(info, max_opsets={"ai.onnx": max_opset})
    runner = Runner(BackendRunner(worker, info), max_examples=20, seed=1)
    runner.run_spec(spec, ("differential", "robustness"), versions=versions)
    older = [r for r in runner.results if r.version == 21]
    return ({r.types["V"]: r.examples_run for r in older if r.suite == "differential"},
            [r for r in older if r.suite == "robustness"])


def test_a_superseded_version_probes_the_bindings_the_newer_version_searches():
    probed, hostile = _examples([21, 25])
    alone, hostile_alone = _examples([21])
    assert probed and set(probed) == set(alone)
    # a probe is PROBE_EXAMPLES drawn cases (with their derived siblings), a search max_examples and its edges
    assert sum(probed.values()) * 3 < sum(alone.values())
    assert min(probed.values()) == PROBE_EXAMPLES < min(alone.values())
    assert not hostile and hostile_alone  # the robustness suite asks the newer version


def test_a_binding_the_runtime_does_not_run_at_the_newer_opset_is_searched_in_the_older_version():
    """A runtime that lags behind the newest opset answers every binding of the newer version
    unsupported: probing the older version would leave each binding unsearched anywhere."""
    lagging, hostile = _examples([21, 25], backend="tests.superseded_fakes:NoOpset25")
    alone, _ = _examples([21])
    assert lagging.keys() == alone.keys() and min(lagging.values()) > PROBE_EXAMPLES and hostile


def test_a_newer_version_the_runtime_cannot_run_stands_in_for_none():
    """Identity-25 is beyond a runtime of opset 24: Identity-24 stands in for Identity-21 instead
    (before, Identity-25 did, reached nothing, and Identity-21 was searched in full)."""
    probed, hostile = _examples([21, 24, 25], max_opset=24)
    alone, _ = _examples([21], max_opset=24)
    assert probed.keys() == alone.keys() and sum(probed.values()) * 3 < sum(alone.values())
    assert min(probed.values()) == PROBE_EXAMPLES and not hostile
