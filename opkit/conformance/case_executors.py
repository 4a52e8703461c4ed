"""Executing one drawn case on the backend: the differential test (the case and its expanded
siblings against the reference kernel) and a property (its op() calls answered by the backend)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..spec.model import OpSpec, OpVersion
from ..cases.case import Case
from ..cases.derived import expand
from . import harness
from .limits import limit_bytes
from .requested import asks_at_least
from .property_calls import BACKEND, REFERENCE, PropertyCall, call_key
from ..results.outcomes import MISMATCH, PASS, UNTESTED
from .case_exec import Exec, check_outputs, result_exec
from .worker_engine import OK, Result


class _BackendFailure(Exception):
    def __init__(self, result: Result, case: Case | None = None):
        self.result, self.case = result, case
        super().__init__(result.message)


class CaseExecutors:
    """How a ``Runner`` executes a case (a mixin: needs its ``backend`` and ``timeout``)."""

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
        from ..cases.case import make_case

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
