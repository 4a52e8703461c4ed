"""BackendRunner: one backend worker as the runner sees it: models built once per signature,
what the backend cannot be fed or asked to run (skip reasons), and cases sent to it."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..spec.model import OpVersion
from ..cases.case import Case
from . import harness
from ..core.values import is_container_type, runtime_value
from ..core.dtypes import elem_of
from ..cases.onnx_model import DEFAULT_AI_ONNX_OPSET, BuiltModel, build, model_opset, signature_key
from ..cases.output_shapes import unshaped_outputs, with_output_ranks
from .stopping import check_stop
from .worker_engine import Result


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

    def drain_history_crashes(self) -> list[dict]:
        """Crashes met since the last call that happen only after a sequence of earlier models in
        one process (crash_confirmation): each is a finding of its own, with that sequence."""
        found = list(getattr(self.worker, "history_crashes", ()))
        if found:
            self.worker.history_crashes.clear()
        return found

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
