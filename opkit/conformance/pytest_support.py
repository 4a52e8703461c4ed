"""What generated tests call: one check per kind of test, raising ``ConformanceFailure`` (an
AssertionError carrying the outcome class) so hypothesis shrinks it and the pytest plugin can
report it (and apply expectations)."""

from __future__ import annotations

from ..spec.model import OpSpec, OpVersion
from ..cases.case import Case
from . import harness
from ..results.outcomes import PASS


class ConformanceFailure(AssertionError):
    def __init__(self, outcome: str, message: str, case: Case | None = None):
        self.outcome, self.message, self.case = outcome, message, case
        super().__init__(f"{outcome}: {message}" + (f"\n  case: {case.describe()}" if case is not None else ""))


def _reject():
    from hypothesis import reject

    reject()


def _skip_if_unaskable(backend, domain: str, since: int, op: str) -> None:
    """Skip (not fail) a test the backend cannot be asked: an op version beyond its opset or one it
    dropped, a domain it cannot run as configured (see ``BackendRunner.cannot_run``)."""
    cannot_run = getattr(backend.runner.backend, "cannot_run", None)
    why = cannot_run(domain, since, op) if cannot_run is not None else None
    if why:
        import pytest

        pytest.skip(why)


def _raise(ex, case):
    if ex.outcome != PASS:
        raise ConformanceFailure(ex.outcome, ex.message, ex.case if ex.case is not None else case)


def check_differential(backend, version: OpVersion, case: Case) -> None:
    """The backend's outputs equal the reference kernel's (per-dtype tolerances)."""
    _skip_if_unaskable(backend, case.domain, version.since, case.op)
    try:
        ex = backend.runner.execute_differential(version, case)
    except harness.Invalid:
        _reject()
    _raise(ex, case)


def check_example(backend, spec: OpSpec, version: OpVersion, name: str) -> None:
    from .case_exec import example_exec

    _skip_if_unaskable(backend, spec.domain, version.since, spec.name)
    example = next(e for e in version.examples if e.name == name)
    case, expected = harness.example_case(spec, version, example)
    result = backend.runner.backend.run_case(case, version, backend.runner.timeout)
    _raise(example_exec(version, case, example, expected, result), case)


def check_property(backend, spec: OpSpec, version: OpVersion, name: str, case: Case) -> None:
    _skip_if_unaskable(backend, spec.domain, version.since, spec.name)
    prop = next(p for p in version.properties if p.name == name)
    try:
        ex = backend.runner.execute_property(spec, version, prop, case)
    except harness.Invalid:
        _reject()
    _raise(ex, case)


def check_lowering(version: OpVersion, name: str, case: Case) -> None:
    from .lowerings import execute_lowering

    lowering = next(item for item in version.lowerings if item.name == name)
    target = harness.oracle(*harness.lowering_target(lowering))
    if target is None:
        raise ConformanceFailure("error", f"no reference kernel for {lowering.to}")
    fn = harness.lowering_function(lowering, version, target)
    try:
        ex = execute_lowering(version, fn, case)
    except harness.Invalid:
        _reject()
    _raise(ex, case)
