"""Run a backend against specs: examples, properties, differential tests (and spec lowerings).

A *case* in the report is one test item: one example, or one (op version, type binding) run of
hypothesis for a property or the differential test, which draws up to ``max_examples`` inputs.
Its outcome is the first failure class hypothesis found (then shrunk to a minimal example), or
pass. Every drawn input is checked against the reference kernel's validation first; inputs it
rejects are discarded, not counted.

Stopping: ``request_stop()`` (called by ``opkit test``'s SIGINT/SIGTERM handler) makes the runner
raise KeyboardInterrupt at its next check (before each drawn example, each backend call and each
record), so a run stops promptly even when some library swallowed the KeyboardInterrupt the signal
raised. A case that had not been recorded when the stop was requested is not recorded at all (its
outcome may be an artefact of the interruption, e.g. a backend worker killed by the same Ctrl-C).

The runner's parts: ``backend_runner`` (the backend worker as the runner sees it), ``case_exec``
(the verdict on one case), ``case_executors`` (running a drawn case), ``hypothesis_search`` (the
seeded search of one binding), ``binding_checks`` (skips and load checks), ``crash_replay``,
``attribute_batches``, ``recording`` and ``stopping``. This module holds the suites.
"""

from __future__ import annotations

import time
import traceback
from typing import Callable

from hypothesis import strategies as st

from ..spec.model import OpSpec, OpVersion
from ..cases import cases
from ..cases.edges import sweep as edge_sweep
from ..cases.hostile import Hostile, attribute_variants, hostile_variants
from ..cases.bindings import PROBE_LIMIT, all_bindings, covering_bindings, probe_bindings
from ..cases.case import Case
from ..cases.derived import with_attribute, with_default_attributes
from ..cases.fixed import edge_cases
from . import harness
from ..core.dtypes import in_class
from .triggers import broken_rule
from ..results.record import CaseRecord
from ..results.outcomes import CRASH, ERROR, PASS, REFUSED, SPEC_SUITES, TIMEOUT, UNCONVERTED, UNSUPPORTED, UNTESTED, Expectations
from .attribute_batches import ATTRIBUTE_BATCH, attribute_batch
from .attribute_pairs import run_attribute_pairs
from .backend_runner import BackendRunner
from .binding_checks import BindingChecks
from .case_exec import EXPENSIVE, Exec, _broken_rule, _memory_kill, _valid, example_exec, failure_class, result_exec
from .case_executors import CaseExecutors
from .crash_replay import CrashReplay
from .superseded import superseding, version_groups
from .random_draws import run_random
from .hypothesis_search import SHRINK_BUDGET, HypothesisSearch, _stable_seed
from .recording import Recording
from .refusals import binding_key
from .stopping import check_stop


BACKEND_SUITES = tuple(s for s in SPEC_SUITES if s != "lowerings")  # the suites run_spec runs on the backend
ROBUSTNESS_BINDINGS = 8  # type bindings per op version the robustness suite covers (each type seen)
# a crash is a property of a code path, hit by most draws that reach it: a fifth of the
# examples (each runs a valid case and 15 hostile variants) finds what the full count finds
# (4 at the sweep's 20: the probes of every Cast pair took the time of the fifth)
ROBUSTNESS_SHARE, ROBUSTNESS_MIN_EXAMPLES = 5, 4
# the bindings beyond the searched covering subset (probe_bindings) each get a few examples and
# one failure: a missing type registration or a wrong conversion of one pair of types shows at
# the first draw, and two examples keep every Cast pair within the sweep's time
PROBE_EXAMPLES = 2
PROBE_DISTINCT = 1  # a probe stops at its first failure (looking past it cost the sweep 10% of its time)
PROBE_SHRINK_BUDGET = 4  # a probe's failure is mostly the binding itself (a refused model): shrink briefly
# hypothesis_search.MAX_INVALID_BEFORE_VALID for a probe (2 examples): a binding whose every case a
# rule excludes (Cast number -> string, rule D1) otherwise cost 60 draws per probe, a fifth of a
# Cast version's time
PROBE_MAX_INVALID = 15


