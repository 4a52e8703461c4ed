"""Exec, the verdict on one executed case: how it is made from a backend's answer (compared
with the expected outputs), what makes two failures the same, and the reference kernel's word on
a case (valid, or the rule it breaks)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..spec.model import OpVersion
from ..cases.case import Case
from . import harness
from ..core.values import is_optional_type
from .allowance import allowance_for
from . import random_judging
from .output_compare import Mismatch, compare_value
from .triggers import VALID_INPUT, trigger
from ..results.outcomes import CRASH, MISMATCH, PASS, TIMEOUT
from .worker_engine import OK, Result

EXPENSIVE = (CRASH, TIMEOUT)
MEMORY_KILL = "memory kill"  # a crash that is the worker's memory limit (_memory_kill): seconds of allocation each


def _memory_kill(ex) -> bool:
    """A crash that is the worker's memory limit, not the runtime dying on its own."""
    return ex.outcome == CRASH and "resident memory over" in (ex.message or "")


@dataclass
class Exec:
    """The result of running one drawn case."""

    outcome: str
    message: str = ""
    details: dict = field(default_factory=dict)
    expected: tuple | None = None
    actual: list | None = None
    case: Any = None  # the failing case when it is a sibling of the drawn one
    count: int = 1  # cases executed
    calls: tuple = ()  # a failed property's op() calls (PropertyCall), which its repro bundle replays


def check_outputs(version: OpVersion, case: Case, expected: tuple, actual: list, *,
                  precision: tuple[float, float] = (0.0, 0.0)) -> Exec:
    """Compare a backend's outputs with the expected ones, within the op's accuracy class (or within
    ``precision``, (rtol, atol), where an example's expected values are given only that precisely)."""
    if version.draws:  # the runtime's own draw: judged by the distribution the text gives
        return _judge_draw(case, expected, actual)
    names = [p.name for p in version.outputs]
    binding = case.type_map
    for i, exp in enumerate(expected):
        param = version.outputs[i] if i < len(version.outputs) else None
        bound = binding.get(param.type, param.type) if param is not None else None
        if exp is None and not (bound and is_optional_type(bound)):  # None of an optional type: the empty optional
            continue
        if i >= len(actual):
            return Exec(MISMATCH, f"backend returned {len(actual)} outputs, expected {len(expected)}",
                        {"what": "missing"})
        allowance = allowance_for(version, case, i, expected)  # None: no floats (compared exactly)
        if allowance is not None and any(precision):
            allowance = replace(allowance, rtol=max(allowance.rtol, precision[0]),
                                atol=max(allowance.atol, precision[1]),
                                basis=(allowance.basis + "; " if allowance.basis else "")
                                + "the example's stated precision")
        try:
            compare_value(exp, actual[i], bound, name=names[i] if i < len(names) else f"output {i}",
                          allowance=allowance)
        except Mismatch as mm:
            return Exec(MISMATCH, mm.message, {"what": mm.what, **mm.details}, expected, actual)
    return Exec(PASS, "", {}, expected, actual)


def _judge_draw(case: Case, expected: tuple, actual: list) -> Exec:
    """A random op's verdict (``opkit.conformance.random_judging``): types and shapes, the range
    and, for a large enough sample, the moments its text gives; notes say what was skipped."""
    op = case.op if case.domain == "ai.onnx" else ""
    try:
        notes = random_judging.judge(op, case.kernel_attributes(), dict(case.inputs), expected, actual)
    except Mismatch as mm:
        return Exec(MISMATCH, mm.message, {"what": mm.what, **mm.details}, expected, actual)
    return Exec(PASS, "", {"statistics": notes} if notes else {}, expected, actual)


def example_exec(version: OpVersion, case: Case, example, expected: tuple, result: Result) -> Exec:
    """An example's verdict. A random op's example fixes only its outputs' types and shapes (the
    values are the runtime's own draw): ``check_outputs`` judges the draw as the text allows."""
    if result.kind != OK:
        return result_exec(result)
    return check_outputs(version, case, expected, result.outputs, precision=(example.rtol, example.atol))


def result_exec(result: Result) -> Exec:
    details = {"stage": result.stage} if result.stage else {}
    if getattr(result, "no_kernel", False):  # (a Result from an older pickled worker has no field)
        details["kernel"] = "missing"
    if result.output:  # what the runtime wrote as it crashed or hung: its own words
        details["runtime_output"] = result.output
    if result.kind == CRASH and getattr(result, "replay", None):  # how the crash was confirmed
        details["crash_replay"] = {k: v for k, v in result.replay.items() if k in ("reproduced", "history")}
    return Exec(result.kind, result.message, details)


def failure_class(ex: Exec, case: Case | None = None) -> tuple:
    """What makes two failures of one binding the same for ``Runner.search``: the outcome, the
    message class of root causes (``causes``) and the trigger (``triggers``): a second "values
    differ" on ordinary values is the same bug reached by other values; a NaN position, an error,
    a crash, or the same message met with a NaN or infinity, or another broken rule is another
    one. ``case``: the case that failed, when ``ex`` does not name it."""
    from ..results.causes import classify_message

    details = ex.details or {}
    return (ex.outcome, classify_message(ex.outcome, ex.message, details),
            trigger(ex.outcome, details, ex.case if ex.case is not None else case))


def _valid(case: Case) -> bool:
    """Whether the reference kernel computes ``case``: the spec's rules admit it."""
    try:
        harness.expected_outputs(case)
    except Exception:  # noqa: BLE001 - excluded by a rule, or a case the kernel cannot compute
        return False
    return True


def _broken_rule(case: Case) -> str:
    """What the reference kernel says of a hostile case: the rule it breaks, or that it is valid."""
    try:
        harness.expected_outputs(case)
    except harness.Invalid as inv:
        return str(inv)[:300]
    except Exception as exc:  # noqa: BLE001 - no kernel, or the kernel fails on it: say so
        return f"the reference kernel fails on it too: {type(exc).__name__}: {str(exc)[:200]}"
    return VALID_INPUT
