"""Recording a case: the runner's records (with second opinion, repro bundle and expectations
applied), streamed to its sink and progress as they are made, and its skipped items."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..spec.model import OpSpec, OpVersion
from ..cases.case import Case
from ..results.record import CaseRecord
from .second_opinion import ASKED_ABOUT
from .second_opinion import SUITES as SECOND_OPINION_SUITES
from ..results.outcomes import CRASH, FAILING, PASS, REFUSED, TIMEOUT, UNCONVERTED, UNSUPPORTED
from ..backends.base import converter_of
from .case_exec import Exec
from .stopping import check_stop

# a refusal is asked about wherever the refused case is a valid input of the op itself: the
# robustness suite's refused case is its valid base case (a property's calls are not)
REFUSAL_SUITES = ("robustness",)
# ... and so is a hang or a crash there: an engine that answers the same input within the same
# time and memory limits shows the input does not ask for that much work (results.audit)
ASKED_IN_ROBUSTNESS = (REFUSED, TIMEOUT, CRASH)


class Recording:
    """The records of a ``Runner`` (a mixin: needs its ``sink``, ``progress``, ``results``,
    ``skipped``, ``backend_name``, ``second_opinion``, ``repro`` and ``expectations``)."""

    def _emit(self, item: CaseRecord | dict) -> None:
        """Stream a record, or a skipped item (a dict marked ``skipped``), to the sink."""
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
                rejected: int = 0) -> CaseRecord:
        check_stop()  # a case finished after the stop request is not recorded (see the module doc)
        ex = unconverted(ex)
        record = CaseRecord(
            backend=backend or self.backend_name, suite=suite, op=spec.name, domain=spec.domain,
            version=version.since, types=dict(types), example=example, outcome=ex.outcome, message=ex.message,
            examples_run=runs, duration_s=round(duration, 4), details=_jsonable(ex.details) if ex.details else None,
            minimal_example=minimal.describe() if minimal is not None and ex.outcome != PASS else None,
            rejected=rejected or None)
        if self.second_opinion and backend is None and minimal is not None and ex.outcome in ASKED_ABOUT \
                and (suite in SECOND_OPINION_SUITES or (ex.outcome in ASKED_IN_ROBUSTNESS and suite in REFUSAL_SUITES)):
            record = replace(record, second_opinion=self.second_opinion.ask(
                version, ex.case if ex.case is not None else minimal, ex.outcome, ex.expected, ex.actual))
        # an expected failure (xfail) gets no bundle: it is known, and its bundles were most of what
        # a run wrote under .opkit/repro
        expected = backend is None and self.expectations.find(record) is not None
        if ex.outcome in FAILING and self.repro is not None and minimal is not None and backend is None \
                and not expected:
            try:
                record = replace(record, repro=self.repro(record, minimal, ex, version))
            except Exception as exc:  # noqa: BLE001 - a repro failure must not lose the case
                record = replace(record, repro_error=f"{type(exc).__name__}: {exc}")
        if backend is None:  # backend-independent records (lowerings) are not the backend's expectations
            record = self.expectations.apply_record(record)
        check_stop()  # writing the repro may have taken a while
        self.results.append(record)
        self._emit(record)
        if self.progress:
            self.progress(record)
        return record


def unconverted(ex: Exec) -> Exec:
    """``ex`` as recorded: a refusal whose words are a ``ConversionFailed`` (the worker answers
    UNSUPPORTED, no kernel, so that searches and checks treat it as a model the engine cannot take)
    becomes ``unconverted``, with ``details.converter``: the converter's, not the runtime's. A copy;
    the caller's ``ex`` is left as the searches saw it."""
    label = converter_of(ex.message) if ex.outcome == UNSUPPORTED else None
    if not label:
        return ex
    details = {k: v for k, v in (ex.details or {}).items() if k != "kernel"}  # no kernel was asked
    return replace(ex, outcome=UNCONVERTED, details=dict(details, converter=label))


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
