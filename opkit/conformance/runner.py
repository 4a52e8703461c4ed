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
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from ..spec.model import OpSpec, OpVersion
from ..cases import cases, generatable
from ..cases.edges import sweep as edge_sweep
from ..cases.hostile import Hostile, attribute_candidates, attribute_variants, hostile_variants, max_rank
from ..cases.strategies import (
    PROBE_LIMIT,
    Case,
    NotGeneratable,
    covering_bindings,
    edge_cases,
    expand,
    probe_bindings,
    recast,
    with_attribute,
    with_default_attributes,
)
from . import harness
from ..core.values import is_container_type, is_optional_type, runtime_value, structure
from .allowance import allowance_for
from .output_compare import Mismatch, compare_value
from ..core.dtypes import elem_of, in_class
from .determinism import local_constants_off
from .limits import limit_bytes
from .requested import asks_at_least
from .property_calls import BACKEND, REFERENCE, PropertyCall, call_key
from ..cases.onnx_model import DEFAULT_AI_ONNX_OPSET, BuiltModel, build, model_opset, signature_key
from ..cases.output_shapes import unshaped_outputs, with_output_ranks
from ..results.record import CaseRecord
from .triggers import VALID_INPUT, broken_rule, masked_by, trigger
from .second_opinion import ASKED_ABOUT
from .second_opinion import SUITES as SECOND_OPINION_SUITES
from ..results.outcomes import CRASH, ERROR, FAILING, MISMATCH, PASS, TIMEOUT, UNSUPPORTED, UNTESTED, Expectations
from .worker import OK, Result

EXPENSIVE = (CRASH, TIMEOUT)
BACKEND_SUITES = ("examples", "properties", "differential", "robustness")  # the suites run_spec runs on the backend
MAX_DISTINCT = 4  # distinct failures searched for per (op version, binding, suite); see Runner.search
ROBUSTNESS_BINDINGS = 8  # type bindings per op version the robustness suite covers (each type seen)
# a crash is a property of a code path, hit by most draws that reach it: a fifth of the
# examples (each runs a valid case and 15 hostile variants) finds what the full count finds
# (4 at the sweep's 20: the probes of every Cast pair took the time of the fifth)
ROBUSTNESS_SHARE, ROBUSTNESS_MIN_EXAMPLES = 5, 4
# the bindings beyond the searched covering subset (probe_bindings) each get a few examples and
# one failure: a missing type registration or a wrong conversion of one pair of types shows at
# the first draw, and two examples keep every Cast pair within the sweep's time
PROBE_EXAMPLES = 2
SWEEP_BASES = 32  # drawn cases that passed, kept as the bases of the edge sweep (cases.edges.sweep)
# a search past a failure stops once this many draws in a row fail the excluded way and none other
MASKED_ONLY_STOP = 5
MASKED_EXPENSIVE = 2  # ... or once the known crash has been met again this often (each restarts the worker)
PROBE_DISTINCT = 1  # a probe stops at its first failure (looking past it cost the sweep 10% of its time)
PROBE_SHRINK_BUDGET = 4  # a probe's failure is mostly the binding itself (a refused model): shrink briefly
MAX_EXPENSIVE = 4  # real crash/timeout runs per hypothesis run (each restarts the worker)
# ... a timeout costs the whole time limit each, a memory kill seconds of allocation: the first and
# one confirmation
MEMORY_KILL = "memory kill"  # a crash that is the worker's memory limit (_memory_kill): seconds of allocation each
MAX_EXPENSIVE_BY_OUTCOME = {TIMEOUT: 2, MEMORY_KILL: 2}
# a failure already shrunk in another type binding of the op version (Runner._shrunk_classes)
SEEN_SHRINK_BUDGET = 8
# Draws hypothesis may try while shrinking a failure. Shrinking usually reaches a minimal case in
# a few dozen steps; past that it mostly confirms minimality at full backend cost, which made
# failing bindings cost 10-50x a passing one in full sweeps. A count, not a clock: repros stay
# deterministic for a seed.
SHRINK_BUDGET = 60
# A backend that refuses the op or type at load refuses every draw of the signature: hypothesis's
# first draw is already its simplest case, so there is nothing to shrink.
SHRINK_BUDGET_BY_OUTCOME = {UNSUPPORTED: 0}
# An error raised while the runtime loads the model (an attribute value it refuses) depends on the
# model, not on the values fed: a short shrink reaches the attributes; the rest re-ran one refusal
# (three quarters of the draws spent on errors in a full sweep).
LOAD_ERROR_SHRINK_BUDGET = 20
# Draws the reference kernel (or ONNX inference) may reject before the first valid one: past this
# the strategies do not fit the op (say, shapes that must agree), and more draws rarely help.
MAX_INVALID_BEFORE_VALID = 60
# ... and for a probe (2 examples): a binding whose every case a rule excludes (Cast number ->
# string, rule D1) otherwise cost 60 draws per probe, a fifth of a Cast version's time
PROBE_MAX_INVALID = 15
# Draws whose reference output hits harness.ORACLE_TIME_LIMIT before generation for the binding
# stops (each costs the whole limit; three in a row mean the strategies keep asking for huge outputs).
MAX_SLOW_ORACLE = 3


