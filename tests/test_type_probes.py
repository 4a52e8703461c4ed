"""Every type binding of a many-typed op is tested: the covering subset gets the full search, the
others a few examples each (probes); past the limit, a pairwise covering set is probed."""

from __future__ import annotations

import itertools
import statistics

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.runner import PROBE_EXAMPLES, Runner
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.worker import Worker
from opkit.cases.bindings import (
    PROBE_LIMIT,
    _free_pools,
    all_bindings,
    covering_bindings,
    pairwise_bindings,
    probe_bindings,
)

FAKES = "test_conformance_fakes"
CAST = harness.load_op("ai.onnx", "Cast")
ONE_HOT = harness.load_op("ai.onnx", "OneHot").version(11)
REFUSED = {"T1": "tensor(int16)", "T2": "tensor(uint8)"}


def _key(binding: dict) -> tuple:
    return tuple(sorted(binding.items()))


def test_probes_are_every_binding_the_covering_subset_leaves_out():
    version = CAST.version(13)
    searched = covering_bindings(version, 8)
    probed = probe_bindings(version, searched)
    assert len(searched) + len(probed) == len(all_bindings(version)) == 196
    assert not {_key(b) for b in searched} & {_key(b) for b in probed}
    assert probe_bindings(version, searched, 0) == []


def test_past_the_limit_a_pairwise_set_covers_every_pair_of_types():
    full = all_bindings(ONE_HOT)
    chosen = pairwise_bindings(ONE_HOT)
    assert len(full) == 1815 and len(chosen) < 200
    names, _ = _free_pools(ONE_HOT)
    for a, b in itertools.combinations(names, 2):
        assert {(x[a], x[b]) for x in full} == {(x[a], x[b]) for x in chosen}, (a, b)
    assert pairwise_bindings(ONE_HOT) == chosen  # deterministic (and cached)
    probed = probe_bindings(ONE_HOT, covering_bindings(ONE_HOT))
    assert len(probed) + 64 >= len(chosen)


def _run(probe_limit):
    with Worker(resolve(f"{FAKES}:RefusesOneCastPair"), timeout=20.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=10, seed=0, timeout=20.0, max_bindings=8,
                        probe_limit=probe_limit)
        runner.run_differential(CAST, CAST.version(13))
    return runner.results


def test_a_registration_missing_for_one_pair_is_found_by_the_probes():
    results = _run(probe_limit=PROBE_LIMIT)
    by_binding = {}
    for r in results:
        by_binding.setdefault(_key(r.types), []).append(r)
    refused = by_binding[_key(REFUSED)]
    assert [r.outcome for r in refused] == ["unsupported"]
    # every other binding ran too; a probe runs a few examples, the searched ones the full count
    assert len(by_binding) >= 190
    searched = {_key(b) for b in covering_bindings(CAST.version(13), 8)}
    runs = {kind: [r.examples_run for r in results if r.outcome == "pass"
                   and (_key(r.types) in searched) == (kind == "searched")] for kind in ("searched", "probe")}
    # each draw runs with its 15 siblings
    assert runs["probe"] and max(runs["probe"]) <= PROBE_EXAMPLES * 16, runs
    assert statistics.median(runs["probe"]) * 2 < statistics.median(runs["searched"]), runs
    # without probes the pair is never tried
    without = {_key(r.types) for r in _run(probe_limit=0)}
    assert _key(REFUSED) not in without and without == searched


def test_a_binding_the_adapter_cannot_feed_is_still_loaded_and_a_refusal_recorded():
    # onnxruntime 1.16's Python binding cannot feed bfloat16: the model is only loaded
    trilu = harness.load_op("ai.onnx", "Trilu")
    with Worker(resolve(f"{FAKES}:RefusesBfloat16"), timeout=10.0) as worker:
        info = dict(worker.describe())
        info["unfeedable_elements"] = {"bfloat16": "cannot feed bfloat16", "float16": "cannot feed float16"}
        runner = Runner(BackendRunner(worker, info), max_examples=5, seed=0, timeout=10.0)
        runner.run_differential(trilu, trilu.version(14), [{"T": "tensor(bfloat16)"}, {"T": "tensor(float16)"},
                                                          {"T": "tensor(float)"}])
    outcomes = {r.types["T"]: (r.outcome, (r.details or {}).get("load_only")) for r in runner.results}
    assert outcomes == {"tensor(bfloat16)": ("unsupported", True), "tensor(float)": ("pass", None)}, outcomes
    # the float16 model loads: its values cannot be checked, so it stays skipped with the reason
    assert [s["types"]["T"] for s in runner.skipped] == ["tensor(float16)"]


def test_a_probe_refused_at_load_for_an_attribute_asks_its_values_with_the_defaults():
    """A probe ends at its first failure; when the runtime refused an attribute at load, the values
    were never asked: the case is asked again with the attribute at its default, then with the edge
    sweep (a subnormal as text, which strtod calls out of range)."""
    import numpy as np

    from opkit.backends.registry import resolve
    from opkit.conformance import harness
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.case_exec import Exec
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker import Worker
    from opkit.cases.case import Case

    cast = harness.load_op("ai.onnx", "Cast")
    binding = {"T1": "tensor(string)", "T2": "tensor(double)"}
    refused = Case("ai.onnx", "Cast", 21, tuple(sorted(binding.items())), (("saturate", 0), ("to", 11)),
                   (("input", np.array(["1e-5", "3.14"], dtype=object)),))
    with Worker(resolve("test_conformance_fakes:RefusesSaturateParsesWithStrtod"), timeout=10.0) as worker:
        runner = Runner(BackendRunner(worker), max_examples=2, seed=0, timeout=10.0)
        load_error = Exec("error", "Exception during initialization: Attribute saturate ...", {"stage": "load"})
        runner._plain_retry(cast, cast.version(21), binding, load_error, refused)
        found = [r for r in runner.results if r.example == "differential-2"]
        assert len(found) == 1 and "stod" in found[0].message, runner.results
        assert "edge=numeric text" in found[0].minimal_example and "saturate" not in found[0].minimal_example
        # an error at run, not at load, is a finding about the values already: nothing is retried
        runner._plain_retry(cast, cast.version(21), binding, Exec("error", "stod", {"stage": "run"}), refused)
        assert len(runner.results) == 1
