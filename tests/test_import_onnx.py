"""Every onnx OpSchema (all versions, all domains) equals the spec loaded from specs/, field by field.

The comparison reads OpSchema directly and never calls ``opkit.importers``: if the importer drops
or mangles a field, this test sees the committed spec disagree with onnx itself.
"""

from __future__ import annotations

import functools
import os
from collections import Counter

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import onnx.defs  # noqa: E402,F811
import onnx.helper  # noqa: E402
import onnx.printer  # noqa: E402

from opkit.spec.load import load_spec_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(ROOT, "specs")
ONNX_DOMAINS = ("ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview")

SCHEMAS = sorted(onnx.defs.get_all_schemas_with_history(), key=lambda s: (s.domain, s.name, s.since_version))


def _domain(schema) -> str:
    return schema.domain or "ai.onnx"


def _id(schema) -> str:
    return f"{_domain(schema)}::{schema.name}-{schema.since_version}"


@functools.lru_cache(maxsize=None)
def _spec(domain: str, name: str):
    path = os.path.join(SPECS, domain, f"{name}.yaml")
    assert os.path.exists(path), f"no spec file {path}"
    spec, diags = load_spec_file(path)
    assert not diags, "\n".join(map(str, diags))
    return spec


def _version(schema):
    spec = _spec(_domain(schema), schema.name)
    assert spec.name == schema.name and spec.domain == _domain(schema)
    version = spec.version(schema.since_version)
    assert version is not None, f"{_id(schema)} missing from {spec.path}"
    return version


# enum -> spec spelling, written out here rather than borrowed from the importer
_ATTR_TYPES = {
    "FLOAT": "float", "INT": "int", "STRING": "string", "TENSOR": "tensor", "GRAPH": "graph",
    "FLOATS": "floats", "INTS": "ints", "STRINGS": "strings", "TENSORS": "tensors", "GRAPHS": "graphs",
    "SPARSE_TENSOR": "sparse_tensor", "SPARSE_TENSORS": "sparse_tensors",
    "TYPE_PROTO": "type_proto", "TYPE_PROTOS": "type_protos",
}
_OPTIONS = {"Single": "single", "Optional": "optional", "Variadic": "variadic"}
_DIFF = {"Unknown": None, "Differentiable": True, "NonDifferentiable": False}
_SUPPORT = {"COMMON": "common", "EXPERIMENTAL": "experimental"}
_DETERMINISM = {"Deterministic": "deterministic", "NonDeterministic": "nondeterministic", "Unknown": "unknown"}


def test_count_and_coverage():
    """659 op versions in onnx 1.23, every one of them in specs/, and nothing extra."""
    assert len(SCHEMAS) == 659
    domains = Counter(_domain(s) for s in SCHEMAS)
    assert set(domains) == set(ONNX_DOMAINS)
    expected = {(_domain(s), s.name, s.since_version) for s in SCHEMAS}
    on_disk = set()
    for domain in ONNX_DOMAINS:
        for fname in sorted(os.listdir(os.path.join(SPECS, domain))):
            spec = _spec(domain, fname[:-5])
            on_disk.update((domain, spec.name, v.since) for v in spec.versions)
    assert on_disk == expected


def _default_matches(atype: str, proto, got) -> None:
    if not proto.name:
        assert got is None
        return
    want = onnx.helper.get_attribute_value(proto)
    if atype == "float":
        assert isinstance(got, (int, float))
        assert np.float32(got) == np.float32(want), (got, want)
    elif atype == "floats":
        assert np.array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32)), (got, want)
    elif atype == "string":
        assert got == want.decode("utf-8")
    elif atype == "strings":
        assert list(got) == [w.decode("utf-8") for w in want]
    elif atype in ("int", "ints"):
        assert (list(got) if atype == "ints" else got) == (list(want) if atype == "ints" else want)
        assert not isinstance(got, bool)
    else:  # no onnx op has a default of another type today; catch the day one appears
        raise AssertionError(f"unexpected default of type {atype}")


def _params_match(kind: str, formal, params) -> None:
    assert [p.name for p in params] == [f.name for f in formal], kind
    for f, p in zip(formal, params):
        where = f"{kind} {f.name}"
        assert p.type == f.type_str, where
        assert p.doc == (f.description or ""), where
        assert p.option == _OPTIONS[f.option.name], where
        assert p.homogeneous == f.is_homogeneous, where
        assert p.differentiable is _DIFF[f.differentiation_category.name], where
        assert p.min_arity == f.min_arity, where


@pytest.mark.parametrize("schema", SCHEMAS, ids=_id)
def test_schema_equals_spec(schema):
    v = _version(schema)
    assert v.doc == (schema.doc or "")
    assert v.support_level == _SUPPORT[schema.support_level.name]
    assert v.deprecated is bool(schema.deprecated)

    attrs = list(schema.attributes.values())
    assert [a.name for a in v.attributes] == [a.name for a in attrs]
    for want, got in zip(attrs, v.attributes):
        atype = _ATTR_TYPES[want.type.name]
        assert got.type == atype, want.name
        assert got.required is bool(want.required), want.name
        assert got.doc == (want.description or ""), want.name
        _default_matches(atype, want.default_value, got.default)

    _params_match("input", schema.inputs, v.inputs)
    _params_match("output", schema.outputs, v.outputs)

    assert [(t.name, list(t.types), t.doc) for t in v.type_constraints] == [
        (t.type_param_str, list(t.allowed_type_strs), t.description or "") for t in schema.type_constraints
    ]
    assert (v.min_input, v.max_input, v.min_output, v.max_output) == (
        schema.min_input, schema.max_input, schema.min_output, schema.max_output)

    want_functions = {}
    if schema.has_function:
        for opset in schema.function_opset_versions:
            proto = onnx.FunctionProto()
            proto.ParseFromString(schema.get_function_with_opset_version(opset))
            want_functions[opset] = onnx.printer.to_text(proto)
    assert {f.opset: f.text for f in v.function} == want_functions
    assert [f.opset for f in v.function] == sorted(want_functions)
    assert v.has_function is schema.has_function

    want_cdf = list(schema.context_dependent_function_opset_versions) \
        if schema.has_context_dependent_function else []
    assert list(v.context_dependent_function) == want_cdf
    assert v.shape_inference is schema.has_type_and_shape_inference_function
    assert v.data_propagation is schema.has_data_propagation_function
    assert v.determinism == _DETERMINISM[schema.node_determinism.name]


def test_comparison_can_fail(tmp_path):
    """The comparison notices a changed field (guards against a vacuous test)."""
    src = os.path.join(SPECS, "ai.onnx", "Trilu.yaml")
    text = open(src, encoding="utf-8").read()
    bad = text.replace("default: 1", "default: 0", 1)
    assert bad != text
    path = tmp_path / "Trilu.yaml"
    path.write_text(bad, encoding="utf-8")
    spec, diags = load_spec_file(str(path))
    assert not diags
    schema = next(s for s in SCHEMAS if s.name == "Trilu" and s.domain == "")
    with pytest.raises(AssertionError):
        _default_matches("int", schema.attributes["upper"].default_value, spec.versions[0].attributes[0].default)