_STOP = threading.Event()
# a stop for the runners of one thread only: a Dask worker runs tasks of several runs (and other
# users' work) in one process, so a cancelled run's task must not stop the others (cluster.py)
_THREAD_STOP = threading.local()


def request_stop() -> None:
    """Ask every runner in this process to stop at its next check (KeyboardInterrupt)."""
    _STOP.set()


def clear_stop() -> None:
    _STOP.clear()


def stop_requested() -> bool:
    event = getattr(_THREAD_STOP, "event", None)
    return _STOP.is_set() or (event is not None and event.is_set())


def check_stop() -> None:
    """Raise KeyboardInterrupt when a stop was requested (for the process, or this thread)."""
    if stop_requested():
        raise KeyboardInterrupt


def stop_thread_on(event: threading.Event | None) -> None:
    """Also stop this thread's runners when ``event`` is set (None: only the process-wide stop)."""
    _THREAD_STOP.event = event


def _memory_kill(ex) -> bool:
    """A crash that is the worker's memory limit, not the runtime dying on its own."""
    return ex.outcome == CRASH and "resident memory over" in (ex.message or "")


class _StopShrinking(BaseException):
    """Ends a hypothesis run from inside the test (hypothesis re-raises non-Exception errors)."""


@dataclass
class Exec:
    """The result of running one drawn case."""

    outcome: str
    message: str = ""
    details: dict = field(default_factory=dict)
    expected: tuple | None = None
    actual: list | None = None
    case: Any = None  # the failing case when it is a sibling of the drawn one
    count: int = 1  # cases executed
    calls: tuple = ()  # a failed property's op() calls (PropertyCall), which its repro bundle replays


class _Failure(Exception):
    def __init__(self, ex: Exec):
        self.ex = ex
        super().__init__(ex.message)


class _BackendFailure(Exception):
    def __init__(self, result: Result, case: Case | None = None):
        self.result, self.case = result, case
        super().__init__(result.message)


def _stable_seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:4], "little")


