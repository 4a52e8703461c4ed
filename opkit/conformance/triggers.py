"""What sets a failure of one type binding apart from another with the same outcome and message.

Two bugs of one binding often fail the same way: onnxruntime 1.16 died of the same SIGFPE on int32
x / 0 (fixed) and INT_MIN / -1 (not), and its QuantizeLinear float16 gave wrong values both for an
infinity (0 for 255) and for ties (rounded up). What tells them apart is the input they were met
with: a NaN or an infinity among the values of a wrong-values failure, or, for a hostile input of
the robustness suite, the rule of the spec it breaks (not the kind of change that broke it: one
crash is met by several kinds, and each would be reported again). ``Runner.search`` keeps
searching a binding past a failure for one that differs in outcome, message *or* trigger.
"""

from __future__ import annotations

import re

import numpy as np

from ..results.outcomes import MISMATCH, REFUSED, UNSUPPORTED

NON_FINITE = "NaN or infinity in an input"
VALID = "valid input"
VALID_INPUT = "a valid input: the reference kernel computes it"  # what details.breaks says of one

_RULE = re.compile(r"\[([^\]]+)\]:")  # KernelValidationError: "Op-V [rule]: message"


def _arrays(value):
    if value is None:
        return
    if isinstance(value, (list, tuple)):  # a variadic input or a sequence
        for item in value:
            yield from _arrays(item)
        return
    yield np.asarray(value)


def _non_finite(array: np.ndarray) -> bool:
    if array.dtype.kind in "biuOSU":
        return False
    try:  # float types, ml_dtypes' bfloat16 and float8 included
        return not bool(np.all(np.isfinite(array)))
    except TypeError:
        return False


def regime(case) -> str:
    """The input regime of a case: a NaN or infinity among its inputs, else "" (ordinary values).
    An empty tensor is not a regime of its own: hypothesis shrinks towards empty tensors, so a
    failure on every input (a missing kernel, a process that always dies) is recorded with an
    empty one, and its ordinary cases were then searched for and reported again, in every
    binding; a NaN, which shrinking removes, does not do that."""
    inputs = getattr(case, "inputs", None)  # None: no case, or a robustness draw (case, seed)
    if inputs is None:
        return ""
    arrays = [a for _, value in inputs for a in _arrays(value)]
    if any(a.size and _non_finite(a) for a in arrays):
        return NON_FINITE
    return ""


def broken_rule(breaks: str) -> str:
    """The rule named by what the reference kernel says of a hostile case (``_broken_rule`` in the
    runner): "rule V1", "valid input", or "" when the kernel could not tell."""
    if breaks.startswith(VALID_INPUT):
        return VALID
    found = _RULE.search(breaks)
    return f"rule {found.group(1)}" if found else ""


def trigger(outcome: str, details: dict, case) -> str:
    """What a failure was met with, for telling two failures of one binding apart: nothing for a
    refusal at load (the values were never asked), the broken rule for a hostile input, else the
    input regime; NaN and infinity only for wrong values (an error or a crash met with a NaN
    among the values is, in practice, the one met without: searching for it again doubled the
    cost of such bindings and found the same bug)."""
    if details.get("stage") == "load" or outcome in (UNSUPPORTED, REFUSED):
        return ""
    if "breaks" in details:
        return broken_rule(str(details["breaks"]))
    return regime(case) if outcome == MISMATCH else ""


def masked_by(cls: tuple, seen) -> bool:
    """Whether a failure of class ``cls`` (outcome, message class, trigger) is one already found:
    the same class, or the same outcome and message met with a NaN when it was found with ordinary
    values (a bug of ordinary values shows with a NaN among them too; the reverse is not so:
    QuantizeLinear's inf -> 0 does not explain its rounding of ties)."""
    if cls in seen:
        return True
    return cls[2] == NON_FINITE and (cls[0], cls[1], "") in seen
