"""``Job``: the unit of work of ``run_unit``: some ops on one backend, with the run's settings.
It goes, pickled, to a -j pool process and to a Dask worker."""

from __future__ import annotations

from dataclasses import dataclass

from ..cases.bindings import PROBE_LIMIT


@dataclass(frozen=True, eq=False)
class Job:
    """What ``run_unit`` runs. ``progress`` is the parent's progress line (None in a pool process or
    on a cluster); ``stream`` the partial-results file of a -j pool process; ``project`` the
    client's project (``core.project._to_json``) for a Dask worker; ``versions`` and ``lowerings``
    a cluster task's share of an op (see ``cluster_units.Unit``)."""

    backend: object  # the BackendSpec under test
    timeout: float
    max_examples: int
    seed: int
    repro_dir: str | None
    expectations: object  # results.outcomes.Expectations
    suites: tuple[str, ...]
    siblings: int
    no_isolate: bool
    progress: object = None
    memory_gb: float | None = None
    max_bindings: int | None = None
    probe_limit: int = PROBE_LIMIT
    shrink_budget: int | None = None
    selected_versions: dict | None = None  # {spec path: the versions --op / --opset chose}
    second_opinions: tuple = ()
    paths: tuple[str, ...] = ()  # the spec files to run
    versions: tuple[int, ...] | None = None
    lowerings: bool = True
    stream: str | None = None
    project: dict | None = None
