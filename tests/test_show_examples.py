"""`opkit show` lists what it counts: each example (attributes, inputs -> outputs), property and
lowering, one line each."""

from __future__ import annotations

from opkit.cli import main


def test_show_lists_the_examples_it_counts(capsys):
    assert main(["show", "Trilu", "--domain", "ai.onnx"]) == 0
    out = capsys.readouterr().out
    assert "examples (25; values: --format yaml):" in out
    assert "  tril_zero: upper=0; input int64[3, 0, 5], k int64[] -> output int64[3, 0, 5]" in out
    assert "  triu: input int64[4, 5] -> output int64[4, 5]" in out
    assert "properties (6):" in out and "  idempotent: equal(op(op(input" in out
    assert "lowerings (1):" in out and "-> directml::DiagonalMatrix1-1" in out
    listed = out.split("examples (25", 1)[1].split("lowerings", 1)[0].splitlines()[1:]
    assert listed and all(len(line) <= 100 for line in listed)  # long property texts are cut
