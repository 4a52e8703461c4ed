"""``RunConfig``: the options of one ``opkit test`` run, read once from the parsed command line;
the rest of the run reads this, not the argparse namespace."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass, fields

_LISTS = ("backend", "op", "opset", "suite", "expectations", "second_opinion")  # repeatable options


@dataclass(frozen=True)
class RunConfig:
    """Every ``opkit test`` option (``add_test_arguments``), by its argparse ``dest``; the
    repeatable ones as tuples (None when not given)."""

    backend: tuple[str, ...] | None
    op: tuple[str, ...] | None
    suite: tuple[str, ...] | None
    max_examples: int
    seed: int
    timeout: float
    report: str | None
    repro_dir: str | None
    no_repro: bool
    jobs: int | None
    expectations: tuple[str, ...] | None
    no_expectations: bool
    providers: str | None
    no_isolate: bool
    siblings: int
    max_bindings: int
    probe_limit: int
    shrink_budget: int | None
    memory_limit: float
    quiet: bool
    # options a caller's namespace may lack (read with a default, as the run always did)
    opset: tuple[str, ...] | None = None
    scheduler: str | None = None
    second_opinion: tuple[str, ...] | None = None
    no_second_opinion: bool = False
    junit_xml: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunConfig:
        values = {}
        for f in fields(cls):
            value = getattr(args, f.name) if f.default is MISSING else getattr(args, f.name, f.default)
            if f.name in _LISTS and value is not None:
                value = tuple(value)
            values[f.name] = value
        return cls(**values)