class BackendRunner:
    """Runs cases on one backend worker (``Worker`` or ``InProcess``)."""

    MAX_MODELS = 256  # built models kept per runner (one per signature, most recent first)

    def __init__(self, worker, info: dict | None = None):
        self.worker = worker
        self.info = info or worker.describe()
        self.ir_version = int(self.info.get("max_ir_version", 13))
        # what the backend cannot know or run (see opkit.backends.base.limits): skipped, not charged
        self.max_opsets = {k: int(v) for k, v in (self.info.get("max_opsets") or {}).items()}
        self.min_opsets = {k: int(v) for k, v in (self.info.get("min_opsets") or {}).items()}
        self.unavailable_domains = dict(self.info.get("unavailable_domains") or {})
        self.known_versions = {k: [int(v) for v in vs] for k, vs in (self.info.get("known_versions") or {}).items()}
        # the ai.onnx import beside a custom domain's: no newer than the backend knows
        self.companion_opset = min(DEFAULT_AI_ONNX_OPSET, self.max_opsets.get("ai.onnx", DEFAULT_AI_ONNX_OPSET))
        # Backend-API backends run onnx.checker, which wants a shape on every output (output_shapes)
        self.needs_output_shapes = bool(self.info.get("needs_output_shapes"))
        self.container_values = bool(self.info.get("container_values"))
        self.executed = 0
        self._built: OrderedDict[str, BuiltModel] = OrderedDict()
        self._last: tuple | None = None

    def built(self, case: Case, version: OpVersion, infer: bool = True) -> BuiltModel:
        """The case's model, built once per signature (``infer``: see ``model.build``)."""
        last = self._last
        if last is not None and last[0] is case:  # check_schema then _request ask for the same case
            return last[1]
        opset = model_opset(case.domain, case.since, self.min_opsets)
        key = signature_key(case, self.ir_version, opset or case.since)
        model = self._built.get(key)
        if model is None:
            model = self._built[key] = build(case, version, ir_version=self.ir_version, opset=opset,
                                             companion_opset=self.companion_opset, infer=infer)
            if len(self._built) > self.MAX_MODELS:
                self._built.popitem(last=False)
        else:
            self._built.move_to_end(key)
        if self.needs_output_shapes and unshaped_outputs(model.model):
            model = self._with_reference_ranks(case, model)
        self._last = (case, model)
        return model

    @staticmethod
    def _with_reference_ranks(case: Case, model: BuiltModel) -> BuiltModel:
        """``model`` with the outputs ONNX inference left unshaped given the ranks of the reference
        kernel's outputs for ``case`` (per case: a rank may depend on the values)."""
        try:
            expected = harness.expected_outputs(case)
        except Exception:  # noqa: BLE001 - not a valid input (or no oracle): the caller finds out anyway
            return model
        return with_output_ranks(model, [None if e is None else np.ndim(e) for e in expected])

    def cannot_feed(self, binding: dict) -> str | None:
        """Why this backend's adapter cannot be given a case of ``binding`` (a skip reason), or
        None: sequence and optional values need an adapter that feeds and reads them, and some
        element types an adapter may not pass on an old release (``unfeedable_elements``)."""
        unfeedable = self.info.get("unfeedable_elements") or {}
        for t in sorted(binding.values()):
            why = unfeedable.get(elem_of(t)) if not is_container_type(t) else None
            if why:
                return why
        if self.container_values:
            return None
        containers = sorted(t for t in binding.values() if is_container_type(t))
        if containers:
            return (f"opkit's adapter for {self.info.get('name', 'this backend')} feeds and reads tensors only, "
                    f"not {containers[0]}")
        return None

    def cannot_run(self, domain: str, since: int, op: str | None = None) -> str | None:
        """Why this backend cannot be asked to run ``domain`` op versions ``since`` (a skip
        reason), or None: the domain needs an execution provider it lacks, the version is newer
        than the newest opset the backend can know (a runtime cannot know a later opset) or than
        every version of ``op`` its ONNX schemas know, or ``op``'s version is no longer in force at
        the oldest opset the backend supports."""
        why = self.unavailable_domains.get(domain)
        if why:
            return why
        newest = self.max_opsets.get(domain)
        if newest is not None and since > newest:
            return f"beyond this runtime's opset ({newest})"
        known = self.known_versions.get(f"{domain}::{op}") if op else None
        if known and since > max(known):
            return (f"newer than this runtime's ONNX: its schemas know {op} "
                    f"{', '.join(map(str, known))}, not {op}-{since}")
        oldest = self.min_opsets.get(domain)
        if op is None or oldest is None or since >= oldest:
            return None
        sinces = [v.since for v in harness.load_op(domain, op).versions]
        if not [v for v in sinces if since < v <= oldest]:  # still in force at the oldest opset
            return None
        in_force = max(v for v in sinces if v <= oldest)
        return (f"dropped by this runtime: it supports {domain} opsets {oldest} and later, where {op}-{in_force} "
                "is in force")

    def check_schema(self, case: Case, version: OpVersion) -> None:
        """Raise harness.Invalid when ONNX's own inference for the op rejects the case's model."""
        error = self.built(case, version).inference_error
        if error:
            raise harness.Invalid(f"onnx shape inference rejects the model: {error}")

    def _request(self, case: Case, version: OpVersion, infer: bool = True):
        built = self.built(case, version, infer)
        feeds = {n: runtime_value(a) for n, a in case.inputs if a is not None and n not in case.initializers}
        return built.key, (lambda: built.model.SerializeToString()), feeds

    def load_only(self, case: Case, version: OpVersion, timeout: float | None = None) -> Result:
        """Have the backend load the case's model without running it (OK: it was accepted)."""
        check_stop()
        built = self.built(case, version, True)
        return self.worker.run(built.key, built.model.SerializeToString(), None, timeout)

    def run_case(self, case: Case, version: OpVersion, timeout: float | None = None) -> Result:
        check_stop()
        self.executed += 1
        return self.worker.run(*self._request(case, version), timeout)

    def run_cases(self, batch: list[Case], version: OpVersion, timeout: float | None = None,
                  infer: bool = True) -> list[Result]:
        check_stop()
        results = self.worker.run_many([self._request(c, version, infer) for c in batch], timeout)
        self.executed += len(results)
        return results


def check_outputs(version: OpVersion, case: Case, expected: tuple, actual: list, *,
                  precision: tuple[float, float] = (0.0, 0.0)) -> Exec:
    """Compare a backend's outputs with the expected ones, within the op's accuracy class (or within
    ``precision``, (rtol, atol), where an example's expected values are given only that precisely)."""
    names = [p.name for p in version.outputs]
    binding = case.type_map
    for i, exp in enumerate(expected):
        param = version.outputs[i] if i < len(version.outputs) else None
        bound = binding.get(param.type, param.type) if param is not None else None
        if exp is None and not (bound and is_optional_type(bound)):  # None of an optional type: the empty optional
            continue
        if i >= len(actual):
            return Exec(MISMATCH, f"backend returned {len(actual)} outputs, expected {len(expected)}",
                        {"what": "missing"})
        allowance = allowance_for(version, case, i, expected)  # None: no floats (compared exactly)
        if allowance is not None and any(precision):
            allowance = replace(allowance, rtol=max(allowance.rtol, precision[0]),
                                atol=max(allowance.atol, precision[1]),
                                basis=(allowance.basis + "; " if allowance.basis else "")
                                + "the example's stated precision")
        try:
            compare_value(exp, actual[i], bound, name=names[i] if i < len(names) else f"output {i}",
                          allowance=allowance)
        except Mismatch as mm:
            return Exec(MISMATCH, mm.message, {"what": mm.what, **mm.details}, expected, actual)
    return Exec(PASS, "", {}, expected, actual)


def example_exec(version: OpVersion, case: Case, example, expected: tuple, result: Result) -> Exec:
    """An example's verdict. A random op's example fixes only its outputs' types and
    shapes (Bernoulli's draws, Dropout's mask are the runtime's own), so only those are compared."""
    if result.kind != OK:
        return result_exec(result)
    if version.draws:
        return check_outputs(version, case, structure(expected), structure(result.outputs))
    return check_outputs(version, case, expected, result.outputs, precision=(example.rtol, example.atol))


