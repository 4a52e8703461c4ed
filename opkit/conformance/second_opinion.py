"""A second opinion on every finding.

A mismatch or error that opkit charges to a runtime is a claim about someone else's work, and
opkit's own reference kernel can be the one that is wrong. So each failing case's minimal model
and inputs are also run on other engines (onnx's ReferenceEvaluator by default, and any runtime
named with ``--second-opinion``), and the report records what each says: one verdict per engine,
in the words of :mod:`opkit.results.verdicts` (agrees with opkit, agrees with
the runtime, differs from both, also fails, cannot run it), which also says when a finding is
flagged for review.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..results.outcomes import FINDING_OUTCOMES, MISMATCH, OUTPUT_SUITES
from ..results.verdicts import AGREES_WITH_OPKIT, AGREES_WITH_RUNTIME, ALSO_FAILS, CANNOT_RUN, DIFFERS_FROM_BOTH
from .worker import OK, REFUSED, UNSUPPORTED

ASKED_ABOUT = FINDING_OUTCOMES  # the outcomes charged to the runtime as findings
SUITES = OUTPUT_SUITES  # suites whose failure is about outputs for given inputs
MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class Opinion:
    """What one other engine says about one failing case."""

    backend: str
    verdict: str
    message: str = ""

    def to_json(self) -> dict:
        out = {"backend": self.backend, "verdict": self.verdict}
        if self.message:
            out["message"] = self.message
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Opinion":
        return cls(str(data["backend"]), str(data["verdict"]), str(data.get("message", "")))


def judge(outcome: str, expected: tuple | None, runtime_outputs: list | None, result,
          compare_outputs: Callable[[tuple, list], str | None], backend: str) -> Opinion:
    """The verdict of one engine's ``result`` (a worker Result) on a case the runtime failed with
    ``outcome``. ``compare_outputs(reference, actual)`` returns None when ``actual`` matches
    ``reference`` within the spec's tolerance, else a one-line difference."""
    if result.kind in (UNSUPPORTED, REFUSED):  # the engine does not run it either: no opinion
        return Opinion(backend, CANNOT_RUN, _short(result.message))
    if result.kind != OK:
        verdict = CANNOT_RUN if outcome == MISMATCH else ALSO_FAILS
        return Opinion(backend, verdict, _short(f"{result.kind}: {result.message}"))
    differs = compare_outputs(expected, result.outputs) if expected is not None else "no expected outputs"
    if differs is None:
        return Opinion(backend, AGREES_WITH_OPKIT)
    if runtime_outputs is not None and compare_outputs(tuple(runtime_outputs), result.outputs) is None:
        return Opinion(backend, AGREES_WITH_RUNTIME, _short(differs))
    return Opinion(backend, DIFFERS_FROM_BOTH, _short(differs))


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " ..."


class SecondOpinions:
    """The engines asked about each finding of one run. Each engine's worker is started on the
    first finding (a clean run pays nothing) and kept in ``workers`` (a dict the caller may share
    between runs, as -j pool processes do)."""

    def __init__(self, backend_specs: list, make_worker: Callable, timeout: float, workers: dict | None = None):
        self.specs = list(backend_specs)
        self.make_worker = make_worker
        self.timeout = timeout
        self.workers = workers if workers is not None else {}
        self._runners: dict = {}
        self._broken: dict = {}  # engine name -> why it could not start

    def __bool__(self) -> bool:
        return bool(self.specs)

    def _runner(self, spec):
        from .backend_runner import BackendRunner

        runner = self._runners.get(spec.name)
        if runner is None:
            worker = self.workers.get(("second-opinion", spec.name))
            if worker is None:
                worker = self.workers[("second-opinion", spec.name)] = self.make_worker(spec)
            runner = self._runners[spec.name] = BackendRunner(worker, worker.describe())
        return runner

    def ask(self, version, case, outcome: str, expected: tuple | None, runtime_outputs: list | None) -> list[dict]:
        """Every engine's opinion on ``case`` (JSON form), in the order they were named."""
        from . import harness
        from .case_exec import check_outputs

        if expected is None:
            try:
                expected = harness.expected_outputs(case)
            except Exception:  # noqa: BLE001 - no oracle output: the engines are still asked
                expected = None

        def compare_outputs(reference, actual):
            ex = check_outputs(version, case, reference, actual)
            return None if ex.outcome == "pass" else ex.message

        opinions = []
        for spec in self.specs:
            if spec.name in self._broken:
                opinions.append(Opinion(spec.name, CANNOT_RUN, self._broken[spec.name]).to_json())
                continue
            try:
                runner = self._runner(spec)
                why = runner.cannot_run(case.domain, case.since, case.op) if hasattr(runner, "cannot_run") else None
                if why:
                    opinions.append(Opinion(spec.name, CANNOT_RUN, why).to_json())
                    continue
                result = runner.run_case(case, version, self.timeout)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 - an engine that cannot start has no opinion
                self._broken[spec.name] = _short(f"could not start: {type(exc).__name__}: {exc}")
                opinions.append(Opinion(spec.name, CANNOT_RUN, self._broken[spec.name]).to_json())
                continue
            opinions.append(judge(outcome, expected, runtime_outputs, result, compare_outputs, spec.name).to_json())
        return opinions

    def close(self, own: bool = True) -> None:
        if own:
            for worker in self.workers.values():
                try:
                    worker.close()
                except Exception:  # noqa: BLE001
                    pass
            self.workers.clear()
        self._runners.clear()


__all__ = ["AGREES_WITH_OPKIT", "AGREES_WITH_RUNTIME", "ALSO_FAILS", "CANNOT_RUN", "DIFFERS_FROM_BOTH", "Opinion",
           "SecondOpinions", "judge"]
