"""The published JSON Schema (opkit/spec/schema.json) accepts every spec in specs/ and rejects
structurally bad ones, the way an editor using it would (keys are strings, as in JSON)."""

from __future__ import annotations

import glob
import json
import os

import pytest
import yaml

jsonschema = pytest.importorskip("jsonschema", reason="pip install jsonschema to check the published schema")

from opkit.emit.json_schema import json_schema  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_FILE = os.path.join(ROOT, "opkit", "spec", "schema.json")
SPEC_FILES = sorted(glob.glob(os.path.join(ROOT, "specs", "*", "*.yaml")))
BAD = os.path.join(ROOT, "tests", "bad_specs")

with open(SCHEMA_FILE, encoding="utf-8") as _f:
    SCHEMA = json.load(_f)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _jsonish(value):
    """What a YAML editor hands the schema: mapping keys become strings."""
    if isinstance(value, dict):
        return {str(k): _jsonish(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonish(v) for v in value]
    return value


def _load(path: str):
    with open(path, encoding="utf-8") as f:
        return _jsonish(yaml.safe_load(f))


def _errors(document) -> list:
    return sorted(VALIDATOR.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))


def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_file_is_current():
    """schema.json is what `opkit gen` derives from opkit/spec/fields.py today."""
    assert SCHEMA == json_schema(), "opkit/spec/schema.json is stale; run `opkit gen`"


def _rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


@pytest.mark.parametrize("path", SPEC_FILES, ids=_rel)
def test_spec_validates(path):
    errors = _errors(_load(path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


# bad specs that are structurally wrong, with the document path the schema must point at
REJECTED = {
    "unknown_key_spec": [],
    "unknown_key_version": ["versions", "0"],
    "unknown_key_attribute": ["versions", "0", "attributes", "axis"],
    "unknown_key_parameter": ["versions", "0", "inputs", "0"],
    "unknown_key_example": ["versions", "0", "examples", "0"],
    "missing_required": [],
    "wrong_kinds": ["versions", "0", "since"],
    "list_for_mapping": ["versions", "0", "attributes"],
    "list_top_level": [],
    "scalar_top_level": [],
    "bad_rank": ["versions", "0", "inputs", "0", "rank"],
    "variadic_not_last": ["versions", "0", "outputs", "0", "option"],
    # `since: 0` in the last version breaks the schema's minimum; the ordering itself is semantic
    "versions_not_ascending": ["versions", "3", "since"],
}
# semantic problems: the schema cannot see them, `opkit validate` does
SEMANTIC = ["default_outside_values", "undefined_type_param", "example_int_range", "example_rank",
            "duplicate_input_names"]


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_bad_spec_rejected(name):
    errors = _errors(_load(os.path.join(BAD, f"{name}.yaml")))
    assert errors, f"{name}.yaml should not validate"
    paths = [list(map(str, e.absolute_path)) for e in errors]
    want = REJECTED[name]
    assert any(p[:len(want)] == want for p in paths), paths


@pytest.mark.parametrize("name", SEMANTIC)
def test_semantic_errors_pass_the_schema(name):
    """The schema checks structure only; `opkit validate` catches the rest (editors need both)."""
    assert _errors(_load(os.path.join(BAD, f"{name}.yaml"))) == []


def test_small_mutations_are_rejected():
    good = {"op": "Relu", "domain": "ai.onnx", "versions": [{
        "since": 14, "inputs": [{"name": "X", "type": "T", "rank": {"min": 1}}],
        "outputs": [{"name": "Y", "type": "T"}],
        "attributes": {"alpha": {"type": "float", "default": 0.5}},
        "type_constraints": {"T": {"types": ["tensor(float)"]}},
        "input_range": [1, "inf"], "function": {"18": "text"},
        "examples": [{"name": "e", "inputs": {"X": {"dtype": "float", "value": [1.0]}}, "outputs": {"Y": [1.0]}}],
    }]}
    assert _errors(good) == []

    def mutated(edit):
        doc = json.loads(json.dumps(good))
        edit(doc)
        return _errors(doc)

    assert mutated(lambda d: d["versions"][0].update(support_level="comon"))
    assert mutated(lambda d: d["versions"][0]["attributes"]["alpha"].update(type="double"))
    assert mutated(lambda d: d["versions"][0]["inputs"][0].update(rank=-1))
    assert mutated(lambda d: d["versions"][0].update(input_range=[1, "many"]))
    assert mutated(lambda d: d["versions"][0].update(function={"x": "text"}))
    assert mutated(lambda d: d["versions"][0]["examples"][0]["inputs"]["X"].update(dtype="flaot"))
    assert mutated(lambda d: d["versions"][0]["examples"][0].pop("outputs"))
    assert mutated(lambda d: d.pop("versions"))
    assert mutated(lambda d: d.update(version=[]))
