"""`opkit import onnx-examples`: onnx's node tests become spec examples, and the examples hold.

The import is run on copies of real specs with a handful of onnx's own node test cases, so what it
writes is checked end to end: the spec loads, the values round-trip, a re-import changes nothing,
hand-written examples are kept. The committed specs' examples are then run on opkit's reference
backend and their page snippets are executed.
"""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest

from opkit.importers import onnx_examples as ox
from opkit.commands.import_specs import import_examples
from opkit.spec.load import load_spec_file, load_specs
from opkit.spec.model import ContainerValue, TensorValue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(ROOT, "specs")
OPS = ("Gather", "Concat", "SequenceInsert", "Trilu", "Bernoulli", "Erf", "If")


@pytest.fixture(scope="module")
def testcases():
    wanted = {op.lower() for op in OPS}
    return [tc for tc in ox.node_testcases()
            if tc.model.graph.node and tc.model.graph.node[0].op_type.lower() in wanted]


@pytest.fixture
def spec_dir(tmp_path):
    for op in OPS:
        os.makedirs(tmp_path / "ai.onnx", exist_ok=True)
        shutil.copy(os.path.join(SPECS, "ai.onnx", f"{op}.yaml"), tmp_path / "ai.onnx" / f"{op}.yaml")
    return tmp_path


def _spec(spec_dir, op):
    spec, diags = load_spec_file(str(spec_dir / "ai.onnx" / f"{op}.yaml"))
    assert diags == []
    return spec


def _strip_imported(spec_dir):
    """The copies without what an earlier import wrote, so the import has work to do."""
    from dataclasses import replace

    from opkit.spec.dump import dump_spec

    for op in OPS:
        path = spec_dir / "ai.onnx" / f"{op}.yaml"
        spec, _ = load_spec_file(str(path))
        versions = tuple(replace(v, examples=tuple(e for e in v.examples if not ox.is_imported(e)))
                         for v in spec.versions)
        path.write_text(dump_spec(replace(spec, versions=versions)))


def test_import_writes_loadable_examples_and_is_idempotent(spec_dir, testcases):
    _strip_imported(spec_dir)
    result, found, problems = import_examples(str(spec_dir), testcases=testcases)
    assert problems == [] and result.written
    gather = _spec(spec_dir, "Gather").versions[-1]
    by_name = {e.name: e for e in gather.examples}
    assert "gather_0" in by_name
    e = by_name["gather_0"]
    assert e.source.startswith("onnx node test test_gather_0 (onnx ")
    data = dict(e.inputs)["data"]
    assert isinstance(data, TensorValue) and data.dtype == "float" and data.shape == (5, 4, 3, 2)
    # the values are onnx's, exactly: float32 written as the shortest decimal that reads back
    tc = next(t for t in testcases if t.name == "test_gather_0")
    from opkit.conformance.harness import tensor_array
    np.testing.assert_array_equal(tensor_array(data), tc.data_sets[0][0][0])
    assert dict(e.attributes) == {"axis": 0}
    again, _, _ = import_examples(str(spec_dir), testcases=testcases)
    assert not again.written  # nothing changes on a re-import


def test_variadic_and_sequence_arguments(spec_dir, testcases):
    _strip_imported(spec_dir)
    import_examples(str(spec_dir), testcases=testcases)
    concat = {e.name: e for e in _spec(spec_dir, "Concat").versions[-1].examples}
    inputs = dict(concat["concat_2d_axis_0"].inputs)["inputs"]
    assert isinstance(inputs, tuple) and len(inputs) == 2 and all(isinstance(t, TensorValue) for t in inputs)
    seq_at = [e for v in _spec(spec_dir, "SequenceInsert").versions for e in v.examples]
    assert seq_at, "SequenceInsert's node tests state a sequence input"
    seq = dict(seq_at[0].inputs)["input_sequence"]
    assert isinstance(seq, ContainerValue) and seq.type.startswith("seq(tensor(") and seq.items


def test_hand_written_examples_are_kept_and_win_a_clash(spec_dir, testcases):
    before = [e for e in _spec(spec_dir, "Trilu").versions[-1].examples if not ox.is_imported(e)]
    assert before, "Trilu's spec has hand-written examples"
    _, found, _ = import_examples(str(spec_dir), testcases=testcases)
    after = _spec(spec_dir, "Trilu").versions[-1].examples
    assert [e for e in after if not ox.is_imported(e)] == before
    clashes = [name for name, why in found.skipped_cases if why == "a hand-written example has its name"]
    assert "test_triu" in clashes