class Runner(Recording, CaseExecutors, HypothesisSearch, BindingChecks, CrashReplay):
    """Runs the suites of op versions on one backend (see the module doc)."""

    def __init__(self, backend: BackendRunner, *, max_examples: int = 100, seed: int = 0,
                 timeout: float = 10.0, repro=None, expectations: Expectations | None = None,
                 progress: Callable[[CaseRecord], None] | None = None, backend_name: str | None = None,
                 siblings: int = 15, max_bindings: int | None = 64, shrink_budget: int | None = None,
                 sink: Callable[[CaseRecord | dict], None] | None = None, second_opinion=None,
                 probe_limit: int | None = PROBE_LIMIT):
        self.backend = backend
        self.probe_limit = probe_limit  # see cases.bindings.probe_bindings
        self.selected_versions: frozenset | None = None  # the run's versions of the op in hand (run_spec)
        self.stand_ins: frozenset | None = None  # those of them the runtime can run (run_spec)
        self._shared: dict = {}  # (domain, op, since) -> _shared_with_newer's answer, per run_spec
        self.second_opinion = second_opinion  # SecondOpinions asked about every finding, or None
        self.max_examples = max_examples
        self.seed = seed
        self.timeout = timeout
        self.repro = repro  # callable(case_record, Case, Exec, version) -> path or None
        self.expectations = expectations or Expectations()
        self.progress = progress
        self.backend_name = backend_name or backend.info.get("name", "backend")
        self.results: list[CaseRecord] = []
        self.skipped: list[dict] = []  # (op version, binding) pairs not run, with the reason
        self.coverage: list[dict] = []  # attribute-pair coverage per op version (attribute_pairs)
        self._skipped_keys: set = set()
        # (op version, suite) -> failure classes already found and shrunk in one of its type
        # bindings: another binding meeting one shrinks it briefly, and a crash or hang not at all
        # (each of its shrink steps restarts the worker; GatherND's out-of-range crash is the same
        # in all 16 bindings, Attention-24's mismatch in 52)
        self._shrunk_classes: dict[tuple, set] = {}
        # (op version, suite) -> {crash/hang class: (binding, minimal case)}: replayed on the other
        # bindings of the version once all are searched (see replay_expensive)
        self._expensive_cases: dict[tuple, dict] = {}
        self.siblings = siblings
        self.max_bindings = max_bindings
        self.shrink_budget = SHRINK_BUDGET if shrink_budget is None else shrink_budget
        # called with every record (a CaseRecord) and every skipped item (a dict marked "skipped": True)
        # as it is made: -j pool processes stream them to the parent, so an interrupted run still
        # reports them
        self.sink = sink

    def execute_robustness(self, version: OpVersion, drawn: tuple[Case, int], avoid: frozenset = frozenset()) -> Exec:
        """Run a drawn valid case and hostile variants of it (see ``opkit.cases.hostile``) in one
        round trip; any answer but a crash or a hang passes: a clean error, or any value, where the
        spec forbids the input or leaves its result undefined. A runtime that refuses the valid case
        as not implemented is ``unsupported`` for the binding: it was asked nothing hostile.
        ``avoid``: the rules (``triggers.broken_rule``) broken by crashes already found in the binding;
        variants with one of them are not asked (the batch stops at its first crash, so a known
        crash early in it would hide a second one behind it: x / 0 behind INT_MIN / -1).
        A bare case (the search asking whether a refused case runs with its optional attributes
        at their defaults) is asked alone, with no hostile variant."""
        if isinstance(drawn, Case):
            result = self.backend.run_cases([drawn], version, self.timeout, infer=False)[0]
            ex = result_exec(result) if result.kind in (UNSUPPORTED, REFUSED, ERROR, CRASH, TIMEOUT) else Exec(PASS)
            ex.case, ex.count = drawn, 1
            return ex
        base, seed, *which = drawn
        batch = [Hostile(base, "none: the valid case itself")]
        if which == [ATTRIBUTE_BATCH]:
            variants = attribute_variants(base, version,
                                          accepts=lambda name, value: _valid(with_attribute(base, name, value)))
        else:
            variants = hostile_variants(base, version, max(1, self.siblings), seed)
        for hostile in variants:
            if avoid and broken_rule(_broken_rule(hostile.case)) in avoid:
                continue
            try:  # without ONNX's shape inference, which a hostile model can abort (in this process)
                self.backend.built(hostile.case, version, infer=False)
            except Exception:  # noqa: BLE001 - ONNX's helpers refuse to write this model: nothing to ask
                continue
            batch.append(hostile)
        results = self.backend.run_cases([h.case for h in batch], version, self.timeout, infer=False)
        if results and results[0].kind in (UNSUPPORTED, REFUSED):  # the valid case itself: no hostile one asked
            ex = result_exec(results[0])
            ex.case, ex.count = base, 1
            return ex
        for hostile, result in zip(batch, results):
            if result.kind in (CRASH, TIMEOUT):
                ex = result_exec(result)
                if _memory_kill(ex) and self._asks_for_it(hostile.case, version):
                    # the output alone is over the limit: the input's size, not a runtime defect
                    # (the batch ended at the kill, so nothing after it was asked)
                    return Exec(PASS, count=len(results))
                ex.case, ex.count = hostile.case, len(results)
                ex.details = dict(ex.details or {}, change=hostile.change, breaks=_broken_rule(hostile.case))
                return ex
        return Exec(PASS, count=len(results))

    # -- suites
    def run_examples(self, spec: OpSpec, version: OpVersion):
        for example in version.examples:
            check_stop()
            t0 = time.perf_counter()
            try:
                case, expected = harness.example_case(spec, version, example)
            except Exception as exc:  # noqa: BLE001
                self._record(spec, version, "examples", example.name, {}, Exec(UNTESTED, f"bad example: {exc}",
                                                                               {"stage": "example"}), 0,
                             time.perf_counter() - t0)
                continue
            result = self.backend.run_case(case, version, self.timeout)
            ex = self.note(binding_key(spec.domain, spec.name, version.since, case.type_map),
                           example_exec(version, case, example, expected, result))
            ex.expected = expected
            self._record(spec, version, "examples", example.name, case.type_map, ex, 1, time.perf_counter() - t0,
                         case)

    def run_differential(self, spec: OpSpec, version: OpVersion, bindings=None):
        if harness.oracle(spec.domain, spec.name, version.since) is None:
            return
        if version.draws:  # values cannot be compared: the draws are judged by statistics
            return run_random(self, spec, version, bindings)
        if not self.generatable(spec, version, "differential"):
            return
        searched = bindings or covering_bindings(version, self.max_bindings)
        probed = [] if bindings else probe_bindings(version, searched, self.probe_limit)
        shared = set() if bindings else self._shared_with_newer(spec, version)
        if shared:  # a newer version in the run searches these bindings the same way: probe them here
            probed = [*(b for b in searched if _key(b) in shared), *probed]
            searched = [b for b in searched if _key(b) not in shared]
        drawn = self._strategies(spec, version, "differential", [*searched, *probed],
                                 lambda b, ranks: cases(spec, version, types=b, siblings=self.siblings, ranks=ranks))
        probes = {tuple(sorted(b.items())) for b in probed}
        ran = []
        for binding, strategy, t0 in drawn:
            ran.append(binding)
            seed = _stable_seed(self.seed, spec.domain, spec.name, version.since, sorted(binding.items()))
            if tuple(sorted(binding.items())) not in probes:
                self.search(spec, version, "differential", binding, strategy,
                            lambda c: self.execute_differential(version, c), seed, edge_cases(spec, version, binding), t0,
                            sweep=lambda bases: edge_sweep(bases, version))
            else:
                self.last_search = (Exec(PASS), None)
                self.search(spec, version, "differential", binding, strategy,
                            lambda c: self.execute_differential(version, c), seed, (), t0,
                            max_examples=min(PROBE_EXAMPLES, self.max_examples), distinct=PROBE_DISTINCT,
                            shrink_budget=PROBE_SHRINK_BUDGET, max_invalid=PROBE_MAX_INVALID)
                self._plain_retry(spec, version, binding, *self.last_search)
        self.replay_expensive(spec, version, "differential", ran)
        run_attribute_pairs(self, spec, version, [b for b in ran if tuple(sorted(b.items())) not in probes])

    def _plain_retry(self, spec: OpSpec, version: OpVersion, binding: dict, ex: Exec, minimal: Case | None) -> None:
        """A probe ends at its first failure. When that is an error raised while the runtime loads
        the model (an attribute it refuses: onnxruntime's `saturate` on a non-float8 Cast target),
        the binding's values were never asked: ask them once, the failing case with every optional
        attribute at its default, then the edge sweep on it. A failure is recorded as
        ``differential-2``."""
        if ex.outcome != ERROR or (ex.details or {}).get("stage") != "load" or minimal is None:
            return
        plain = with_default_attributes(minimal, version)
        if plain is None:
            return
        t0 = time.perf_counter()
        runs = 0
        for case in [plain, *edge_sweep([plain], version)]:
            check_stop()
            try:
                found = self.execute_differential(version, case)
            except harness.Invalid:
                continue
            runs += found.count
            if found.outcome != PASS:
                if failure_class(found, case) == failure_class(ex, minimal):
                    return  # the refusal does not hang on the attributes after all
                found.details = dict(found.details or {}, probe="asked again with every optional attribute at its "
                                                                "default, after an error at load")
                self._record(spec, version, "differential", "differential-2", binding, found, runs,
                             time.perf_counter() - t0, found.case if found.case is not None else case)
                return

    def run_robustness(self, spec: OpSpec, version: OpVersion, bindings=None):
        """Hostile inputs, a covering subset of the bindings (a crash is rarely specific to one
        pair of types once each type has been seen). Needs the reference kernel: it checks the
        valid case each variant starts from and says which rule a variant breaks."""
        if harness.oracle(spec.domain, spec.name, version.since) is None:
            return
        if not self.generatable(spec, version, "robustness"):
            return
        limit = min(self.max_bindings or ROBUSTNESS_BINDINGS, ROBUSTNESS_BINDINGS)
        examples = min(self.max_examples, max(ROBUSTNESS_MIN_EXAMPLES, self.max_examples // ROBUSTNESS_SHARE))
        hostile = bindings or [b for b in covering_bindings(version, limit)
                               if _key(b) not in self._shared_with_newer(spec, version)]
        if not hostile:  # every binding is asked in the newer version that computes it the same way
            return
        drawn = self._strategies(spec, version, "robustness", hostile,
                                 lambda b, ranks: st.tuples(cases(spec, version, types=b, ranks=ranks),
                                                            st.integers(0, 2 ** 32 - 1)))
        ran = []
        swept: list = []  # the cases the version's attribute batches were asked on (attribute_batch)
        for binding, strategy, t0 in drawn:
            ran.append(binding)
            seed = _stable_seed(self.seed, "robustness", spec.domain, spec.name, version.since, sorted(binding.items()))
            avoid: set = set()  # triggers of the crashes found so far in the binding (execute_robustness)
            self.search(spec, version, "robustness", binding, strategy,
                        lambda d, avoid=avoid: self.execute_robustness(version, d, frozenset(avoid)), seed, (), t0,
                        examples, on_phase=lambda seen, avoid=avoid: avoid.update(
                            cls[2] for cls in seen if cls[0] in EXPENSIVE and cls[2]),
                        sweep=lambda bases: attribute_batch(bases, version, swept))
        self.replay_expensive(spec, version, "robustness", ran)

    def run_properties(self, spec: OpSpec, version: OpVersion, bindings=None):
        if not version.properties or harness.oracle(spec.domain, spec.name, version.since) is None:
            return
        if not self.generatable(spec, version, "properties"):
            return
        for prop in version.properties:
            for binding in bindings or covering_bindings(version, self.max_bindings):
                if prop.types and not all(in_class(t, prop.types) for t in binding.values()):
                    continue
                check_stop()
                if self._cannot_feed(spec, version, binding):
                    continue
                t0 = time.perf_counter()
                ranks = self.rank_plan(spec, version, binding, "properties")
                if ranks == ():
                    continue
                seed = _stable_seed(self.seed, spec.domain, spec.name, version.since, prop.name,
                                    sorted(binding.items()))
                strategy = cases(spec, version, types=binding, initializers=False, ranks=ranks)
                ex, minimal, runs = self.hypothesis_run(
                    strategy, lambda c, p=prop: self.execute_property(spec, version, p, c), seed,
                    edge_cases(spec, version, binding))
                self._record(spec, version, "properties", prop.name, binding, ex, runs,
                             time.perf_counter() - t0, minimal, rejected=self.last_run["invalid"])

    def _shared_with_newer(self, spec: OpSpec, version: OpVersion) -> set:
        """The bindings of ``version`` that a newer version computes the same way (``superseded``)
        and that this runner's differential search of it reached (it ran before: ``run_spec`` goes
        newest first), as sorted item tuples. A binding the runtime does not run at the newer
        opset (unsupported, untested, unconverted), or a newer version this task did not run (a
        Dask task holds one version), leaves the older version's search in full. Asked by the
        differential and the robustness suite of ``version``: computed once (the robustness suite
        must not count the older version's own differential records as the newer's)."""
        key = (spec.domain, spec.name, version.since)
        if key not in self._shared:
            self._shared[key] = self._reached_by_newer(spec, version)
        return self._shared[key]

    def _reached_by_newer(self, spec: OpSpec, version: OpVersion) -> set:
        newer = superseding(spec, version, self.stand_ins)
        if newer is None:
            return set()
        reached = {_key(r.types) for r in self.results
                   if r.domain == spec.domain and r.op == spec.name and r.version == newer.since
                   and r.suite.startswith("differential") and r.outcome not in NOT_REACHED}
        return {_key(b) for b in all_bindings(version)} & reached

    def run_spec(self, spec: OpSpec, suites, versions=None, bindings=None, selected=None):
        """Run ``suites`` on the versions of ``spec`` (``versions``: those of this task, None: all);
        ``selected`` are the versions the whole run asks for (a Dask task holds one of them; None:
        ``versions``, so a newer version left out of the run never stands in for one in it)."""
        self.selected_versions = frozenset(selected) if selected is not None else (
            frozenset(versions) if versions else None)
        chosen = [v.since for v in spec.versions
                  if self.selected_versions is None or v.since in self.selected_versions]
        # a version the runtime cannot run at all (Cast-28 beyond its opset) reaches no binding:
        # it never stands in for an older one, whose search would then be in full
        self.stand_ins = frozenset(s for s in chosen if self._cannot_run(spec, s) is None)
        self._shared = {}
        by_since = {v.since: v for v in spec.versions}
        # newest first, each version followed by those it supersedes, which lean on its search
        groups = [*version_groups(spec, self.stand_ins), *((s,) for s in chosen if s not in self.stand_ins)]
        groups.sort(key=lambda group: -group[0])
        for version in (by_since[s] for group in groups for s in group):
            if versions and version.since not in versions:
                continue
            if version.deprecated:  # the version only marks the op deprecated (Scatter-11, Upsample-10)
                self._skip({"op": spec.name, "domain": spec.domain, "version": version.since, "types": {},
                            "reason": "the op is deprecated in this version: runtimes need not run it"})
                continue
            why = self._cannot_run(spec, version.since)
            if why and any(s in suites for s in BACKEND_SUITES):  # opkit cannot ask: not a finding
                self._skip({"op": spec.name, "domain": spec.domain, "version": version.since, "types": {},
                            "reason": why})
                continue
            for suite, run in (("examples", lambda: self.run_examples(spec, version)),
                               ("properties", lambda: self.run_properties(spec, version, bindings)),
                               ("differential", lambda: self.run_differential(spec, version, bindings)),
                               ("robustness", lambda: self.run_robustness(spec, version, bindings))):
                if suite not in suites:
                    continue
                try:
                    run()
                except Exception as exc:  # noqa: BLE001 - one broken op must not end the run
                    self._record(spec, version, suite, suite, {}, Exec(
                        UNTESTED, f"runner error: {type(exc).__name__}: {exc}",
                        {"stage": "runner", "traceback": traceback.format_exc(limit=8)}), 0, 0.0)
                self._record_history_crashes(spec, version, suite)

    def _cannot_run(self, spec: OpSpec, since: int) -> str | None:
        cannot_run = getattr(self.backend, "cannot_run", None)
        return cannot_run(spec.domain, since, spec.name) if cannot_run is not None else None

    def _record_history_crashes(self, spec: OpSpec, version: OpVersion, suite: str) -> None:
        """A crash that needs the worker's history is charged to that sequence, not to the case
        that happened to run last (crash_confirmation): a record of its own."""
        drain = getattr(self.backend, "drain_history_crashes", None)
        for info in drain() if drain is not None else ():
            message = f"{info['crashed']} (only after {len(info['sequence'])} earlier models in the same process)"
            self._record(spec, version, suite, f"{suite}-after-history", {}, Exec(CRASH, message, {
                "crash_replay": info, "stage": "run"}), 1, 0.0)


# outcomes of a binding the runtime did not run: its search says nothing of the op's computation
NOT_REACHED = (UNSUPPORTED, UNTESTED, UNCONVERTED)


def _key(binding: dict) -> tuple:
    return tuple(sorted(binding.items()))


def ops_with_kernels(specs) -> list[OpSpec]:
    return [s for s in specs if any(v.kernel is not None for v in s.versions)]
