"""The ``lowerings`` suite: a spec's lowering (e.g. Trilu -> directml::DiagonalMatrix1-1) against
the op's own reference kernel, over every type binding. No backend is involved."""

from __future__ import annotations

import time

from ..cases import cases
from ..cases.bindings import covering_bindings
from ..cases.fixed import edge_cases
from . import harness
from .allowance import allowance_for
from .output_compare import Mismatch, compare
from ..results.outcomes import ERROR, MISMATCH, PASS


def execute_lowering(version, fn, case):
    from .case_exec import Exec

    expected = harness.expected_outputs(case)  # raises Invalid for inputs the op rejects
    try:
        import numpy as np

        with np.errstate(all="ignore"):
            actual = fn(*case.positional(), **case.kernel_attributes())
    except harness.Invalid:
        raise
    except Exception as exc:  # noqa: BLE001 - the lowering fails where the op does not
        return Exec(ERROR, f"lowering raised {type(exc).__name__}: {exc}", {"stage": "lowering"}, expected)
    actual = actual if isinstance(actual, tuple) else (actual,)
    for i, (exp, act) in enumerate(zip(expected, actual)):
        if exp is None:
            continue
        param = version.outputs[i]
        try:
            compare(exp, act, name=param.name, allowance=allowance_for(version, case, i, expected))
        except Mismatch as mm:
            return Exec(MISMATCH, mm.message, {"what": mm.what, **mm.details}, expected, list(actual))
    return Exec(PASS)


def run_lowerings(runner, spec) -> None:
    from .case_exec import Exec
    from .hypothesis_search import _stable_seed

    for version in spec.versions:
        if not version.lowerings or harness.oracle(spec.domain, spec.name, version.since) is None:
            continue
        for lowering in version.lowerings:
            target = harness.oracle(*harness.lowering_target(lowering))
            for binding in covering_bindings(version, runner.max_bindings):
                t0 = time.perf_counter()
                if target is None:
                    runner._record(spec, version, "lowerings", lowering.name, binding,
                                   Exec(ERROR, f"no reference kernel for the target {lowering.to}"), 0, 0.0,
                                   backend="spec")
                    continue
                fn = harness.lowering_function(lowering, version, target)
                seed = _stable_seed(runner.seed, spec.domain, spec.name, version.since, "lowering", lowering.name,
                                    sorted(binding.items()))
                strategy = cases(spec, version, types=binding, initializers=False)
                ex, minimal, runs = runner.hypothesis_run(strategy, lambda c: execute_lowering(version, fn, c), seed,
                                                          edge_cases(spec, version, binding))
                runner._record(spec, version, "lowerings", lowering.name, binding, ex, runs,
                               time.perf_counter() - t0, minimal, backend="spec")
