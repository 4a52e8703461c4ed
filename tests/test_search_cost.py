"""What a search costs besides the cases it runs: hypothesis prints the top-level strategy into
the note of every exception a draw raises, and opkit's case strategies print the whole spec
(160 kB, 0.15 s a binding: two thirds of the time of a Loop version whose sequence bindings
cannot be drawn). A search never asks for that print."""

from __future__ import annotations

from hypothesis import strategies as st

from opkit.cases.case import NotGeneratable
from opkit.conformance.case_exec import Exec
from opkit.conformance.runner import Runner
from opkit.results.outcomes import UNTESTED


class _NoBackend:
    info = {"name": "none"}


class _CostlyToPrint:
    printed = 0

    def __repr__(self):
        type(self).printed += 1
        return "costly"


def _refuse(_):
    raise NotGeneratable("bodies are drawn for tensor types only")


def test_a_draw_that_cannot_generate_does_not_print_the_strategy():
    runner = Runner(_NoBackend(), max_examples=20)
    strategy = st.builds(_refuse, st.just(_CostlyToPrint()))
    ex, case, runs = runner.hypothesis_run(strategy, lambda c: Exec("pass"), seed=3)
    assert ex.outcome == UNTESTED and "tensor types only" in ex.message and case is None and runs == 0
    assert _CostlyToPrint.printed == 0
