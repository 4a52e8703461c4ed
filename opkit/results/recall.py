"""Recall: does a report find the runtime bugs someone else already knows about?

A list of *known failures* (a runtime's since-fixed bugs, or a peer project's list of a runtime's
known failures) is matched against the cases of an ``opkit test`` report. A known failure names an
op, optionally its versions, a type binding (any subset of the op's type parameters) and the
outcomes that show it (a missing type registration shows as ``unsupported``, a wrong value as
``mismatch``, a crash as ``crash`` ...), optionally a piece of the runtime's message.

It is *found* when a case of the report matches all of that and the case is charged to the runtime
(a failure opkit's audit calls its own mistake is not a finding). It is *fixed* in a report of a
newer release that tested the same op version and binding without such a failure.

Pure functions over dicts: the files are read by ``load_known`` and the reports by the caller.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .outcomes import CRASH, ERROR, FAILING, MISMATCH, REFUSED, TIMEOUT, UNSUPPORTED, XFAIL

# what each class of bug looks like in a report (an expected failure, xfail, was seen too)
CLASS_OUTCOMES = {
    "registration": (UNSUPPORTED, REFUSED),  # a kernel registered for a type that then refuses it
    "wrong-value": (MISMATCH, XFAIL),
    "error": (ERROR, REFUSED, UNSUPPORTED, XFAIL),
    "crash": (CRASH, TIMEOUT),
    "any": (*FAILING, XFAIL),
}
# opkit's verdict on an entry (README of conformance/recall/); the benchmarks count only "deviates",
# so a misspelt verdict would silently drop an entry from what they count
VERDICTS = ("deviates", "undefined", "rounding", "fixed")
# numpy and peer spellings of ONNX element types
_ALIASES = {"float32": "float", "float64": "double", "<U0": "string", "str": "string", "bool_": "bool"}


class KnownFailureError(ValueError):
    """A known-failure file entry that cannot be matched (one line naming the file and entry)."""


@dataclass(frozen=True)
class KnownFailure:
    id: str
    op: str
    cls: str  # registration | wrong-value | error | crash | any
    versions: tuple[int, ...] = ()  # empty: any version
    types: tuple[tuple[str, str], ...] = ()  # (type parameter, element type); empty: any binding
    any_type: str = ""  # the element type of some parameter (the peer names one dtype per test)
    message: str = ""  # a piece of the runtime's message that must appear (case-insensitive)
    suite: str = ""  # only cases of this suite
    domain: str = "ai.onnx"
    note: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def outcomes(self) -> tuple[str, ...]:
        return CLASS_OUTCOMES[self.cls]


def element(name: str) -> str:
    name = str(name).strip()
    if name.startswith("tensor(") and name.endswith(")"):
        name = name[7:-1]
    return _ALIASES.get(name, name)


def parse_entry(item: dict, where: str) -> KnownFailure:
    if not isinstance(item, dict) or not item.get("id") or not item.get("op"):
        raise KnownFailureError(f"{where}: needs at least id and op")
    cls = item.get("class", "any")
    if cls not in CLASS_OUTCOMES:
        raise KnownFailureError(f"{where} ({item['id']}): class must be one of {', '.join(CLASS_OUTCOMES)}")
    versions = item.get("versions") or ()
    if isinstance(versions, int):
        versions = (versions,)
    if item.get("verdict", "deviates") not in VERDICTS:
        raise KnownFailureError(f"{where} ({item['id']}): verdict must be one of {', '.join(VERDICTS)}")
    binding = item.get("binding") or {}
    if not isinstance(binding, dict):
        raise KnownFailureError(f"{where} ({item['id']}): binding must map type parameters to types")
    known = {"id", "op", "class", "versions", "binding", "any_type", "message", "suite", "domain", "note"}
    return KnownFailure(
        id=str(item["id"]), op=str(item["op"]), cls=cls, versions=tuple(int(v) for v in versions),
        types=tuple(sorted((str(k), element(v)) for k, v in binding.items())),
        any_type=element(item["any_type"]) if item.get("any_type") else "",
        message=str(item.get("message") or ""), suite=str(item.get("suite") or ""),
        domain=str(item.get("domain") or "ai.onnx"), note=str(item.get("note") or ""),
        extra={k: v for k, v in item.items() if k not in known})


def load_known(path: str) -> tuple[dict, tuple[KnownFailure, ...]]:
    """(the file's header fields, its entries). The file is YAML: a mapping with ``failures``."""
    import yaml

    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        raise KnownFailureError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except OSError as exc:
        raise KnownFailureError(f"{name}: cannot be read ({exc.strerror})") from None
    if not isinstance(data, dict) or not isinstance(data.get("failures"), list):
        raise KnownFailureError(f"{name}: must be a mapping with a 'failures' list")
    entries = tuple(parse_entry(item, f"{name}: entry {i + 1}") for i, item in enumerate(data["failures"]))
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise KnownFailureError(f"{name}: id {dup!r} is used twice")
    return {k: v for k, v in data.items() if k != "failures"}, entries


def _binding_matches(known: KnownFailure, types: dict) -> bool:
    elements = {k: element(v) for k, v in (types or {}).items()}
    if any(elements.get(param) != want for param, want in known.types):
        return False
    return not known.any_type or known.any_type in elements.values()


def tested(known: KnownFailure, case: dict) -> bool:
    """The case ran the op version and binding the known failure is about."""
    return (case.get("op") == known.op and case.get("domain", "ai.onnx") == known.domain
            and (not known.versions or case.get("version") in known.versions)
            and (not known.suite or case.get("suite") == known.suite)
            and _binding_matches(known, case.get("types") or {}))


def shows(known: KnownFailure, case: dict) -> bool:
    """The case is a failure of the kind the known failure is."""
    if case.get("outcome") not in known.outcomes:
        return False
    return not known.message or known.message.lower() in (case.get("message") or "").lower()


@dataclass(frozen=True)
class Match:
    known: KnownFailure
    status: str  # found | missed | not-tested | opkit (found, but opkit's audit calls it its own)
    cases: int  # matching failing cases
    tested: int  # cases of that op version and binding
    example: str  # a matching case's message, or why not found

    def to_json(self) -> dict:
        return {"id": self.known.id, "op": self.known.op, "status": self.status, "cases": self.cases,
                "tested": self.tested, "example": self.example}


def first_broken_release(known: KnownFailure) -> str:
    """The first release a known bug's ``broken`` list names, without the note a list entry may
    carry ("1.16.3 (keepdims=0 only)" is release 1.16.3); "?" when it names none."""
    import re

    for item in known.extra.get("broken") or ():
        found = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", str(item))
        if found:
            return found.group(1)
    return "?"


def findings(known: KnownFailure, cases: list[dict], own=lambda case: False) -> list[dict]:
    """The cases of a report that fail in ``known``'s way and that opkit's audit does not call its
    own: what ``match`` counts as finding it. ``cases``: the report's cases as loaded (JSON; the
    recall benchmark replays the bundles of those returned), read by key, not as records."""
    return [c for c in cases if tested(known, c) and c.get("outcome") != "untested" and shows(known, c)
            and not own(c)]


def settle(replays: list[int | None]) -> str:
    """Whether a bug found on its broken release is the one the fixed release fixed, from the exit
    status of each finding's repro bundle run on the fixed release (0: the discrepancy is gone, 1:
    it reproduces, 3: the recorded failure is gone but the case fails another way, anything else
    or None: the bundle cannot tell). One finding gone is enough: the same binding may hold a
    second, still-open bug of the same kind. "changed" (a finding's failure gone, its case now
    failing another way: ReduceMax's error on an empty axis in 1.16, a wrong shape for the same
    case in 1.31) counts as the bug fixed: what the finding charged is no longer so."""
    if any(rc == 0 for rc in replays):
        return "gone"
    if any(rc == 3 for rc in replays):
        return "changed"
    if replays and all(rc is not None and rc not in (0, 2, 3) for rc in replays):
        return "reproduces"
    return "cannot tell"


FIXED_SETTLEMENTS = ("gone", "changed")  # what settle says of a known bug the fixed release fixed


def match(known: KnownFailure, cases: list[dict], own=lambda case: False) -> Match:
    """Whether ``cases`` (one report's) find ``known``; ``own(case)`` is true for a failure opkit's
    audit calls its own mistake (never counted as finding a runtime bug)."""
    ran = [c for c in cases if tested(known, c) and c.get("outcome") != "untested"]
    if not ran:
        return Match(known, "not-tested", 0, 0, "no case of this op version and binding ran")
    hits = [c for c in ran if shows(known, c)]
    real = [c for c in hits if not own(c)]
    if real:
        return Match(known, "found", len(real), len(ran), (real[0].get("message") or "")[:200])
    if hits:
        return Match(known, "opkit", len(hits), len(ran), "only failures opkit's audit calls its own")
    seen = sorted({c.get("outcome") for c in ran})
    return Match(known, "missed", 0, len(ran), f"{len(ran)} cases ran: {', '.join(seen)}")


def recall(matches: list[Match]) -> tuple[int, int]:
    """(found, known) over the matches."""
    return sum(1 for m in matches if m.status == "found"), len(matches)


def audit_judge(report: dict, audit) -> callable:
    """``own(case)`` for ``match``: the case's cause is judged opkit's own by the audit."""
    from .audit import judged
    from .causes import causes

    from .record import CaseRecord, report_records

    verdict: dict[tuple, str] = {}
    for cause in causes(report_records(report), outcomes=FAILING):
        verdict[(cause.backend, cause.op, cause.outcome, cause.signature, cause.feature)] = judged(cause, [], audit)[0]

    def own(case: dict | CaseRecord) -> bool:
        """``case``: one of the report's cases (its JSON form, as ``match`` passes it) or a record."""
        from .causes import input_feature, message_class

        record = case if isinstance(case, CaseRecord) else CaseRecord.from_json(case)
        key = (record.backend, record.op, record.outcome, message_class(record), input_feature(record))
        return verdict.get(key) == "opkit"

    return own
