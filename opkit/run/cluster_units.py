"""How ``opkit test --scheduler`` cuts a sweep into Dask tasks (``units``): one per op version
(with the older versions it supersedes), the biggest first."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..conformance.superseded import version_groups


@dataclass(frozen=True)
class Unit:
    """One task's share of a sweep: some versions of one op (``versions`` None: all of them). An op
    is split by version, so that one big op (Cast: 639 cases in 9 versions) does not keep a single
    worker busy after the others ran out of work; its lowerings go with its last version."""

    path: str
    name: str
    versions: tuple[int, ...] | None = None
    lowerings: bool = True
    weight: int = field(default=1, compare=False)  # its expected size in cases: the biggest start first

    @property
    def label(self) -> str:
        return self.name + (f"-{self.versions[0]}" if self.versions else "")


def _weight(versions, max_bindings: int | None) -> int:
    """About how many cases some op versions make: a differential case and one per property for
    every type binding (the product of the type constraints' sizes, at most ``max_bindings``: a
    cheap bound of what the run covers), plus the examples. Tasks are started biggest first, so a
    sweep ends on small tasks instead of one big one on a single worker (Trilu-14: 150 cases)."""
    import math

    from ..cases.bindings import PROBE_LIMIT

    total = 0
    for version in versions:
        every = math.prod(len(tc.types) for tc in version.type_constraints) or 1
        searched = min(every, max_bindings) if max_bindings else every
        # the rest are probed with 2 examples instead of 20 (Runner.run_differential)
        probed = min(every, PROBE_LIMIT) - searched if every > searched else 0
        total += searched * (1 + len(version.properties or ())) + probed // 6 + len(version.examples or ())
    return max(total, 1)


def units(specs, max_bindings: int | None = 64, selected: dict | None = None) -> list[Unit]:
    """The tasks of a sweep over ``specs``, in the order a local run makes their records;
    ``selected`` ({path: sinces}) narrows an op to the versions ``--op`` / ``--opset`` chose."""
    out = []
    for spec in specs:
        chosen = (selected or {}).get(spec.path)
        versions = [v for v in spec.versions if chosen is None or v.since in chosen]
        if chosen is None and len(versions) <= 1:
            out.append(Unit(spec.path, spec.name, weight=_weight(versions, max_bindings)))
            continue
        # a version and the older ones it supersedes go together (conformance.superseded): their
        # probes lean on its search, in the order a local run takes them
        groups = version_groups(spec, frozenset(chosen) if chosen is not None else None)
        by_since = {v.since: v for v in versions}
        out += [Unit(spec.path, spec.name, group, k == len(groups) - 1,
                     _weight([by_since[s] for s in group], max_bindings))
                for k, group in enumerate(groups)]
    return out

