"""Crash replay: a crash or hang found in one type binding of an op version, its minimal case
cast to every other binding searched, run once there."""

from __future__ import annotations

import time

from ..spec.model import OpSpec, OpVersion
from ..cases.derived import recast
from .case_exec import EXPENSIVE, Exec, failure_class, result_exec
from .stopping import check_stop


class CrashReplay:
    """Replays a ``Runner``'s crashes across bindings (a mixin: needs its ``_expensive_cases``,
    ``results``, ``backend``, ``timeout`` and ``_record``)."""

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
        shown = {(tuple(sorted(r.types.items())), failure_class(Exec(r.outcome, r.message, r.details or {})))
                 for r in self.results if r.op == spec.name and r.domain == spec.domain
                 and r.version == version.since and r.suite == suite}
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
