"""Refused or unsupported: what a runtime's refusal of a valid case is charged as.

A runtime that has no kernel for an op or a type does not implement it: ``unsupported``, a coverage
fact. A runtime that implements the op and type and raises on an input every rule of the spec
allows (ScatterElements' reduction 'mul' for float16, LSTM's layout = 1, dilations with SAME
padding) fails it: ``refused``, charged like an error. The backend's own words decide when they can
(``Backend.lacks_kernel``: the worker then answers REFUSED or UNSUPPORTED with ``no_kernel``);
when they cannot, the binding decides: a refusal of a binding of which another case ran (passed,
or failed in any other way) is a refusal of that input, not of the op or the type. A model the
converter in front of the runtime could not translate (``ConversionFailed``) is neither: the worker
says no kernel was asked, so it is never charged as refused, and it is recorded as *unconverted*.
"""

from __future__ import annotations

from ..cases.case import Case
from ..results.outcomes import REFUSED, UNCONVERTED, UNSUPPORTED, UNTESTED
from .case_exec import Exec


def binding_key(domain: str, op: str, since: int, types) -> tuple:
    """The (op version, type binding) a refusal is weighed against."""
    items = types.items() if isinstance(types, dict) else types
    return domain, op, since, tuple(sorted(items))


def ran(ex: Exec) -> bool:
    """Whether the backend ran the case's model (anything but a refusal for want of a kernel, a
    model the converter could not translate, or a case opkit could not ask)."""
    return ex.outcome not in (UNSUPPORTED, UNCONVERTED, UNTESTED)


def undecided(ex: Exec) -> bool:
    """An UNSUPPORTED whose words did not say that the kernel is missing: refused when the binding
    turns out to be implemented."""
    return ex.outcome == UNSUPPORTED and (ex.details or {}).get("kernel") != "missing"


def as_refused(ex: Exec, why: str) -> Exec:
    """``ex`` (undecided) charged as a refusal of valid input, saying why."""
    ex.outcome = REFUSED
    ex.details = dict(ex.details or {}, refused=why)
    return ex


def refused_attributes(case: Case | None, version) -> str:
    """The attribute values the refused case sets off their defaults, for the finding's line
    ("reduction='mul'"); "" when it sets none (the refusal is of a type or shape)."""
    if case is None:
        return ""
    defaults = {a.name: a.default for a in version.attributes if a.has_default}
    parts = [f"{name}={value!r}" for name, value in case.attributes
             if not (name in defaults and defaults[name] == value)]
    return ", ".join(parts)[:200]


class Refusals:
    """The bindings a ``Runner`` has seen run (a mixin: keeps ``_implemented``)."""

    def implemented(self, key: tuple) -> bool:
        return key in self.__dict__.setdefault("_implemented", set())

    def note(self, key: tuple, ex: Exec) -> Exec:
        """Remember that the binding ran when it did, and charge an undecided refusal of a binding
        that is known to run as ``refused``; returns ``ex``."""
        seen = self.__dict__.setdefault("_implemented", set())
        if ran(ex):
            seen.add(key)
        elif undecided(ex) and key in seen:
            as_refused(ex, "another case of this op version and type binding ran")
        return ex