def test_what_a_spec_cannot_state_is_left_out_with_the_reason(spec_dir, testcases):
    _, found, _ = import_examples(str(spec_dir), testcases=testcases)
    reasons = dict(found.skipped_cases)
    assert reasons["test_if"] == "a graph attribute"


def test_large_cases_are_left_out_unless_a_version_would_have_none(spec_dir, testcases):
    _strip_imported(spec_dir)
    _, found, _ = import_examples(str(spec_dir), testcases=testcases, max_elements=100)
    assert dict(found.skipped_cases)["test_gather_0"] == "more than 100 elements"  # Gather has smaller cases
    assert "erf" not in {i.example.name for i in found.examples}  # 6,144: beyond 8x the limit even alone
    _, found, _ = import_examples(str(spec_dir), testcases=testcases, max_elements=1000)
    assert "erf" in {i.example.name for i in found.examples}  # Erf's only case: the smallest is still taken


def test_check_reports_out_of_date_specs(spec_dir, testcases):
    _strip_imported(spec_dir)
    result, _, _ = import_examples(str(spec_dir), check=True, testcases=testcases)
    assert result.written  # would change ...
    assert not any(e.source for v in _spec(spec_dir, "Gather").versions for e in v.examples)  # ... wrote nothing


# ------------------------------------------------------------------------------------------------
# the committed examples


@pytest.fixture(scope="module")
def committed():
    specs, diags = load_specs([SPECS])
    assert not [d for d in diags if d.severity == "error"]
    return specs


def test_ai_onnx_pages_have_examples_in_their_newest_version(committed):
    ops = [s for s in committed if s.domain == "ai.onnx"]
    with_examples = [s for s in ops if s.versions[-1].examples]
    assert len(with_examples) >= 0.95 * len(ops), sorted(s.name for s in ops if not s.versions[-1].examples)


def test_every_page_snippet_runs(committed):
    """Each example's snippet, as the op page prints it, builds the model, runs it and passes."""
    from opkit.emit.page_examples import snippet

    failures = []
    for spec in committed:
        for v in spec.versions:
            for e in v.examples:
                try:
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore")
                        exec(compile(snippet(spec, v, e), f"<{spec.name}-{v.since} {e.name}>", "exec"), {})
                except Exception as exc:  # noqa: BLE001 - collected, reported together
                    failures.append(f"{spec.name}-{v.since} {e.name}: {type(exc).__name__}: {str(exc)[:200]}")
    assert failures == []


def test_examples_suite_passes_on_the_reference_backend(tmp_path):
    """Every example runs on opkit's reference backend and passes: the ops the issue names
    (Gather, Resize, Conv, Einsum, TopK, Pad, ReduceMean, Cast, Softmax, ScatterND) and all others."""
    import json

    from opkit.cli import main

    report = tmp_path / "examples.json"
    code = main(["test", "--backend", "reference", "--suite", "examples", "-j", "1", "--report", str(report)])
    data = json.loads(report.read_text())
    outcomes = {}
    for case in data["cases"]:
        outcomes.setdefault(case["outcome"], []).append(f"{case['op']}-{case['version']} {case['example']}")
    assert set(outcomes) == {"pass"}, {k: v[:10] for k, v in outcomes.items() if k != "pass"}
    assert code == 0
    passed = {c["op"] for c in data["cases"]}
    assert {"Gather", "Resize", "Conv", "Einsum", "TopK", "Pad", "ReduceMean", "Cast", "Softmax",
            "ScatterND"} <= passed
    assert len(data["cases"]) > 1000


def test_an_example_the_spec_refuses_is_left_out_with_the_loaders_reason(spec_dir, testcases):
    """A spec narrower than onnx (here Gather without float) refuses onnx's float cases: they are
    reported, not written, and the spec still loads."""
    path = spec_dir / "ai.onnx" / "Gather.yaml"
    text = path.read_text()
    assert "tensor(float)," in text
    path.write_text(text.replace("tensor(float),", ""))
    _strip_imported(spec_dir)
    _, found, problems = import_examples(str(spec_dir), testcases=testcases)
    assert problems == []
    reasons = dict(found.skipped_cases)
    assert reasons["test_gather_0"].startswith("the spec refuses it: ") and "float" in reasons["test_gather_0"]
    names = {e.name for v in _spec(spec_dir, "Gather").versions for e in v.examples}
    assert "gather_0" not in names
