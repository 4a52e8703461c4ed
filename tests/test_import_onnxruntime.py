"""Every com.microsoft schema in onnxruntime equals the spec loaded from specs/com.microsoft/.

onnxruntime's pybind schemas differ from onnx's: parameters spell ``typeStr``/``isHomogeneous``
and carry no differentiability or min_arity, attribute defaults are serialized AttributeProto bytes
(``_default_value``), and there are no function bodies or determinism flags. The comparison reads
them directly and never calls ``opkit.importers``.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from onnxruntime_pin import require_recorded_onnxruntime

try:
    require_recorded_onnxruntime()
except pytest.skip.Exception as exc:  # pragma: no cover - depends on the environment
    pytest.skip(str(exc), allow_module_level=True)

from onnxruntime.capi import onnxruntime_pybind11_state as _C  # noqa: E402

import onnx  # noqa: E402
import onnx.helper  # noqa: E402

from opkit.spec.load import load_spec_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC_DIR = os.path.join(ROOT, "specs", "com.microsoft")

SCHEMAS = sorted((s for s in _C.get_all_operator_schema() if s.domain == "com.microsoft"),
                 key=lambda s: (s.name, s.since_version))

_OPTIONS = {"Single": "single", "Optional": "optional", "Variadic": "variadic"}
_SUPPORT = {"COMMON": "common", "EXPERIMENTAL": "experimental"}


def _id(schema) -> str:
    return f"com.microsoft::{schema.name}-{schema.since_version}"


@functools.lru_cache(maxsize=None)
def _spec(name: str):
    path = os.path.join(SPEC_DIR, f"{name}.yaml")
    assert os.path.exists(path), f"no spec file {path}; run `opkit import onnxruntime`"
    spec, diags = load_spec_file(path)
    assert not diags, "\n".join(map(str, diags))
    return spec


def test_every_com_microsoft_op_has_a_spec():
    assert len(SCHEMAS) > 100  # onnxruntime 1.31 has 136
    expected = {(s.name, s.since_version) for s in SCHEMAS}
    on_disk = set()
    for fname in os.listdir(SPEC_DIR):
        spec = _spec(fname[:-5])
        assert spec.domain == "com.microsoft"
        # hand-written versions may exist beside imported ones; every imported one must be there
        on_disk.update((spec.name, v.since) for v in spec.versions)
    assert expected <= on_disk
    assert {n for n, _ in on_disk} == {n for n, _ in expected}


def _default(attr):
    raw = attr._default_value
    if not raw:
        return None
    proto = onnx.AttributeProto()
    proto.ParseFromString(raw)
    return proto if proto.name else None


def _default_matches(atype: str, proto, got) -> None:
    if proto is None:
        assert got is None
        return
    want = onnx.helper.get_attribute_value(proto)
    if atype == "float":
        assert np.float32(got) == np.float32(want), (got, want)
    elif atype == "floats":
        assert np.array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
    elif atype == "string":
        assert got == want.decode("utf-8")
    elif atype == "strings":
        assert list(got) == [w.decode("utf-8") for w in want]
    elif atype in ("int", "ints"):
        assert got == (list(want) if atype == "ints" else want) and not isinstance(got, bool)
    else:
        raise AssertionError(f"unexpected default of type {atype}")


def _params_match(kind: str, formal, params) -> None:
    assert [p.name for p in params] == [f.name for f in formal], kind
    for f, p in zip(formal, params):
        where = f"{kind} {f.name}"
        assert p.type == f.typeStr, where
        assert p.doc == (f.description or ""), where
        assert p.option == _OPTIONS[f.option.name], where
        assert p.homogeneous == f.isHomogeneous, where
        assert p.differentiable is None, where  # onnxruntime's pybind does not expose it
        assert p.min_arity == 1, where


@pytest.mark.parametrize("schema", SCHEMAS, ids=_id)
def test_schema_equals_spec(schema):
    spec = _spec(schema.name)
    v = spec.version(schema.since_version)
    assert v is not None
    assert v.doc == (schema.doc or "")
    assert v.support_level == _SUPPORT[schema.support_level.name]
    assert v.deprecated is bool(schema.deprecated)

    attrs = list(schema.attributes.values())
    assert [a.name for a in v.attributes] == [a.name for a in attrs]
    for want, got in zip(attrs, v.attributes):
        atype = want.type.name.lower()
        assert got.type == atype, want.name
        assert got.required is bool(want.required), want.name
        assert got.doc == (want.description or ""), want.name
        _default_matches(atype, _default(want), got.default)

    _params_match("input", schema.inputs, v.inputs)
    _params_match("output", schema.outputs, v.outputs)
    assert [(t.name, list(t.types), t.doc) for t in v.type_constraints] == [
        (t.type_param_str, list(t.allowed_type_strs), t.description or "") for t in schema.type_constraints
    ]
    assert (v.min_input, v.max_input, v.min_output, v.max_output) == (
        schema.min_input, schema.max_input, schema.min_output, schema.max_output)
    assert v.shape_inference is schema.has_type_and_shape_inference_function
    # fields onnxruntime's schemas do not carry keep their defaults
    assert v.function == () and v.context_dependent_function == ()
    assert v.data_propagation is False and v.determinism == "deterministic"
