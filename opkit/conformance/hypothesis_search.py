"""The hypothesis search of one type binding: a seeded run of hypothesis that draws, executes
and shrinks cases within the shrink and crash budgets, then the fixed edge cases and the edge sweep;
and the search that runs it again past each failure found, for a second, different bug."""

from __future__ import annotations

import hashlib
import itertools
import time
import traceback
from typing import Callable

from ..spec.model import OpSpec, OpVersion
from ..cases.case import Case, NotGeneratable
from . import harness
from .determinism import local_constants_off
from .triggers import masked_by
from ..cases.derived import with_default_attributes
from ..results.outcomes import FAILING, PASS, REFUSED, TIMEOUT, UNSUPPORTED, UNTESTED
from .case_exec import EXPENSIVE, MEMORY_KILL, Exec, _memory_kill, failure_class
from .refusals import Refusals, as_refused, binding_key, ran, refused_attributes, undecided
from .stopping import check_stop

MAX_DISTINCT = 4  # distinct failures searched for per (op version, binding, suite); see Runner.search
SWEEP_BASES = 32  # drawn cases that passed, kept as the bases of the edge sweep (cases.edges.sweep)
# a search past a failure stops once this many draws in a row fail the excluded way and none other
MASKED_ONLY_STOP = 5
MASKED_EXPENSIVE = 2  # ... or once the known crash has been met again this often (each restarts the worker)
MAX_EXPENSIVE = 4  # real crash/timeout runs per hypothesis run (each restarts the worker)
# ... a timeout costs the whole time limit each, a memory kill seconds of allocation: the first and
# one confirmation
MAX_EXPENSIVE_BY_OUTCOME = {TIMEOUT: 2, MEMORY_KILL: 2}
# a failure already shrunk in another type binding of the op version (Runner._shrunk_classes)
SEEN_SHRINK_BUDGET = 8
# Draws hypothesis may try while shrinking a failure. Shrinking usually reaches a minimal case in
# a few dozen steps; past that it mostly confirms minimality at full backend cost, which made
# failing bindings cost 10-50x a passing one in full sweeps. A count, not a clock: repros stay
# deterministic for a seed.
SHRINK_BUDGET = 60
# A backend that refuses the op or type at load refuses every draw of the signature: hypothesis's
# first draw is already its simplest case, so there is nothing to shrink. A refusal of one input of
# an implemented op and type is shrunk briefly, to the attribute values or shape it refuses.
SHRINK_BUDGET_BY_OUTCOME = {UNSUPPORTED: 0, REFUSED: 20}
# An error raised while the runtime loads the model (an attribute value it refuses) depends on the
# model, not on the values fed: a short shrink reaches the attributes; the rest re-ran one refusal
# (three quarters of the draws spent on errors in a full sweep).
LOAD_ERROR_SHRINK_BUDGET = 20
# Draws the reference kernel (or ONNX inference) may reject before the first valid one: past this
# the strategies do not fit the op (say, shapes that must agree), and more draws rarely help.
MAX_INVALID_BEFORE_VALID = 60
# Draws whose reference output hits harness.ORACLE_TIME_LIMIT before generation for the binding
# stops (each costs the whole limit; three in a row mean the strategies keep asking for huge outputs).
MAX_SLOW_ORACLE = 3


class _StopShrinking(BaseException):
    """Ends a hypothesis run from inside the test (hypothesis re-raises non-Exception errors)."""


class _Failure(Exception):
    def __init__(self, ex: Exec):
        self.ex = ex
        super().__init__(ex.message)


def _stable_seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:4], "little")


def _briefly_named(strategy):
    """``strategy`` behind a name that costs nothing to print. Hypothesis notes the top-level
    strategy's repr on every exception a draw raises (a family hook's NotGeneratable, say), and
    the repr of opkit's case strategies pretty-prints the whole spec: 160 kB and 0.15 s per
    binding, two thirds of the time of a Loop version whose sequence bindings cannot be drawn."""
    from hypothesis import strategies as st

    def opkit_cases(_):
        return strategy

    return st.just(None).flatmap(opkit_cases)  # printed as "just(None).flatmap(opkit_cases)"


