"""Which type bindings a runner asks the backend about: what cannot be generated, fed or
inferred is skipped (once, with the reason) or recorded untested, a binding the adapter cannot
feed is load-checked, and valid_case finds the case a load check asks with."""

from __future__ import annotations

import time

from ..spec.model import OpSpec, OpVersion
from ..cases import cases, generatable
from ..cases.case import Case, NotGeneratable
from ..cases.fixed import edge_cases
from . import harness
from ..results.outcomes import UNSUPPORTED, UNTESTED
from .case_exec import Exec, _valid
from .stopping import check_stop


class BindingChecks:
    """The binding checks of a ``Runner`` (a mixin: needs its ``backend``, ``timeout``,
    ``_skipped_keys``, ``_skip`` and ``_record``)."""

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
