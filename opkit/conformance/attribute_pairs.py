"""The differential suite's attribute-pair rows: after the type bindings of an op version are
searched, one case per row of the version's pairwise covering array over its attribute levels
(``opkit.cases.covering``), so that every pair of values of two attributes (a mode and a flag, two
modes) is asked at least once, whatever the random draws met.

Per row: a binding from those searched (round-robin, so types vary; bindings the backend refused
last), one valid case drawn with the row pinned (``cases(..., pinned=row)``: seeded, at most
ROW_DRAWS draws, the next binding once when none is valid), run like any drawn case
(``execute_differential``). A failure is recorded as the example ``attribute pairs`` with the row's
values in its details, once per failure class of the op version (classes the search already found
are not recorded again); the rows failing the same way are counted in the record. A row with no
valid case is unreachable: a rule excludes it, or the generator could not make it (a family hook
that sets the attribute itself never drew the pinned value). What was reached goes to the report as
the version's attribute coverage (``opkit.results.attribute_coverage``).
"""

from __future__ import annotations

import time

from ..spec.model import OpSpec, OpVersion
from ..cases import cases
from ..cases.case import Case, NotGeneratable
from ..cases.covering import covering_array, label, pair_label, pairs_of
from . import harness
from .case_exec import EXPENSIVE, Exec, failure_class
from .determinism import local_constants_off
from .hypothesis_search import _stable_seed
from .refusals import binding_key, refused_attributes
from ..results.attribute_coverage import MAX_MISSING, coverage_item
from ..results.outcomes import PASS, REFUSED, UNSUPPORTED, UNTESTED
from .stopping import check_stop

EXAMPLE = "attribute pairs"  # the records' example name
ROW_DRAWS = 12  # draws per row and binding (a family hook's draws that miss the pin count)
ROW_BINDINGS = 2  # bindings a row tries before it is unreachable
MAX_EXPENSIVE_ROWS = 2  # crashes and hangs the rows of a version may meet (each restarts the worker)
# outcomes of a binding's search that make it the last choice for a row: the backend refused it,
# or opkit could not draw it ("refused": the runtime declines the binding by design)
_AVOID = (UNSUPPORTED, UNTESTED, REFUSED)


class _Found(BaseException):
    """Ends a row's draws at its first valid case (hypothesis re-raises non-Exception errors at once)."""

    def __init__(self, case: Case, ex: Exec):
        self.case, self.ex = case, ex


def run_attribute_pairs(runner, spec: OpSpec, version: OpVersion, bindings: list[dict]) -> None:
    """Run the rows of ``version``'s covering array on ``runner``'s backend (see the module doc);
    ``bindings``: those the differential suite searched."""
    array = covering_array(version)
    if not array.rows or not bindings:
        return
    t_start = time.perf_counter()
    bindings = _ordered(runner, spec, version, bindings)
    known = runner._shrunk_classes.get((spec.domain, spec.name, version.since, "differential"), set())
    failures: dict[tuple, list] = {}  # failure class -> [binding, Exec, case, row, rows failing so, runs]
    status: list[tuple[bool, str]] = []  # per row: (ran, why not)
    tally = {"expensive": 0, "failing": 0}
    rows = list(array.rows)
    for k, row in enumerate(rows):
        status.append(_ask_row(runner, spec, version, bindings, row, k, known, failures, tally))
    # a row no case could be made for loses every pair it holds, not only the one a rule excludes:
    # each pair still unreached is asked again alone (the other attributes drawn)
    for k, row in enumerate(_repair_rows(array, rows, status), start=len(rows)):
        rows.append(row)
        status.append(_ask_row(runner, spec, version, bindings, row, k, known, failures, tally))
    failing = tally["failing"]
    for binding, ex, case, row, count, n in failures.values():
        ex.details = dict(ex.details or {}, attribute_pairs={
            "row": {name: label(value) for name, value in row},
            "rows_failing_alike": count,
            "why": "a case of the op version's pairwise covering array over its attribute values "
                   "(every pair of values of two attributes is asked once)"})
        runner._record(spec, version, "differential", EXAMPLE, binding, ex, n, time.perf_counter() - t_start, case)
    _emit_coverage(runner, spec, version, array, rows, status, failing, time.perf_counter() - t_start)


