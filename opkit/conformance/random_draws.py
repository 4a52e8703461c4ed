"""The differential suite of a random op version (``OpVersion.draws``): each drawn case runs on
the backend together with a large variant of it (``large_case``: ``SAMPLE_SIZE`` values, so that
the moment checks of ``opkit.conformance.random_judging`` mean something) and, when the node has a
seed, the same model once more in the same session.

The seed: ONNX's text says only "Seed to the random generator, if not specified we will auto
generate one". Seeding a generator fixes the sequence it starts from, but the text does not say
whether a node's generator starts again at each run or goes on, and onnxruntime's goes on (two
runs of one session differ, two fresh sessions agree). So a second run of one session that differs
is noted in the record (``details.seed_rerun``), never charged; the rerun is judged like any draw.

The generator draws these versions small tensors, like every op's; the hypothesis examples per
binding are capped at ``EXAMPLES`` (the statistics come from the large variant, not from many
small draws), which keeps the sweep about as fast as when these versions had no such suite.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..spec.model import OpSpec, OpVersion
from ..cases.case import Case
from ..cases import cases
from ..cases.bindings import covering_bindings
from . import harness
from .case_exec import Exec, check_outputs, result_exec
from .hypothesis_search import _stable_seed
from .output_compare import equal
from .random_judging import FALSE_ALARM, MIN_SAMPLE
from ..results.outcomes import PASS
from .worker_engine import OK

SAMPLE_SIZE = 16384  # values in the large variant: Hoeffding's 1e-6 bound is then +- 0.021 for a probability
EXAMPLES = 10  # hypothesis examples per type binding (each runs three or four models)
BINDINGS = 8  # all bindings up to this many, else a covering subset
_SHAPED = ("RandomUniform", "RandomNormal")  # the output's shape is the `shape` attribute
_LIKE_INPUT = {"RandomUniformLike": "input", "RandomNormalLike": "input", "Bernoulli": "input", "Dropout": "data"}


def large_case(case: Case) -> Case | None:
    """``case`` with ``SAMPLE_SIZE`` values to judge (the same attributes, types and input values,
    repeated into a 1-D input or shape), or None when it has nothing to repeat (an empty input)."""
    attributes = dict(case.attributes)
    if case.op in _SHAPED:
        attributes["shape"] = [SAMPLE_SIZE]
        return dataclasses.replace(case, attributes=tuple(attributes.items()))
    inputs = dict(case.inputs)
    if case.op == "Multinomial":
        x = inputs.get("input")
        if x is None or np.size(x) == 0:
            return None
        attributes["sample_size"] = max(SAMPLE_SIZE // int(np.shape(x)[0]), 1024)
        return dataclasses.replace(case, attributes=tuple(attributes.items()))
    name = _LIKE_INPUT.get(case.op)
    x = inputs.get(name) if name else None
    if not isinstance(x, np.ndarray) or x.size == 0:
        return None
    inputs[name] = np.resize(x, (SAMPLE_SIZE,))
    return dataclasses.replace(case, inputs=tuple(inputs.items()), initializers=case.initializers - {name})


def outside_text(case: Case) -> str | None:
    """Why the text rules ``case`` out where the spec has no rule for it yet (Dropout's ratio: "with
    value in [0, 1)"), or None."""
    if case.domain == "ai.onnx" and case.op == "Dropout":
        ratio = dict(case.inputs).get("ratio")
        if isinstance(ratio, np.ndarray) and ratio.size and not 0 <= float(ratio.astype(np.float64).reshape(-1)[0]) < 1:
            return "Dropout's text gives ratio a value in [0, 1)"
    return None


def _with_large(runner, version: OpVersion, case: Case) -> list[tuple[Case, tuple]]:
    big = large_case(case)
    if big is None:
        return []
    try:
        runner.backend.check_schema(big, version)
        return [(big, harness.expected_outputs(big))]
    except harness.Invalid:  # the variant breaks a rule the small case keeps: judge the small one
        return []


def execute_random(runner, version: OpVersion, case: Case) -> Exec:
    """Run ``case`` (and its large variant, and a rerun when seeded) on ``runner``'s backend and
    judge each draw; raises ``harness.Invalid`` when the reference kernel rejects ``case``."""
    runner.backend.check_schema(case, version)
    expected = harness.expected_outputs(case)
    why = outside_text(case)
    if why:
        raise harness.Invalid(why)
    prepared = [(case, expected)] + _with_large(runner, version, case)
    seeded = "seed" in dict(case.attributes)
    if seeded:  # the same model again: the worker's session for its signature runs it a second time
        prepared.append(prepared[-1])
    results = runner.backend.run_cases([c for c, _ in prepared], version, runner.timeout)
    notes: dict = {}
    for (c, exp), result in zip(prepared, results):
        ex = result_exec(result) if result.kind != OK else check_outputs(version, c, exp, result.outputs)
        if ex.outcome != PASS:
            ex.case, ex.count, ex.expected = c, len(results), exp
            return ex
        notes.setdefault("statistics", []).extend(n for n in ex.details.get("statistics", ()) if n not in
                                                  notes.get("statistics", ()))
    if seeded and len(results) == len(prepared) and all(r.kind == OK for r in results[-2:]):
        same = all(equal(a, b) for a, b in zip(results[-2].outputs, results[-1].outputs))
        notes["seed_rerun"] = ("same draw" if same else "another draw (not charged: the text does not say a "
                               "seeded node's generator starts again at each run)")
    return Exec(PASS, details=notes, count=len(results))


class _Tally:
    """What the judged draws of one binding said: how many had their moments checked and how many
    were too small, and what a seeded rerun gave; written into the binding's passing record."""

    def __init__(self):
        self.checked, self.small, self.largest, self.reruns = 0, 0, 0, {}

    def add(self, ex: Exec) -> Exec:
        notes = (ex.details or {}).get("statistics", ())
        for note in notes:
            if note.startswith("moments not checked"):
                self.small += 1
            elif "(n=" in note:
                self.checked += 1
                self.largest = max(self.largest, int(note.split("(n=")[1].split(",")[0]))
        rerun = (ex.details or {}).get("seed_rerun")
        if rerun:
            self.reruns[rerun] = self.reruns.get(rerun, 0) + 1
        return ex

    def summary(self) -> dict:
        out = {"statistics": f"{self.checked} moment check(s) passed (n up to {self.largest}, false alarm "
                             f"<= {FALSE_ALARM:g} each); {self.small} draw(s) too small for moments (< {MIN_SAMPLE} "
                             "values): type, shape and range only"}
        if self.reruns:
            out["seed_rerun"] = "; ".join(f"{k}: {v}" for k, v in sorted(self.reruns.items()))
        return out


def _noting(runner, tally: _Tally):
    """``runner._record`` with the tally added to a passing differential record."""
    record = runner._record

    def noted(spec, version, suite, example, types, ex, *args, **kwargs):
        if ex.outcome == PASS and suite == "differential":
            ex = dataclasses.replace(ex, details=dict(ex.details or {}, **tally.summary()))
        return record(spec, version, suite, example, types, ex, *args, **kwargs)

    return noted


def run_random(runner, spec: OpSpec, version: OpVersion, bindings=None) -> None:
    """The differential suite of a random op version: hypothesis cases judged by ``execute_random``."""
    if not runner.generatable(spec, version, "differential"):
        return
    # a set covering every type of every parameter: the distribution does not depend on the pairing
    searched = bindings or covering_bindings(version, min(BINDINGS, runner.max_bindings or BINDINGS))
    drawn = runner._strategies(spec, version, "differential", searched,
                               lambda b, ranks: cases(spec, version, types=b, ranks=ranks))
    ran = []
    for binding, strategy, t0 in drawn:
        ran.append(binding)
        seed = _stable_seed(runner.seed, spec.domain, spec.name, version.since, sorted(binding.items()))
        tally = _Tally()
        runner._record = _noting(runner, tally)  # this binding's passing record says what was judged
        try:
            runner.search(spec, version, "differential", binding, strategy,
                          lambda c: tally.add(execute_random(runner, version, c)), seed, (), t0,
                          max_examples=min(EXAMPLES, runner.max_examples))
        finally:
            del runner._record  # the class's own again
    runner.replay_expensive(spec, version, "differential", ran)
