"""The second opinion's verdict vocabulary, and reading verdicts back from reports.

The engine (:mod:`opkit.conformance.second_opinion`) asks other engines about each finding and
records one of these verdicts per engine:

- ``agrees with opkit``: it computes opkit's expected outputs (the runtime is the odd one out);
- ``agrees with the runtime``: it computes what the runtime computed, not what opkit expects;
- ``differs from both``: its outputs match neither;
- ``also fails``: the runtime failed to run the case and so does this engine (a shared limitation,
  or an input the spec does not allow after all);
- ``cannot run it``: it does not support the op or type, or fails where the runtime computed.

A finding whose second opinions side with the runtime, or also fail, is flagged for review
(``needs_review``): it is shown apart in the terminal and on the scoreboard.
"""

from __future__ import annotations

AGREES_WITH_OPKIT = "agrees with opkit"
AGREES_WITH_RUNTIME = "agrees with the runtime"
DIFFERS_FROM_BOTH = "differs from both"
ALSO_FAILS = "also fails"
CANNOT_RUN = "cannot run it"
VERDICTS = (AGREES_WITH_OPKIT, AGREES_WITH_RUNTIME, DIFFERS_FROM_BOTH, ALSO_FAILS, CANNOT_RUN)
# the verdicts that make a finding doubtful: someone should look before it is reported upstream
DOUBTFUL = (AGREES_WITH_RUNTIME, ALSO_FAILS)


def needs_review(opinions) -> bool:
    """True when any second opinion makes the finding doubtful (JSON dicts or Opinions)."""
    return any((o["verdict"] if isinstance(o, dict) else o.verdict) in DOUBTFUL for o in opinions or ())


def opinion_lines(case: dict) -> list[str]:
    """One line per second opinion on a failure (a report case or a cause's example); doubtful
    ones start with REVIEW."""
    out = []
    for o in case.get("second_opinion") or ():
        flag = "REVIEW: " if o["verdict"] in DOUBTFUL else ""
        detail = f" ({o['message'][:160]})" if o.get("message") else ""
        out.append(f"{flag}second opinion: {o['backend']} {o['verdict']}{detail}")
    return out
