"""Which op versions ``opkit test`` runs: the ``--op`` selectors and ``--opset``.

A selector names an op and, optionally, which of its versions (``since`` is the opset a version
was introduced in, as in the findings' ``Add-14``):

  ``Add``, ``com.microsoft::Trilu``   every version of the op
  ``Add-14``                          the version introduced in opset 14 (exactly)
  ``Add@13``                          the version a model of opset 13 uses
  ``Add@7..13``, ``Add@13..``         every version a model of one of these opsets uses

``--opset N`` (ai.onnx) or ``--opset DOMAIN:N`` keeps, of every selected op of that domain, the
version a model of opset N uses, and drops the ops that do not exist at N. Both narrow one another.

Pure parsing and selection: the caller loads the specs and reports a ``SelectionError`` as a usage
error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_DOMAIN = "ai.onnx"
_SELECTOR = re.compile(r"^(?:(?P<domain>[A-Za-z0-9_.]+)::)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                       r"(?:-(?P<since>\d+)|@(?P<low>\d*)(?P<range>\.\.)?(?P<high>\d*))?$")


class SelectionError(ValueError):
    """A selector or an --opset value that names nothing; the message says what to give instead."""


@dataclass(frozen=True)
class OpSelector:
    """One ``--op`` value, parsed."""

    text: str
    name: str
    domain: str | None = None  # None: any domain that has the op
    since: int | None = None  # Add-14
    low: int | None = None  # Add@13.. (None: from the first opset)
    high: int | None = None  # Add@..14 (None: to the newest opset)
    by_opset: bool = False  # an @ form was given

    @property
    def all_versions(self) -> bool:
        return self.since is None and not self.by_opset


def parse_selector(text: str) -> OpSelector:
    """Parse one ``--op`` value; SelectionError names the accepted forms."""
    m = _SELECTOR.match(text.strip())
    if not m:
        raise SelectionError(f"--op {text!r}: not an op selector; give Op, DOMAIN::Op, Op-SINCE (Add-14), "
                             "Op@OPSET (Add@13) or Op@LOW..HIGH (Add@7..13)")
    since = int(m["since"]) if m["since"] else None
    by_opset = "@" in text
    low = int(m["low"]) if m["low"] else None
    high = int(m["high"]) if m["high"] else None
    if by_opset and not m["range"]:
        if low is None:
            raise SelectionError(f"--op {text!r}: '@' needs an opset (Add@13) or a range (Add@7..13)")
        high = low
    if low is not None and high is not None and low > high:
        raise SelectionError(f"--op {text!r}: the range {low}..{high} is empty; give LOW..HIGH with LOW <= HIGH")
    return OpSelector(text, m["name"], m["domain"], since, low, high, by_opset)


def parse_opsets(values: list[str] | None) -> dict[str, int]:
    """``--opset`` values (``N`` for ai.onnx, ``DOMAIN:N``) as {domain: opset}."""
    out: dict[str, int] = {}
    for value in values or ():
        domain, _, number = value.strip().rpartition(":")
        domain = domain or DEFAULT_DOMAIN
        if not number.isdigit() or int(number) < 1:
            raise SelectionError(f"--opset {value!r}: give a positive opset number (18) or DOMAIN:N (ai.onnx.ml:3)")
        if domain in out and out[domain] != int(number):
            raise SelectionError(f"--opset {value!r}: a second opset for {domain} ({out[domain]} given before)")
        out[domain] = int(number)
    return out


def _name(spec) -> str:
    return spec.name if spec.domain == DEFAULT_DOMAIN else f"{spec.domain}::{spec.name}"


def _versions_between(spec, low: int | None, high: int | None) -> list[int]:
    """The versions a model of any opset in low..high uses."""
    sinces = [v.since for v in spec.versions]
    first = spec.version_at(low) if low is not None else None
    out = [s for s in sinces if (low is None or s > low) and (high is None or s <= high)]
    if first is not None:
        out.append(first.since)
    return sorted(set(out))


def selected_versions(selector: OpSelector, spec) -> tuple[int, ...]:
    """The versions of ``spec`` a selector names; SelectionError when it names none."""
    sinces = [v.since for v in spec.versions]
    listed = ", ".join(str(s) for s in sinces)
    if selector.all_versions:
        return tuple(sinces)
    if selector.since is not None:
        if selector.since not in sinces:
            raise SelectionError(f"--op {selector.text!r}: {_name(spec)} has no version introduced in opset "
                                 f"{selector.since} (its versions: {listed}); {_name(spec)}@{selector.since} "
                                 "selects the version a model of that opset uses")
        return (selector.since,)
    found = _versions_between(spec, selector.low, selector.high)
    if not found:
        span = selector.text.partition("@")[2]
        raise SelectionError(f"--op {selector.text!r}: {_name(spec)} does not exist at opset {span} "
                             f"(introduced in opset {sinces[0]}; its versions: {listed})")
    return tuple(found)


def narrow_to_opsets(spec, versions: tuple[int, ...], opsets: dict[str, int]) -> tuple[int, ...]:
    """Of ``versions``, the one a model of the --opset given for the spec's domain uses (all of
    them when no opset is given for that domain; none when the op does not exist there)."""
    opset = opsets.get(spec.domain)
    if opset is None:
        return versions
    used = spec.version_at(opset)
    return (used.since,) if used is not None and used.since in versions else ()


__all__ = ["OpSelector", "SelectionError", "narrow_to_opsets", "parse_opsets", "parse_selector", "selected_versions"]