MAX_REPAIR_ROWS = 24  # pairs asked again alone per op version (each costs a draw or a few)


def _repair_rows(array, rows: list, status: list[tuple[bool, str]]) -> list[tuple]:
    """A row of just the two levels of each pair no row that ran covered, in the pairs' order, at
    most MAX_REPAIR_ROWS (the left-out pairs of a capped array too)."""
    reached = {pair for (ran, _), row in zip(status, rows) if ran for pair in pairs_of(row)}
    return [tuple(pair) for pair in array.pairs() if pair not in reached][:MAX_REPAIR_ROWS]


def _ask_row(runner, spec: OpSpec, version: OpVersion, bindings: list[dict], row, k: int, known: set,
             failures: dict, tally: dict) -> tuple[bool, str]:
    """Run one row: a valid case with its levels pinned, on the k-th binding or the next; its
    (ran, why not). A failure is kept in ``failures`` once per class (``tally`` counts the rows
    that failed and the crashes or hangs met)."""
    check_stop()
    if tally["expensive"] >= MAX_EXPENSIVE_ROWS:
        return False, f"not run: the rows met {tally['expensive']} crashes or hangs"
    pinned = dict(row)
    found, why = None, ""
    for attempt in range(min(ROW_BINDINGS, len(bindings))):
        binding = bindings[(k + attempt) % len(bindings)]
        found, why = _row_case(runner, spec, version, binding, pinned, k)
        if found is not None:
            break
    if found is None:
        return False, why
    case, ex = found
    # a refusal of a binding known to run is a refusal of this row's values (``refusals``)
    ex = runner.note(binding_key(spec.domain, spec.name, version.since, binding), ex)
    if ex.outcome == REFUSED:
        ex.details = dict(ex.details or {}, refused_with=refused_attributes(case, version))
    if ex.outcome == UNTESTED:
        return False, f"untested: {ex.message[:200]}"
    if ex.outcome == PASS:
        return True, ""
    tally["expensive"] += ex.outcome in EXPENSIVE
    tally["failing"] += 1
    cls = failure_class(ex, case)
    if cls in known:
        return True, ""  # the search met it already, in this binding or another
    if cls in failures:
        failures[cls][4] += 1
    else:
        failures[cls] = [binding, ex, ex.case if ex.case is not None else case, row, 1, ex.count]
    return True, ""


def _ordered(runner, spec: OpSpec, version: OpVersion, bindings: list[dict]) -> list[dict]:
    """The bindings, those whose search the backend refused (or opkit could not draw) last."""
    outcome = {}
    for r in runner.results:
        if (r.suite, r.op, r.domain, r.version, r.example) == ("differential", spec.name, spec.domain,
                                                               version.since, "differential"):
            outcome.setdefault(tuple(sorted(r.types.items())), r.outcome)
    avoid = [b for b in bindings if outcome.get(tuple(sorted(b.items()))) in _AVOID]
    return [b for b in bindings if b not in avoid] + avoid


def _row_case(runner, spec: OpSpec, version: OpVersion, binding: dict, pinned: dict,
              k: int) -> tuple[tuple[Case, Exec] | None, str]:
    """The row's first valid drawn case, run: ((case, Exec), "") or (None, why there is none).
    First the draws where the family hook (if any) set the pinned values itself; when the hook
    never did, draws with the pins set over the hook's values (then only a valid case counts)."""
    ranks = runner.rank_plan(spec, version, binding, "differential")
    if ranks == ():
        return None, "ONNX shape inference rejects the binding"
    seed = _stable_seed(runner.seed, "attribute pairs", spec.domain, spec.name, version.since,
                        sorted(binding.items()), k)
    why = ""
    for pin_hooks in ((False, True) if version.family else (False,)):
        try:
            strategy = cases(spec, version, types=binding, ranks=ranks, pinned=pinned, pin_hooks=pin_hooks)
            found, state = _first_valid(runner, version, strategy, seed)
        except NotGeneratable as exc:
            return None, f"the generator cannot make it: {exc}"
        if found is not None:
            return found, ""
        why = why or state["why"]
        if state["tested"] >= ROW_DRAWS:
            break  # the hook set the pins often enough: the rules exclude the row
    types = ", ".join(f"{name}={t}" for name, t in sorted(binding.items()))
    if why:
        return None, f"a rule excludes it with {types}: {why[:200]}"
    return None, f"the generator could not make it with {types} in {ROW_DRAWS} draws"


