"""``opkit import SOURCE --check`` reports what the installed registry adds, changes or removes.

Nothing here depends on which onnxruntime is installed (or whether one is): the "registry" is a
committed spec altered with ``dataclasses.replace``, and the CLI test swaps the importer out.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import opkit.commands.import_specs
from opkit.cli import main
from opkit.importers.news import Changed, VersionRef, import_news, render_news
from opkit.spec.load import load_spec_file
from opkit.spec.model import Attribute, OpVersion

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MS = os.path.join(ROOT, "specs", "com.microsoft")


def _load(name: str):
    spec, diags = load_spec_file(os.path.join(MS, f"{name}.yaml"))
    assert not diags
    return spec


def _bumped(spec, version: str = "99.0.0"):
    """What the importer of a newer release returns for an op it did not change."""
    return replace(spec, source=(("onnxruntime", version),))


def test_bare_source_bump_is_not_news():
    disk = [_load("Attention"), _load("BiasGelu")]
    news = import_news("onnxruntime", [_bumped(s) for s in disk], disk)
    assert news.empty and not news.up_to_date and news.installed == "99.0.0"
    assert news.recorded == (dict(disk[0].source)["onnxruntime"],)
    lines = render_news(news)
    assert lines[0] == f"onnxruntime 99.0.0 is installed; specs/com.microsoft was imported from {news.recorded[0]}"
    assert "would only record onnxruntime 99.0.0" in lines[1] and len(lines) == 2


def test_same_release_and_nothing_changed_is_up_to_date():
    disk = [_load("Attention")]
    version = dict(disk[0].source)["onnxruntime"]
    news = import_news("onnxruntime", disk, disk)
    assert news.up_to_date
    assert render_news(news) == [f"onnxruntime {version} is installed, the release specs/com.microsoft was imported from: "
                     "up to date"]


def test_new_ops_and_new_versions():
    attention, gelu = _load("Attention"), _load("BiasGelu")
    later = replace(gelu.versions[-1], since=gelu.versions[-1].since + 5)
    registry = [_bumped(attention), _bumped(replace(gelu, versions=gelu.versions + (later,))),
                _bumped(replace(gelu, name="BrandNew"))]
    news = import_news("onnxruntime", registry, [attention, gelu])
    assert news.new == (VersionRef("com.microsoft", "BiasGelu", later.since),
                        VersionRef("com.microsoft", "BrandNew", gelu.versions[0].since))
    assert news.new_ops == {VersionRef("com.microsoft", "BrandNew")}
    assert not news.changed and not news.removed
    lines = render_news(news)
    assert lines[1:3] == [f"new: com.microsoft::BiasGelu-{later.since}",
                          f"new: com.microsoft::BrandNew-{gelu.versions[0].since} (new op)"]
    assert lines[-1] == "2 new, 0 changed, 0 removed: run `opkit import onnxruntime` to take the new and changed ones"


def test_removed_only_when_imported_and_gone_from_the_registry():
    attention, gelu = _load("Attention"), _load("BiasGelu")
    hand_written = replace(_load("BiasAdd"), source=(("hand-written", "a paper"),))
    # a version only on disk, beside versions the registry has, is hand-written for the merge
    extra = OpVersion(since=attention.versions[-1].since + 10, doc="hand-written future version")
    disk = [replace(attention, versions=attention.versions + (extra,)), gelu, hand_written]
    news = import_news("onnxruntime", [_bumped(attention)], disk)
    assert news.removed == tuple(VersionRef("com.microsoft", "BiasGelu", v.since) for v in gelu.versions)
    assert not news.new and not news.changed
    assert render_news(news)[-1] == (f"0 new, 0 changed, {len(gelu.versions)} removed: import never deletes a "
                                     "spec: delete the removed ones by hand")


def test_changed_fields_are_summarised_per_version():
    disk = _load("Attention")
    v = disk.versions[0]
    assert len(v.attributes) >= 2 and v.inputs and v.type_constraints
    dropped, kept_input, constraint = v.attributes[0], v.inputs[0], v.type_constraints[0]
    new_v = replace(
        v, doc=v.doc + "\nMore.",
        attributes=v.attributes[1:] + (Attribute("foo", "int", "new knob", default=0),),
        inputs=(replace(kept_input, doc="reworded"),) + v.inputs[1:],
        type_constraints=(replace(constraint, types=constraint.types + ("tensor(bfloat16)",)),)
        + v.type_constraints[1:],
    )
    # an extension on disk is kept by the merge, so the registry lacking it is no change
    on_disk = replace(disk, versions=(replace(v, semantics="y = attention(x)"),) + disk.versions[1:])
    news = import_news("onnxruntime", [_bumped(replace(disk, versions=(new_v,) + disk.versions[1:]))], [on_disk])
    bf16 = "" if "tensor(bfloat16)" in constraint.types else "+tensor(bfloat16)"
    assert news.changed == (Changed(VersionRef("com.microsoft", "Attention", v.since), tuple(filter(None, (
        "doc",
        f"attributes: +foo, -{dropped.name}",
        f"inputs: {kept_input.name} (doc)",
        f"type constraints: {constraint.name} ({bf16})" if bf16 else "",
    )))),)
    assert render_news(news)[1].startswith(f"changed: com.microsoft::Attention-{v.since} (doc; attributes: +foo, ")


def test_hand_written_spec_taken_over_by_the_registry_is_a_change():
    disk = replace(_load("BiasGelu"), source=(("hand-written", "a paper"),))
    news = import_news("onnxruntime", [_bumped(disk)], [disk])
    assert news.changed == (Changed(VersionRef("com.microsoft", "BiasGelu"),
                                    ("source: hand-written -> onnxruntime",)),)
    assert render_news(news)[1] == "changed: com.microsoft::BiasGelu (source: hand-written -> onnxruntime)"


def test_cli_check_prints_the_news_first_and_exits_1(tmp_path, monkeypatch, capsys):
    tree = tmp_path / "specs"
    shutil.copytree(MS, tree / "com.microsoft")
    before = {p.name: p.read_bytes() for p in (tree / "com.microsoft").iterdir()}
    on_disk = {p.stem: load_spec_file(str(p))[0] for p in (tree / "com.microsoft").iterdir()}
    recorded = dict(on_disk["Attention"].source)["onnxruntime"]
    gelu = on_disk.pop("BiasGelu")  # gone from the "newer" registry
    attention = on_disk["Attention"]
    v = attention.versions[0]
    x = Attribute("x", "int", "a new knob", default=0)
    on_disk["Attention"] = replace(attention, versions=(replace(v, attributes=v.attributes + (x,)),)
                                   + attention.versions[1:])
    registry = [_bumped(s) for s in on_disk.values()] + [_bumped(replace(gelu, name="Newcomer"))]
    monkeypatch.setattr(opkit.commands.import_specs, "load_importer", lambda name: lambda: registry)

    code = main(["--specs", str(tree), "import", "onnxruntime", "--check"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    expected = [
        f"onnxruntime 99.0.0 is installed; {tree / 'com.microsoft'} was imported from {recorded}",
        *(f"new: com.microsoft::Newcomer-{gv.since} (new op)" for gv in gelu.versions),
        f"changed: com.microsoft::Attention-{v.since} (attributes: +x)",
        *(f"removed: com.microsoft::BiasGelu-{gv.since}" for gv in gelu.versions),
        f"{len(gelu.versions)} new, 1 changed, {len(gelu.versions)} removed: run `opkit import onnxruntime` to "
        "take the new and changed ones; import never deletes a spec: delete the removed ones by hand",
    ]
    assert out[:len(expected)] == expected
    assert any(line.startswith("out of date: ") for line in out)
    assert {p.name: p.read_bytes() for p in (tree / "com.microsoft").iterdir()} == before



def test_cli_check_up_to_date_says_so_on_stderr_only(tmp_path, monkeypatch, capsys):
    tree = tmp_path / "specs"
    (tree / "com.microsoft").mkdir(parents=True)
    shutil.copy(os.path.join(MS, "Attention.yaml"), tree / "com.microsoft")
    registry = [load_spec_file(str(tree / "com.microsoft" / "Attention.yaml"))[0]]
    monkeypatch.setattr(opkit.commands.import_specs, "load_importer", lambda name: lambda: registry)

    code = main(["--specs", str(tree), "import", "onnxruntime", "--check"])
    out, err = capsys.readouterr()
    assert code == 0 and out == ""  # a clean check prints nothing on stdout, as before
    assert f"{tree / 'com.microsoft'} was imported from: up to date" in err


def test_a_reimport_keeps_where_the_semantics_come_from():
    """com.microsoft specs name the onnxruntime tests their semantics come from (``source.semantics``):
    a re-import of the same release dropped it, so the committed tree read as changed."""
    from opkit.importers.merge import merge_spec

    disk = replace(_load("BiasGelu"), source=(("onnxruntime", "1.31.1"), ("semantics", "bias_gelu_op_test.cc")))
    merged = merge_spec(replace(disk, source=(("onnxruntime", "1.31.1"),)), disk)
    assert dict(merged.source) == {"onnxruntime": "1.31.1", "semantics": "bias_gelu_op_test.cc"}
    news = import_news("onnxruntime", [replace(disk, source=(("onnxruntime", "1.31.1"),))], [disk])
    assert news.empty