def result_exec(result: Result) -> Exec:
    details = {"stage": result.stage} if result.stage else {}
    if result.output:  # what the runtime wrote as it crashed or hung: its own words
        details["runtime_output"] = result.output
    return Exec(result.kind, result.message, details)


class Runner:
    def __init__(self, backend: BackendRunner, *, max_examples: int = 100, seed: int = 0,
                 timeout: float = 10.0, repro=None, expectations: Expectations | None = None,
                 progress: Callable[[dict], None] | None = None, backend_name: str | None = None,
                 siblings: int = 15, max_bindings: int | None = 64, shrink_budget: int | None = None,
                 sink: Callable[[dict], None] | None = None, second_opinion=None,
                 probe_limit: int | None = PROBE_LIMIT):
        self.backend = backend
        self.probe_limit = probe_limit  # see strategies.probe_bindings
        self.second_opinion = second_opinion  # SecondOpinions asked about every finding, or None
        self.max_examples = max_examples
        self.seed = seed
        self.timeout = timeout
        self.repro = repro  # callable(case_record, Case, Exec, version) -> path or None
        self.expectations = expectations or Expectations()
        self.progress = progress
        self.backend_name = backend_name or backend.info.get("name", "backend")
        self.results: list[dict] = []
        self.skipped: list[dict] = []  # (op version, binding) pairs not run, with the reason
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
        # called with every record and every skipped item (marked "skipped": True) as it is made:
        # -j pool processes stream them to the parent, so an interrupted run still reports them
        self.sink = sink

    def _emit(self, item: dict) -> None:
        if self.sink is not None:
            try:
                self.sink(item)
            except Exception:  # noqa: BLE001 - streaming is best effort; the record is kept anyway
                pass

    def _skip(self, item: dict) -> None:
        self.skipped.append(item)
        self._emit(dict(item, skipped=True))

    # -- records
    def _record(self, spec: OpSpec, version: OpVersion, suite: str, example: str, types: dict, ex: Exec,
                runs: int, duration: float, minimal: Case | None = None, backend: str | None = None,
                rejected: int = 0) -> dict:
        check_stop()  # a case finished after the stop request is not recorded (see the module doc)
        record = CaseRecord(
            backend=backend or self.backend_name, suite=suite, op=spec.name, domain=spec.domain,
            version=version.since, types=dict(types), example=example, outcome=ex.outcome, message=ex.message,
            examples_run=runs, duration_s=round(duration, 4), details=_jsonable(ex.details) if ex.details else None,
            minimal_example=minimal.describe() if minimal is not None and ex.outcome != PASS else None,
            rejected=rejected or None)
        if self.second_opinion and backend is None and minimal is not None and ex.outcome in ASKED_ABOUT \
                and suite in SECOND_OPINION_SUITES:
            record = replace(record, second_opinion=self.second_opinion.ask(
                version, ex.case if ex.case is not None else minimal, ex.outcome, ex.expected, ex.actual))
        if ex.outcome in FAILING and self.repro is not None and minimal is not None and backend is None:
            try:
                record = replace(record, repro=self.repro(record.to_json(), minimal, ex, version))
            except Exception as exc:  # noqa: BLE001 - a repro failure must not lose the case
                record = replace(record, repro_error=f"{type(exc).__name__}: {exc}")
        if backend is None:  # backend-independent records (lowerings) are not the backend's expectations
            record = self.expectations.apply_record(record)
        check_stop()  # writing the repro may have taken a while
        rec = record.to_json()
        self.results.append(rec)
        self._emit(rec)
        if self.progress:
            self.progress(rec)
        return rec

    # -- executing one case
    def execute_differential(self, version: OpVersion, case: Case) -> Exec:
        prepared = []
        variadic_out = any(p.option == "variadic" for p in version.outputs)
        for i, c in enumerate(expand(case, version)):
            try:
                self.backend.check_schema(c, version)
                expected = harness.expected_outputs(c)
            except harness.Invalid:
                if i == 0:
                    raise
                continue
            if variadic_out and len(expected) != len(version.outputs):
                import dataclasses

                c = dataclasses.replace(c, n_outputs=len(expected))
            prepared.append((c, expected))
        results = self.backend.run_cases([c for c, _ in prepared], version, self.timeout)
        for (c, expected), result in zip(prepared, results):
            ex = result_exec(result) if result.kind != OK else check_outputs(version, c, expected, result.outputs)
            if ex.outcome != PASS:
                ex.case, ex.count, ex.expected = c, len(results), expected
                return ex
        return Exec(PASS, count=len(results))

    def execute_robustness(self, version: OpVersion, drawn: tuple[Case, int], avoid: frozenset = frozenset()) -> Exec:
        """Run a drawn valid case and hostile variants of it (see ``opkit.cases.hostile``) in one
        round trip; any answer but a crash or a hang passes: a clean error, or any value, where the
        spec forbids the input or leaves its result undefined. A runtime that refuses the valid case
        as not implemented is ``unsupported`` for the binding: it was asked nothing hostile.
        ``avoid``: the rules (``triggers.broken_rule``) broken by crashes already found in the binding;
        variants with one of them are not asked (the batch stops at its first crash, so a known
        crash early in it would hide a second one behind it: x / 0 behind INT_MIN / -1)."""
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
        if results and results[0].kind == UNSUPPORTED:
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

    def _asks_for_it(self, case: Case, version: OpVersion) -> bool:
        """Whether the case's outputs alone need the worker's memory limit or more (ONNX's shape
        inference of its model, out of process: see ``opkit.conformance.requested``)."""
        limit = limit_bytes(getattr(self.backend.worker, "memory_gb", None))
        # every tensor input a constant, so inference sees the values a size is computed from
        # (Range's start, limit and delta; Reshape's or Expand's shape)
        constant = replace(case, initializers=frozenset(n for n, a in case.inputs if isinstance(a, np.ndarray)))
        try:
            model = self.backend.built(constant, version, infer=False).model.SerializeToString()
        except Exception:  # noqa: BLE001 - a model ONNX's helpers cannot write: nothing to measure
            return False
        return asks_at_least(model, limit)

    @staticmethod
    def _call_case(spec: OpSpec, version: OpVersion, inputs: tuple, attributes: dict) -> Case:
        """The case of a property's ``op(*inputs, **attributes)`` call."""
        from ..cases.strategies import make_case

        items = list(zip([p.name for p in version.inputs], inputs))
        return make_case(spec, version, harness.infer_binding(version, list(inputs), attributes), attributes, items)

    def reference_calls(self, spec: OpSpec, version: OpVersion, prop, case: Case) -> list[PropertyCall]:
        """The calls the property makes on ``case`` when the reference kernel answers them: what a
        fixed backend will be asked when the repro bundle replays the property."""
        calls: list[PropertyCall] = []

        def op_ref(*inputs, **attributes):
            sub = self._call_case(spec, version, inputs, attributes)
            calls.append(PropertyCall(call_key(inputs, attributes), sub, self.backend.built(sub, version), REFERENCE))
            return harness.expected_outputs(sub)[0]

        try:
            harness.check_property(prop, case, version, op_ref)
        except Exception:  # noqa: BLE001 - the calls made so far are still worth keeping
            pass
        return calls

    def execute_property(self, spec: OpSpec, version: OpVersion, prop, case: Case) -> Exec:
        self.backend.check_schema(case, version)  # validity filters: raise Invalid
        harness.expected_outputs(case)
        calls: list[PropertyCall] = []  # every call this evaluation made, for the repro bundle

        def op_fn(*inputs, **attributes):
            sub = self._call_case(spec, version, inputs, attributes)
            result = self.backend.run_case(sub, version, self.timeout)
            if result.kind != OK:
                types = ", ".join(f"{k}={v}" for k, v in sorted(sub.type_map.items()))
                result.message = f"op() called by the property with {types} ({sub.describe()}): {result.message}"
                raise _BackendFailure(result, sub)
            calls.append(PropertyCall(call_key(inputs, attributes), sub, self.backend.built(sub, version), BACKEND))
            return result.outputs[0]

        try:
            held = harness.check_property(prop, case, version, op_fn)
        except _BackendFailure as bf:
            ex = result_exec(bf.result)
            ex.case = bf.case
            try:
                ex.expected = harness.expected_outputs(bf.case)
            except Exception:  # noqa: BLE001
                pass
            return ex
        except harness.Invalid:
            raise
        except Exception as exc:  # noqa: BLE001
            # the property is opkit's spec text: its failure to evaluate says nothing about the backend
            return Exec(UNTESTED, f"property {prop.name!r} raised {type(exc).__name__}: {exc}", {"stage": "property"})
        if not held:
            return Exec(MISMATCH, f"property {prop.name!r} does not hold: {prop.holds.strip()}",
                        {"what": "property"}, harness.expected_outputs(case),
                        calls=tuple(calls + self.reference_calls(spec, version, prop, case)))
        return Exec(PASS)

    # -- hypothesis runs
    def hypothesis_run(self, strategy, execute: Callable[[Case], Exec], seed: int, explicit=(),
                       max_examples: int | None = None, shrink_budget: int | None = None, sweep=None,
                       max_invalid: int = MAX_INVALID_BEFORE_VALID, shrunk_elsewhere=frozenset()):
        """Run up to ``max_examples`` (default: the runner's) drawn cases, shrinking a failure with
        at most ``shrink_budget`` draws (default: the runner's, per outcome); returns (Exec,
        minimal Case or None, runs). When the draws find nothing, the fixed ``explicit`` cases run,
        then ``sweep(passed)``: cases made from the first drawn cases that passed (the edge sweep)."""
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as hseed
        from hypothesis.errors import Flaky, Unsatisfiable

        state = {"first": None, "last": None, "smallest": None, "expensive": 0, "runs": 0, "invalid": 0,
                 "shrink_draws": 0, "passed": []}
        self.last_run = state  # its "invalid" count: drawn cases the final validity check discarded

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

        test = given(strategy)(test)
        test = hseed(seed)(settings(max_examples=max_examples or self.max_examples, database=None, deadline=None,
                                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                                    print_blob=False, report_multiple_bugs=False,
                                    phases=(Phase.explicit, Phase.generate, Phase.shrink))(test))
        # with no database the key is unused, but hypothesis would still hash the test's source
        # for it on every run (inspect + tokenize: 7% of a Cast sweep's time)
        test._hypothesis_internal_database_key = b"opkit-runner"
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
            ex = example_exec(version, case, example, expected, result)
            ex.expected = expected
            self._record(spec, version, "examples", example.name, case.type_map, ex, 1, time.perf_counter() - t0,
                         case)

    def generatable(self, spec: OpSpec, version: OpVersion, suite: str) -> bool:
        """False (and one untested case) when the case generator cannot draw this version."""
        why = generatable(spec, version)
        if why is None:
            return True
        self._record(spec, version, suite, suite, {}, Exec(UNTESTED, f"opkit cannot generate inputs: {why}",
                                                          {"stage": "generate"}), 0, 0.0)
        return False

    def rank_plan(self, spec: OpSpec, version: OpVersion, binding: dict, suite: str) -> tuple | None:
        """The rank combinations ONNX inference accepts for this binding (see ``ranks``); ()
        when it accepts none: the binding itself is invalid (BitCast between widths, say), which
        is noted once in ``skipped`` and not run."""
        from ..cases.ranks import rank_plan

        if version.family:  # the probe sets no attributes, a family hook does (MeanVarianceNormalization's
            return None     # axes): its verdict on the binding does not hold for the hook's cases
        plan = rank_plan(spec.name, spec.domain, version, tuple(sorted(binding.items())))
        if plan == ():
            key = (spec.domain, spec.name, version.since, tuple(sorted(binding.items())))
            if key not in self._skipped_keys:
                self._skipped_keys.add(key)
                self._skip({"op": spec.name, "domain": spec.domain, "version": version.since,
                            "types": dict(binding), "suite": suite,
                            "reason": "ONNX shape inference rejects this type binding at every input rank"})
        return plan

    def _load_refusal(self, spec: OpSpec, version: OpVersion, binding: dict) -> bool:
        """A binding the adapter cannot feed (bfloat16 through onnxruntime 1.16's Python binding)
        can still be loaded: a runtime that refuses the model at load (a missing type
        registration) is recorded as ``unsupported``, with no input fed. A model it accepts stays
        skipped (its values cannot be checked)."""
        load_only = getattr(self.backend, "load_only", None)
        if load_only is None:
            return False
        case = valid_case(spec, version, binding)
        if case is None:
            return False
        t0 = time.perf_counter()
        try:
            result = load_only(case, version, self.timeout)
        except Exception:  # noqa: BLE001 - a model opkit cannot build for it: stays skipped
            return False
        if result.kind != UNSUPPORTED:
            return False
        self._record(spec, version, "differential", "differential", binding,
                     Exec(UNSUPPORTED, result.message, {"stage": "load", "load_only": True}),
                     0, time.perf_counter() - t0, case)
        return True

    def _cannot_feed(self, spec: OpSpec, version: OpVersion, binding: dict, load_check: bool = True) -> bool:
        """Skip (once, with the reason) a binding the backend's adapter cannot be given; with
        ``load_check``, first see whether the backend refuses its model at load (then that is
        recorded instead of the skip)."""
        cannot_feed = getattr(self.backend, "cannot_feed", None)
        why = cannot_feed(binding) if cannot_feed is not None else None
        if why:
            key = (spec.domain, spec.name, version.since, tuple(sorted(binding.items())))
            if key not in self._skipped_keys:
                self._skipped_keys.add(key)
                if load_check and self._load_refusal(spec, version, binding):
                    return True
                self._skip({"op": spec.name, "domain": spec.domain, "version": version.since, "types": dict(binding),
                            "reason": why})
        return bool(why)

    def run_differential(self, spec: OpSpec, version: OpVersion, bindings=None):
        if harness.oracle(spec.domain, spec.name, version.since) is None:
            return
        if version.draws:  # values cannot be compared; properties still run
            return
        if not self.generatable(spec, version, "differential"):
            return
        searched = bindings or covering_bindings(version, self.max_bindings)
        probed = [] if bindings else probe_bindings(version, searched, self.probe_limit)
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

    def _strategies(self, spec: OpSpec, version: OpVersion, suite: str, bindings, make):
        """(binding, strategy, start time) for each binding the backend can be fed and ONNX
        inference accepts at some rank; ``make(binding, ranks)`` builds the strategy (a binding it
        cannot is recorded untested)."""
        for binding in bindings:
            check_stop()
            if self._cannot_feed(spec, version, binding):
                continue
            t0 = time.perf_counter()
            ranks = self.rank_plan(spec, version, binding, suite)
            if ranks == ():
                continue
            try:
                strategy = make(binding, ranks)
            except NotGeneratable as exc:
                self._record(spec, version, suite, suite, binding,
                             Exec(UNTESTED, f"cannot generate: {exc}", {"stage": "generate"}), 0, 0.0)
                continue
            yield binding, strategy, t0

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
        known = self._shrunk_classes.setdefault((spec.domain, spec.name, version.since, suite), set())
        for phase in range(distinct):
            masked = {"hits": 0, "other": 0}
            if on_phase is not None:
                on_phase(frozenset(seen))

            def guarded(case, seen=frozenset(seen), masked=masked):
                ex = execute(case)
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
            if not phase:
                self.last_search = (ex, minimal)  # what the binding's first search found (see _plain_retry)
            self._record(spec, version, suite, suite if not phase else f"{suite}-{phase + 1}", binding, ex, runs,
                         time.perf_counter() - t0, minimal, rejected=self.last_run["invalid"])
            # a refusal ends the binding, and so does a hang or a memory kill (each draw that
            # meets it again costs the whole timeout, or seconds of allocation); a crash does not: a second bug behind it (MaxUnpool's
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
        drawn = self._strategies(spec, version, "robustness", bindings or covering_bindings(version, limit),
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

    def replay_expensive(self, spec: OpSpec, version: OpVersion, suite: str, bindings) -> None:
        """Run each crash or hang found in one type binding of the version again, its minimal case
        cast to every other binding searched that did not show it (a crash is a code path, and a
        search that met it in uint8 may not have drawn it in int32): a crash there is recorded as
        ``<suite>-replay``, with the binding it came from. One run per (binding, crash): cheap."""
        crashes = self._expensive_cases.get((spec.domain, spec.name, version.since, suite))
        if not crashes:
            return
        # what each binding showed: outcome and message class, and for a hostile input the rule it
        # broke (GatherND's out-of-range batch_dims and its mismatched batch dims both SIGSEGV),
        # from the record's details as the crash's class came from the Exec's
        shown = {(tuple(sorted(r["types"].items())),
                  failure_class(Exec(r["outcome"], r["message"], r.get("details") or {})))
                 for r in self.results if r["op"] == spec.name and r["domain"] == spec.domain
                 and r["version"] == version.since and r["suite"] == suite}
        replays: dict = {}
        for cls, (origin, minimal) in list(crashes.items()):
            for binding in bindings:
                check_stop()
                key = tuple(sorted(binding.items()))
                if binding == origin or any(b == key and seen[:2] == cls[:2] and (seen[2] == cls[2] or not seen[2])
                                            for b, seen in shown):
                    continue
                case = recast(minimal, version, binding)
                if case is None:
                    continue
                t0 = time.perf_counter()
                try:
                    result = self.backend.run_cases([case], version, self.timeout, infer=False)[0]
                except Exception:  # noqa: BLE001 - a model opkit cannot build for this binding: nothing asked
                    continue
                if result.kind not in EXPENSIVE:
                    continue
                ex = result_exec(result)
                ex.details = dict(ex.details or {}, replayed_from={k: v for k, v in origin.items()},
                                  shrunk="no: the minimal case of the same failure in another type binding, "
                                         "cast to this one")
                # each replay in a binding is its own case (and repro bundle): GatherND's SIGFPE on
                # mismatched batch dims behind its SIGABRT on an out-of-range batch_dims
                replays[key] = replays.get(key, 0) + 1
                name = f"{suite}-replay" if replays[key] == 1 else f"{suite}-replay-{replays[key]}"
                self._record(spec, version, suite, name, binding, ex, 1, time.perf_counter() - t0, case)

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

    def run_spec(self, spec: OpSpec, suites, versions=None, bindings=None):
        for version in spec.versions:
            if versions and version.since not in versions:
                continue
            if version.deprecated:  # the version only marks the op deprecated (Scatter-11, Upsample-10)
                self._skip({"op": spec.name, "domain": spec.domain, "version": version.since, "types": {},
                            "reason": "the op is deprecated in this version: runtimes need not run it"})
                continue
            cannot_run = getattr(self.backend, "cannot_run", None)
            why = cannot_run(spec.domain, version.since, spec.name) if cannot_run is not None else None
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


ATTRIBUTE_BATCH = "attributes"  # a robustness draw (case, seed, ATTRIBUTE_BATCH): hostile.attribute_variants


ATTRIBUTE_BATCHES = 2  # robustness bindings per op version that get the attribute batch


def attribute_batch(bases, version: OpVersion, swept: list) -> list:
    """For the first ATTRIBUTE_BATCHES bindings of an op version whose robustness draws found
    nothing: a drawn case, each attribute then set to each out-of-domain value
    (``hostile.attribute_variants``). A crash is an attribute's code path, rarely a type's (the
    crash replay takes it to the other bindings), but often the path the other attributes choose:
    onnxruntime 1.16's MaxPool divided by a stride of 0 and read out of bounds with pads of -1 on
    the plain path (unit dilations, no pads), and gave a clean error for both with dilations of 2.
    So the first base is the one giving the most attribute values, the second the plainest (fewest
    attributes off their neutral value, see ``_plainness``), of an input rank the first did not
    have where the draws allow (1-D, 2-D and 3-D pooling are separate kernels), as the plainest
    model (``_plain_model``: constant inputs, no optional outputs)."""
    if len(swept) >= ATTRIBUTE_BATCHES or not bases or not attribute_candidates(version):
        return []
    fresh = [d for d in bases if all(d[0] != case for case in swept)] or bases
    if not swept:
        base = max(fresh, key=lambda d: (len(d[0].attributes), d[0].size()))
    else:
        ranks = {max_rank(case) for case in swept}
        base = max(fresh, key=lambda d: (max_rank(d[0]) not in ranks, -_plainness(d[0], version), d[0].size()))
        base = (_plain_model(base[0], version), *base[1:])
    swept.append(base[0])
    return [(base[0], base[1], ATTRIBUTE_BATCH)]


def _plain_model(case: Case, version: OpVersion) -> Case:
    """``case`` as the plainest model of it: every tensor input a constant (an initializer: the
    runtime's shape inference and constant folding see the shapes and values at load, where
    onnxruntime 1.16 divided by MaxPool's zero stride; fed inputs are declared with symbolic
    dimensions, and it returned an error at run time), and only the leading required outputs
    declared (a node may leave trailing optional outputs out; MaxPool's Indices output is
    another path)."""
    tensors = frozenset(name for name, arr in case.inputs if isinstance(arr, np.ndarray))
    options = [p.option for p in version.outputs]
    required = next((i for i, option in enumerate(options) if option == "optional"), len(options))
    plain = replace(case, initializers=tensors)
    if not case.n_outputs and "variadic" not in options and 0 < required < len(options):
        plain = replace(plain, n_outputs=required)
    return plain


def _plainness(case: Case, version: OpVersion) -> int:
    """How many attributes ``case`` sets off their neutral value: the spec's default, or a list
    of all zeros or all ones (no pads, unit strides or dilations, a kernel of 1), which is how the
    spec's defaults for those read when the list is given explicitly."""
    defaults = {a.name: a.default for a in version.attributes if a.has_default}
    off = 0
    for name, value in case.attributes:
        if name in defaults and defaults[name] == value:
            continue
        if isinstance(value, (list, tuple)) and value and len(set(value)) == 1 and value[0] in (0, 1):
            continue
        off += 1
    return off


LOAD_CASE_DRAWS = 50  # draws valid_case may try when no fixed edge case of the binding is valid


def valid_case(spec: OpSpec, version: OpVersion, binding: dict) -> Case | None:
    """A case of the binding that the spec's rules admit, deterministically: the first fixed edge
    case the reference kernel accepts, else the first such draw. What a load-only check records
    is rerun by its repro bundle on releases that can be fed: an input the rules exclude (
    QuantizeLinear-21's y_scale shaped like x with no block_size) would fail there too and hide
    that the refusal was fixed. None when there is none, or no fixed edge case at all (no kernel to
    ask: the first edge case, as the model is all a load check asks about)."""
    from hypothesis import HealthCheck, Verbosity, find, settings

    try:
        fixed = edge_cases(spec, version, binding, limit=8)
    except (NotGeneratable, ValueError, TypeError):
        fixed = []
    if not fixed:  # nothing opkit can build for it (a sequence binding): no load check, as before
        return None
    if harness.oracle(spec.domain, spec.name, version.since) is None:
        return fixed[0]
    for case in fixed:
        if _valid(case):
            return case
    try:
        return find(cases(spec, version, types=binding), _valid,
                    settings=settings(max_examples=LOAD_CASE_DRAWS, database=None, derandomize=True, deadline=None,
                                      suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet))
    except Exception:  # noqa: BLE001 - none found (NoSuchExample), none drawable, or hypothesis gave up
        return None


def failure_class(ex: Exec, case: Case | None = None) -> tuple:
    """What makes two failures of one binding the same for ``Runner.search``: the outcome, the
    message class of root causes (``causes``) and the trigger (``triggers``): a second "values
    differ" on ordinary values is the same bug reached by other values; a NaN position, an error,
    a crash, or the same message met with a NaN or infinity, or another broken rule is another
    one. ``case``: the case that failed, when ``ex`` does not name it."""
    from ..results.causes import message_class

    details = ex.details or {}
    return (ex.outcome, message_class({"outcome": ex.outcome, "message": ex.message, "details": details}),
            trigger(ex.outcome, details, ex.case if ex.case is not None else case))


def _valid(case: Case) -> bool:
    """Whether the reference kernel computes ``case``: the spec's rules admit it."""
    try:
        harness.expected_outputs(case)
    except Exception:  # noqa: BLE001 - excluded by a rule, or a case the kernel cannot compute
        return False
    return True


def _broken_rule(case: Case) -> str:
    """What the reference kernel says of a hostile case: the rule it breaks, or that it is valid."""
    try:
        harness.expected_outputs(case)
    except harness.Invalid as inv:
        return str(inv)[:300]
    except Exception as exc:  # noqa: BLE001 - no kernel, or the kernel fails on it: say so
        return f"the reference kernel fails on it too: {type(exc).__name__}: {str(exc)[:200]}"
    return VALID_INPUT


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.generic,)):
        return _jsonable(value.item())
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def ops_with_kernels(specs) -> list[OpSpec]:
    return [s for s in specs if any(v.kernel is not None for v in s.versions)]