def _first_valid(runner, version: OpVersion, strategy, seed: int) -> tuple[tuple[Case, Exec] | None, dict]:
    """Draw from ``strategy`` (seeded, ROW_DRAWS draws at most, rejected ones included) until a
    case is valid, and run it: ((case, Exec) or None, the tally)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, reject, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    state = {"draws": 0, "tested": 0, "why": ""}

    @st.composite
    def counted(draw):
        state["draws"] += 1
        if state["draws"] > ROW_DRAWS:
            reject()  # (raising here instead would make hypothesis call the strategy flaky)
        return draw(strategy)

    def test(case):
        state["tested"] += 1
        try:
            ex = runner.execute_differential(version, case)
        except harness.Invalid as inv:
            state["why"] = state["why"] or str(inv)
            return
        raise _Found(case, ex)

    run = given(counted())(test)
    run = hseed(seed)(settings(max_examples=ROW_DRAWS, database=None, deadline=None,
                               suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False,
                               phases=(Phase.generate,))(run))
    run._hypothesis_internal_database_key = b"opkit-attribute-pairs"
    try:
        with local_constants_off():
            run()
    except _Found as found:
        return (found.case, found.ex), state
    except NotGeneratable:
        raise
    except Exception:  # noqa: BLE001 - hypothesis gave up (every draw rejected), or a draw failed
        pass
    return None, state


def _emit_coverage(runner, spec: OpSpec, version: OpVersion, array, rows: list, status: list[tuple[bool, str]],
                   failing: int, duration: float) -> None:
    """The version's coverage entry, streamed like a skipped item and kept in ``runner.coverage``."""
    reached_pairs: set = set()
    reached_values: set = set()
    why_pair: dict = {}
    why_value: dict = {}
    for (ran, why), row in zip(status, rows):
        for pair in pairs_of(row):
            if ran:
                reached_pairs.add(pair)
            else:
                why_pair.setdefault(pair, why)
        for item in row:
            if ran:
                reached_values.add(item)
            else:
                why_value.setdefault(item, why)
    pairs = array.pairs()
    attributes = []
    for lv in array.levels:
        mine = [p for p in pairs if lv.name in (p[0][0], p[1][0])]
        attributes.append({"name": lv.name, "levels": [label(v) for v in lv.values],
                           "values_reached": sum((lv.name, v) in reached_values for v in lv.values),
                           "pairs": len(mine), "pairs_reached": sum(p in reached_pairs for p in mine)})
    values = [(lv.name, v) for lv in array.levels for v in lv.values]
    left_out = set(array.left_out)
    missing_values = [{"what": f"{name}={label(v)}", "why": why_value.get((name, v), "in no row")}
                      for name, v in values if (name, v) not in reached_values]
    missing_pairs = [{"what": pair_label(p), "why": "left out: the covering array's row cap" if p in left_out
                      else why_pair.get(p, "in no row")} for p in pairs if p not in reached_pairs]
    missing = missing_values + missing_pairs
    entry = {"backend": runner.backend_name, "op": spec.name, "domain": spec.domain, "version": version.since,
             "attributes": attributes,
             "values": [len(values) - len(missing_values), len(values)],
             "pairs": [len(pairs) - len(missing_pairs), len(pairs)],
             "rows": [sum(ran for ran, _ in status), len(rows)], "duration_s": round(duration, 3)}
    if failing:
        entry["failing_rows"] = failing
    if left_out:
        entry["left_out"] = len(left_out)
    shown = missing[:MAX_MISSING]
    if any(m in missing_values for m in shown):
        entry["missing_values"] = [m for m in shown if m in missing_values]
    if any(m in missing_pairs for m in shown):
        entry["missing_pairs"] = [m for m in shown if m in missing_pairs]
    if len(missing) > MAX_MISSING:
        entry["missing_more"] = len(missing) - MAX_MISSING
    coverage = getattr(runner, "coverage", None)
    if coverage is not None:
        coverage.append(entry)
    runner._emit(coverage_item(entry))


__all__ = ["run_attribute_pairs", "EXAMPLE"]
