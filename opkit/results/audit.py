"""The audit of findings: ``conformance/audit.yaml`` and the verdict on each root cause.

The audit is hand-written: its entries say, for causes a second opinion does not settle, whether
the finding is real and why (see :mod:`opkit.emit.findings` for the file's format). ``judged``
gives a cause's status (the audit's verdict, or real when second opinions or a dead runtime
process confirm every case, else unaudited); the findings pages and recall both go by it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.jsonfiles import JSONFileError
from .causes import Cause
from .record import CaseRecord
from .verdicts import AGREES_WITH_OPKIT, ALSO_FAILS, DIFFERS_FROM_BOTH, needs_review

# the verdicts of an engine that computed the case (whatever its values): what confirms a refusal
COMPUTED = (AGREES_WITH_OPKIT, DIFFERS_FROM_BOTH)

AUDIT = "conformance/audit.yaml"
VERDICTS = ("real", "opkit", "ambiguous")


class AuditError(JSONFileError):
    """conformance/audit.yaml is not a list of valid entries (one line naming the file and entry;
    a JSONFileError so that ``opkit gen`` reports it like a broken committed report)."""


@dataclass(frozen=True)
class AuditEntry:
    op: tuple[str, ...]  # the ops one mechanism fails (onnxruntime's float16 Cast insertion: a dozen ops)
    verdict: str
    why: str
    outcome: str | None = None
    match: str | None = None
    feature: str | None = None
    backend: str | None = None
    domain: str | None = None  # an op name both ai.onnx and com.microsoft have (Attention, QLinearConv)

    def covers(self, cause: Cause) -> bool:
        return (cause.op in self.op and (self.outcome is None or self.outcome == cause.outcome)
                and (self.domain is None or self.domain == cause.domain)
                and (self.match is None or self.match in cause.signature)
                and (self.feature is None or self.feature == cause.feature)
                and (self.backend is None or self.backend == cause.backend))


def load_audit(root: str) -> tuple[AuditEntry, ...]:
    path = os.path.join(root, AUDIT)
    if not os.path.exists(path):
        return ()
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{AUDIT}:{mark.line + 1}:{mark.column + 1}" if mark else AUDIT
        raise AuditError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        return ()
    if not isinstance(data, list):
        raise AuditError(f"{AUDIT}: must be a list of entries (op, verdict, why ...)")
    keys = {"op", "verdict", "why", "outcome", "match", "feature", "backend", "domain"}
    entries = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not {"op", "verdict", "why"} <= set(item) or set(item) - keys:
            raise AuditError(f"{AUDIT}: entry {i + 1} needs op, verdict and why (and only {', '.join(sorted(keys))})")
        if item["verdict"] not in VERDICTS:
            raise AuditError(f"{AUDIT}: entry {i + 1} ({item['op']}): verdict must be one of {', '.join(VERDICTS)}")
        ops = item["op"] if isinstance(item["op"], list) else [item["op"]]
        if not ops or not all(isinstance(op, str) and op for op in ops):
            raise AuditError(f"{AUDIT}: entry {i + 1}: op must be an op name or a list of them")
        entries.append(AuditEntry(op=tuple(ops), **{k: str(v) for k, v in item.items() if k != "op"}))
    return tuple(entries)


def died_of_a_signal(case: CaseRecord) -> bool:
    """A robustness case whose runtime process died of a signal: no input may do that, whatever
    the spec says of its result (a memory-limit kill or a hang still needs an audit: the input may
    have asked for that much work)."""
    return (case.suite == "robustness" and case.outcome == "crash"
            and "killed by signal" in (case.message or ""))


def reproduced(case: CaseRecord) -> bool:
    """A crash that happened again in a fresh process, alone or after the sequence recorded with
    it (conformance.crash_confirmation); a report made before crashes were replayed says nothing."""
    replay = (case.details or {}).get("crash_replay") or {}
    said = str(replay.get("reproduced") or "")
    return bool(said) and not said.startswith("no")


def _confirmed(case: CaseRecord) -> bool:
    """A case whose second opinion computes opkit's expected outputs (and none sides against it),
    a refusal of an input another engine computes (the case satisfies every rule of the spec: it was
    drawn valid and opkit's kernel computed it), a hang or memory kill on a hostile input another
    engine computes within the same limits, or a runtime process that died on a hostile input.
    A crash counts only once it has been reproduced in a fresh process (``reproduced``): a worker
    that ran other cases first may have died of what they left behind."""
    if case.outcome == "crash" and not reproduced(case):
        return False
    opinions = case.second_opinion or ()
    if case.suite == "robustness" and case.outcome in ("timeout", "crash") and not died_of_a_signal(case):
        # a hang or a memory kill on a hostile input: the runtime's once another engine computed
        # the same input within the same limits (the input does not ask for that much work); an
        # engine that also hangs, or refuses it, leaves it to the audit
        return (any(o.get("verdict") in COMPUTED for o in opinions)
                and not any(o.get("verdict") == ALSO_FAILS for o in opinions))
    if case.outcome == "refused":
        return any(o.get("verdict") in COMPUTED for o in opinions) and not needs_review(opinions)
    return died_of_a_signal(case) or (any(o.get("verdict") == AGREES_WITH_OPKIT for o in opinions)
                           and not needs_review(opinions))


def judged(cause: Cause, cases: list[CaseRecord], audit: tuple[AuditEntry, ...]) -> tuple[str, str, int]:
    """(status, why, cases confirmed by a second opinion) of a cause: the audit's verdict when an
    entry covers it; else real when every case's second opinion agrees with opkit; else unaudited
    (some cases may still be confirmed: the count says how many)."""
    confirmed = sum(1 for c in cases if _confirmed(c))
    entry = next((e for e in audit if e.covers(cause)), None)
    if entry is not None:
        return entry.verdict, entry.why, confirmed
    if confirmed == len(cases) and cases and all(died_of_a_signal(c) for c in cases):
        return "real", "the runtime's process died on an input: a runtime may refuse any input, never crash", confirmed
    if confirmed == len(cases) and cases and cause.outcome == "refused":
        return "real", ("the input satisfies every rule of the spec and the second opinion computes it: the runtime "
                        "refuses valid input of an op and type it implements"), confirmed
    if confirmed == len(cases):
        return "real", "the second opinion computes opkit's expected outputs", confirmed
    return "unaudited", "", confirmed
