"""``opkit fmt``: spec files in the canonical form."""

from __future__ import annotations

import os

from opkit.cli import main
from opkit.commands.fmt import comment_position, format_file

FLOW = ('{op: Foo, domain: my.ops, versions: [{since: 1, doc: "x # not a comment", inputs: [{name: X, type: T}], '
        'outputs: [{name: Y, type: T}], type_constraints: {T: {types: ["tensor(float)"]}}}]}\n')


def _spec(tmp_path, text=FLOW):
    folder = tmp_path / "specs" / "my.ops"
    folder.mkdir(parents=True)
    path = folder / "Foo.yaml"
    path.write_text(text)
    return path


def test_flow_style_is_rewritten_and_then_canonical(tmp_path, capsys):
    path = _spec(tmp_path)
    specs = str(tmp_path / "specs")
    assert main(["fmt", "--check", specs]) == 1
    assert "not in the canonical form" in capsys.readouterr().out
    assert path.read_text() == FLOW  # --check writes nothing
    assert main(["fmt", specs]) == 0
    text = path.read_text()
    assert text.startswith("op: Foo\ndomain: my.ops\nversions:\n- since: 1\n") and "x # not a comment" in text
    assert main(["fmt", "--check", "-q", specs]) == 0
    assert main(["validate", "-q", specs]) == 0
    assert not [n for n in os.listdir(path.parent) if n != "Foo.yaml"]  # no temporary files left


def test_comments_and_broken_files_are_left_alone(tmp_path, capsys):
    path = _spec(tmp_path, FLOW + "# a note\n")
    assert main(["fmt", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:2:1: error: a YAML comment" in out and path.read_text() == FLOW + "# a note\n"
    path.write_text("op: Foo\nversions: [\n")
    assert main(["fmt", str(path)]) == 1
    assert f"{path}:" in capsys.readouterr().out and path.read_text() == "op: Foo\nversions: [\n"


def test_comment_position_ignores_hashes_inside_scalars():
    assert comment_position("a: 'x # y'\nb: |\n  # in a block\n  z\nc: d # here\n") == (5, 6)
    assert comment_position("a: b#c\n") is None  # '#' not after a space is part of a plain scalar
    assert comment_position("a: 1\n") is None


def test_the_built_in_specs_are_canonical():
    from opkit.core.project import builtin_tree
    from opkit.spec.load import spec_files

    files = spec_files([builtin_tree().specs])[:40]
    assert files and all(not format_file(p).changed and format_file(p).problem is None for p in files)