class HypothesisSearch(Refusals):
    """The searches of a ``Runner`` (a mixin: needs its ``max_examples``, ``shrink_budget``,
    ``_shrunk_classes``, ``_expensive_cases`` and ``_record``)."""

    def hypothesis_run(self, strategy, execute: Callable[[Case], Exec], seed: int, explicit=(),
                       max_examples: int | None = None, shrink_budget: int | None = None, sweep=None,
                       max_invalid: int = MAX_INVALID_BEFORE_VALID, shrunk_elsewhere=frozenset()):
        """Run up to ``max_examples`` (default: the runner's) drawn cases, shrinking a failure with
        at most ``shrink_budget`` draws (default: the runner's, per outcome); returns (Exec,
        minimal Case or None, runs). When the draws find nothing, the fixed ``explicit`` cases run,
        then ``sweep(passed)``: cases made from the first drawn cases that passed (the edge sweep)."""
        from hypothesis.errors import Flaky, Unsatisfiable

        state = {"first": None, "last": None, "smallest": None, "expensive": 0, "runs": 0, "invalid": 0,
                 "shrink_draws": 0, "passed": []}
        self.last_run = state  # its "invalid" count: drawn cases the final validity check discarded
        test = self._hypothesis_test(self._draw_test(state, execute, shrink_budget, max_invalid, shrunk_elsewhere),
                                     strategy, seed, max_examples)
        try:
            with local_constants_off():  # draws from (strategy, seed) alone: see determinism
                test()
        except _Failure as f:
            case, ex = state["last"]
            return f.ex, case, state["runs"]
        except _StopShrinking:
            if state["smallest"] is not None:
                case, ex = state["smallest"]
                return ex, case, state["runs"]
            if not state["runs"]:
                return self._undrawable(state), None, 0
            # generation stopped early after valid passing draws (a slow oracle, or a search past
            # a failure that met only that failure again): the fixed edge cases still run below
        except NotGeneratable as exc:  # a family hook met a version it cannot build (raised by a draw)
            return Exec(UNTESTED, f"opkit cannot generate inputs: {exc}", {"stage": "generate"}), None, state["runs"]
        except (Flaky, Unsatisfiable, Exception) as exc:  # noqa: BLE001
            if state["smallest"] is not None:
                case, ex = state["smallest"]
                return ex, case, state["runs"]
            if isinstance(exc, Unsatisfiable) or (state["runs"] == 0 and state["invalid"]):
                return self._undrawable(state), None, 0
            if isinstance(exc, Flaky) and state["first"] is None:
                return Exec(PASS), None, state["runs"]
            return Exec(UNTESTED, f"runner error: {type(exc).__name__}: {exc}",
                        {"stage": "runner", "traceback": traceback.format_exc(limit=6)}), None, state["runs"]
        return self._fixed_cases(state, execute, explicit, sweep)

    def _draw_test(self, state: dict, execute: Callable[[Case], Exec], shrink_budget: int | None, max_invalid: int,
                   shrunk_elsewhere):
        """The test hypothesis runs on each drawn case: it executes the case, counts what the
        validity checks discard, keeps passing cases as the sweep's bases, stops shrinking past the
        budgets, and raises _Failure for the failure class being shrunk (``state`` keeps the tally)."""

        def test(case):
            from hypothesis import reject

            check_stop()  # between examples: a swallowed KeyboardInterrupt still stops the run
            first = state["first"]
            if first in EXPENSIVE and state["expensive"] >= state["expensive_cap"]:
                raise _StopShrinking  # stop paying for crashes/timeouts: the smallest one so far is reported
            if first is not None:
                state["shrink_draws"] += 1
                budget = SHRINK_BUDGET_BY_OUTCOME.get(first, self.shrink_budget)
                if state.get("first_at_load"):
                    budget = min(budget, LOAD_ERROR_SHRINK_BUDGET)
                if state.get("first_elsewhere"):
                    budget = min(budget, SEEN_SHRINK_BUDGET)
                if state["shrink_draws"] > (budget if shrink_budget is None else min(budget, shrink_budget)):
                    raise _StopShrinking
            try:
                ex = execute(case)
            except harness.Invalid as inv:
                state["invalid"] += 1
                state.setdefault("why", str(inv))
                if state["runs"] == 0 and state["invalid"] >= max_invalid:
                    raise _StopShrinking from None
                if isinstance(inv, harness.OracleTooSlow):
                    state["slow"] = state.get("slow", 0) + 1
                    if state["slow"] >= MAX_SLOW_ORACLE:  # each costs the full oracle time limit
                        state["why"] = str(inv)
                        raise _StopShrinking from None
                reject()
            state["runs"] += ex.count
            if ex.outcome == PASS:
                if len(state["passed"]) < SWEEP_BASES:
                    state["passed"].append(case)
                return
            case = ex.case if ex.case is not None else case
            if first is None:
                state["first"] = first = ex.outcome
                state["first_at_load"] = ex.outcome not in EXPENSIVE and ex.details.get("stage") == "load"
                state["first_elsewhere"] = failure_class(ex, case) in shrunk_elsewhere
                state["expensive_cap"] = MAX_EXPENSIVE_BY_OUTCOME.get(
                    MEMORY_KILL if _memory_kill(ex) else ex.outcome, MAX_EXPENSIVE)
            if ex.outcome != first:
                return  # shrink one failure class at a time
            if ex.outcome in EXPENSIVE:
                state["expensive"] += 1
                if state["first_elsewhere"]:
                    state["expensive"] = MAX_EXPENSIVE  # reported as found; shrunk in a sibling binding
            state["last"] = (case, ex)
            if state["smallest"] is None or case.size() < state["smallest"][0].size():
                state["smallest"] = (case, ex)
            raise _Failure(ex)

        return test

    def _hypothesis_test(self, test, strategy, seed: int, max_examples: int | None):
        """``test`` given ``strategy``, seeded and set up as every run of the runner is."""
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as hseed

        test = given(_briefly_named(strategy))(test)
        test = hseed(seed)(settings(max_examples=max_examples or self.max_examples, database=None, deadline=None,
                                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                                    print_blob=False, report_multiple_bugs=False,
                                    phases=(Phase.explicit, Phase.generate, Phase.shrink))(test))
        # with no database the key is unused, but hypothesis would still hash the test's source
        # for it on every run (inspect + tokenize: 7% of a Cast sweep's time)
        test._hypothesis_internal_database_key = b"opkit-runner"
        return test

    def _fixed_cases(self, state: dict, execute: Callable[[Case], Exec], explicit, sweep):
        """After hypothesis found nothing: the fixed ``explicit`` cases, then the edge sweep."""
        # hypothesis found nothing: now the fixed edge cases (run after, not as @example, so that a
        # failure hypothesis can find is reported shrunk; these are small already)
        for case in itertools.chain(explicit, sweep(state["passed"]) if sweep is not None else ()):
            check_stop()
            try:
                ex = execute(case)
            except (harness.Invalid, _StopShrinking):  # invalid, or the failure already reported
                continue
            state["runs"] += ex.count
            if ex.outcome != PASS:
                return ex, (ex.case if ex.case is not None else case), state["runs"]
        if state["runs"] == 0 and state["invalid"]:
            return self._undrawable(state), None, 0
        return Exec(PASS), None, state["runs"]

    @staticmethod
    def _undrawable(state: dict) -> Exec:
        return Exec(UNTESTED, f"could not draw valid inputs ({state['invalid']} rejected by the reference kernel "
                           f"or ONNX inference, e.g. {state.get('why', '')[:300]})", {"stage": "generate"})

    def search(self, spec: OpSpec, version: OpVersion, suite: str, binding: dict, strategy, execute, seed: int,
               explicit, t0: float, max_examples: int | None = None, distinct: int = MAX_DISTINCT,
               shrink_budget: int | None = None, sweep=None, max_invalid: int = MAX_INVALID_BEFORE_VALID,
               on_phase: Callable[[frozenset], None] | None = None) -> None:
        """Run hypothesis on one binding and record what it finds. After a failure (shrunk), search
        on with that failure's class excluded (a case failing the same way counts as passing), so a
        second, different bug of the binding is reported as well (records ``<suite>-2``, ...), up
        to MAX_DISTINCT failures; a search that finds nothing new records nothing more, and none
        follows a refusal or a hang. ``on_phase(seen)`` is told the classes excluded before each
        phase."""
        seen: set = set()
        key = binding_key(spec.domain, spec.name, version.since, binding)
        known = self._shrunk_classes.setdefault((spec.domain, spec.name, version.since, suite), set())
        for phase in range(distinct):
            masked = {"hits": 0, "other": 0}
            if on_phase is not None:
                on_phase(frozenset(seen))

            def guarded(case, seen=frozenset(seen), masked=masked):
                ex = self.note(key, execute(case))
                if ex.outcome != PASS and masked_by(failure_class(ex, case), seen):
                    masked["hits"] += 1
                    masked["expensive"] = masked.get("expensive", 0) + (ex.outcome in EXPENSIVE)
                    # every draw so far fails the known way (a binding the runtime refuses at
                    # load): the rest of the budget would only meet it again; and each known
                    # crash met again restarts the worker, so only a few are paid for
                    if (masked["hits"] >= MASKED_ONLY_STOP and not masked["other"]) \
                            or masked["expensive"] >= MASKED_EXPENSIVE:
                        raise _StopShrinking
                    return Exec(PASS, count=ex.count)
                masked["other"] += 1
                return ex

            ex, minimal, runs = self.hypothesis_run(strategy, guarded, _stable_seed(seed, phase) if phase else seed,
                                                    explicit, max_examples, shrink_budget, sweep, max_invalid,
                                                    frozenset(known))
            if ex.outcome in FAILING and failure_class(ex, minimal) in known:
                ex.details = dict(ex.details or {}, shrunk=(
                    "no" if ex.outcome in EXPENSIVE else f"briefly (at most {SEEN_SHRINK_BUDGET} draws)")
                    + ": the same failure was shrunk in another type binding of this op version")
            if phase and ex.outcome in (PASS, UNTESTED):
                return
            if undecided(ex) and not self.implemented(key):
                self._plain_ask(key, version, execute, ex, minimal)
            if ex.outcome == REFUSED:
                ex.details = dict(ex.details or {}, refused_with=refused_attributes(minimal, version))
            if not phase:
                self.last_search = (ex, minimal)  # what the binding's first search found (see _plain_retry)
            self._record(spec, version, suite, suite if not phase else f"{suite}-{phase + 1}", binding, ex, runs,
                         time.perf_counter() - t0, minimal, rejected=self.last_run["invalid"])
            # a refusal for want of a kernel ends the binding, and so does a hang or a memory kill
            # (each draw that meets it again costs the whole timeout, or seconds of allocation); a
            # refusal of one input does not: the rest of the op is still searched, the refused
            # region masked like any failure found; nor does a crash: a second bug behind it (MaxUnpool's
            # out-of-range index behind its scalar-indices segfault) is searched for, with the
            # known crash met again at most MAX_EXPENSIVE times
            if ex.outcome in FAILING:
                known.add(failure_class(ex, minimal))
            if ex.outcome in EXPENSIVE and minimal is not None and not _memory_kill(ex):
                # (a memory kill is not replayed: each costs seconds of allocation, GatherND's
                # batch_dims=INT_MIN 5 s in each of 15 bindings)
                crashes = self._expensive_cases.setdefault((spec.domain, spec.name, version.since, suite), {})
                crashes.setdefault(failure_class(ex, minimal), (dict(binding), minimal))
            if ex.outcome not in FAILING or ex.outcome in (UNSUPPORTED, TIMEOUT) or _memory_kill(ex):
                return
            seen.add(failure_class(ex, minimal))
            t0 = time.perf_counter()

    def _plain_ask(self, key: tuple, version: OpVersion, execute, ex: Exec, minimal: Case | None) -> None:
        """A refusal whose words do not say whether the kernel is missing, of a binding not yet seen
        to run: ask the same case once more with every optional attribute at its default. When
        that runs, the op and type are implemented and ``ex`` is charged as ``refused``."""
        plain = with_default_attributes(minimal, version) if minimal is not None else None
        if plain is None or plain == minimal:
            return
        try:
            asked = self.note(key, execute(plain))
        except (harness.Invalid, _StopShrinking):
            return
        if ran(asked):
            as_refused(ex, "the same case with every optional attribute at its default ran")
