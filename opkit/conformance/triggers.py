"""What sets a failure of one type binding apart from another with the same outcome and message.

Two bugs of one binding often fail the same way: onnxruntime 1.16 raised the same "Size of scale
and bias must match" error for an empty X (still so in 1.31) and for a broadcast Scale (fixed), and
died of the same SIGFPE on int32 x / 0 (fixed) and INT_MIN / -1 (not). What tells them apart is the
input they were met with: a zero-size tensor, a NaN or an infinity among the values, or, for a
hostile input of the robustness suite, the rule of the spec it breaks (not the kind of change that
broke it: one crash is met by several kinds, and each would be reported again). ``Runner.search`` keeps
searching a binding past a failure for one that differs in outcome, message *or* trigger.
"""

from __future__ import annotations

import re

import numpy as np

EMPTY = "zero-size input"
NON_FINITE = "NaN or infinity in an input"
VALID = "valid input"

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


def regime(case, values: bool = True) -> str:
    """The input regime of a case: a zero-size tensor among its inputs, else (with ``values``) a
    NaN or infinity, else "" (ordinary values)."""
    inputs = getattr(case, "inputs", None)  # None: no case, or a robustness draw (case, seed)
    if inputs is None:
        return ""
    arrays = [a for _, value in inputs for a in _arrays(value)]
    if any(a.size == 0 for a in arrays):
        return EMPTY
    if values and any(_non_finite(a) for a in arrays):
        return NON_FINITE
    return ""


def broken_rule(breaks: str) -> str:
    """The rule named by what the reference kernel says of a hostile case (``_broken_rule`` in the
    runner): "rule V1", "valid input", or "" when the kernel could not tell."""
    if breaks.startswith("a valid input"):
        return VALID
    found = _RULE.search(breaks)
    return f"rule {found.group(1)}" if found else ""


def trigger(outcome: str, details: dict, case) -> str:
    """What a failure was met with, for telling two failures of one binding apart: nothing for a
    refusal at load (the values were never asked), the broken rule for a hostile input, else the
    input regime; NaN and infinity only for wrong values (an error or a crash met with a NaN
    among the values is, in practice, the one met without: searching for it again doubled the
    cost of such bindings and found the same bug)."""
    if details.get("stage") == "load" or outcome == "unsupported":
        return ""
    if "breaks" in details:
        return broken_rule(str(details["breaks"]))
    return regime(case, values=outcome == "mismatch")


def masked_by(cls: tuple, seen) -> bool:
    """Whether a failure of class ``cls`` (outcome, message class, trigger) is one already found:
    the same class, or the same outcome and message met with an empty tensor or a NaN when it was
    found with ordinary values (a bug of ordinary values shows with a NaN among them too; the
    reverse is not so: QuantizeLinear's inf -> 0 does not explain its rounding of ties)."""
    if cls in seen:
        return True
    return cls[2] in (EMPTY, NON_FINITE) and (cls[0], cls[1], "") in seen
