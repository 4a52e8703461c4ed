"""Map values end to end: MapValue, type checks, drawing, model types, comparison, repro bundles,
and the kernels of ai.onnx.ml's CastMap, DictVectorizer and ZipMap (hand-computed values)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from opkit.cases import cases
from opkit.cases.bindings import all_bindings, bindable_types
from opkit.cases.onnx_model import build, value_type
from opkit.conformance import harness
from opkit.conformance.output_compare import Mismatch, compare_value
from opkit.conformance.repro import load_map_record, map_record, save_values, split_values
from opkit.core.values import (MapValue, as_value, describe_value, element_of, is_container_type, make_map,
                               map_types, value_size)
from opkit.kernels import KernelValidationError
from opkit.kernels.registry import get_kernel

_SETTINGS = settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))


def kernel(op):
    return get_kernel("ai.onnx.ml", op, 1)


# ---------------------------------------------------------------------------------------------
# values and types


def test_make_map_normalizes_and_keeps_types():
    m = make_map({2: 0.1, 1: 3}, "int64", "float")
    assert isinstance(m, dict) and m.type_str == "map(int64, float)"
    assert m[2] == float(np.float32(0.1)) and isinstance(m[1], float)  # float values rounded to float32
    again = pickle.loads(pickle.dumps(m))
    assert again == m and again.type_str == m.type_str  # survives worker pipes with its types
    with pytest.raises(TypeError):
        make_map({"a": 1.0}, "int64", "float")  # a string key in an int64 map
    with pytest.raises(ValueError):
        make_map([(1, 1.0), (1, 2.0)], "int64", "float")  # a repeated key


def test_type_string_helpers():
    assert map_types("map(int64, string)") == ("int64", "string")
    assert map_types("map(string,tensor(double))") == ("string", "double")
    assert is_container_type("map(int64, float)") and element_of("seq(map(string, float))") == "float"
    assert bindable_types(["map(int64, string)", "seq(map(int64, float))", "map(float, float)"]) == \
        ["map(int64, string)", "seq(map(int64, float))"]  # float keys are not drawn
    assert describe_value(make_map({1: 2.0}, "int64", "double")) == "map(int64, double){1}"
    assert value_size([make_map({1: 2.0, 3: 4.0}, "int64", "float")]) == 2


def test_dict_vectorizer_binding_links_output_to_map_values():
    version = harness.load_op("ai.onnx.ml", "DictVectorizer").versions[0]
    bindings = all_bindings(version)
    assert len(bindings) == 6  # one per map type, T2 following the map's value type
    for b in bindings:
        assert b["T2"] == f"tensor({map_types(b['T1'])[1]})"
    cast_map = harness.load_op("ai.onnx.ml", "CastMap").versions[0]
    assert len(all_bindings(cast_map)) == 6  # T2 free: cast_to picks it


def test_value_type_builds_map_type_protos():
    t = value_type("seq(map(string, float))")
    inner = t.sequence_type.elem_type.map_type
    assert inner.key_type == 8 and inner.value_type.tensor_type.elem_type == 1
    assert value_type("map(int64, double)").map_type.value_type.tensor_type.elem_type == 11


def test_generated_type_check_takes_plain_dicts_and_rejects_wrong_maps():
    out = kernel("CastMap")({1: 2.0, 0: 1.0})[0]  # a plain dict becomes map(int64, float)
    assert out.tolist() == [1.0, 2.0]
    with pytest.raises(KernelValidationError) as err:
        kernel("CastMap")({"a": 1.0})
    assert err.value.rule == "type:T1"


# ---------------------------------------------------------------------------------------------
# kernels, against hand-computed values


def test_cast_map_dense_sparse_and_conversions():
    cm = kernel("CastMap")
    x = make_map({3: 0.5, 1: 2.0, 7: -1.25}, "int64", "float")
    assert cm(x)[0].tolist() == [2.0, 0.5, -1.25] and cm(x)[0].dtype == np.float32
    sparse = cm(make_map({0: 1.5, 3: -2.0}, "int64", "float"), map_form="SPARSE", max_map=5)[0]
    assert sparse.tolist() == [1.5, 0.0, 0.0, -2.0, 0.0]
    assert cm(make_map({2: 4.0, 1: -3.0}, "int64", "float"), cast_to="TO_INT64")[0].tolist() == [-3, 4]
    assert cm(make_map({1: "2.5", 0: "-1e2"}, "int64", "string"))[0].tolist() == [-100.0, 2.5]
    strings = cm(make_map({1: "b", 0: "a"}, "int64", "string"), cast_to="TO_STRING", map_form="SPARSE", max_map=2)
    assert strings[0].tolist() == ["a", "b"]


@pytest.mark.parametrize("x, attrs, rule", [
    ({5: 1.0}, {"map_form": "SPARSE", "max_map": 5}, "C1"),  # key past max_map - 1
    ({-1: 1.0}, {"map_form": "SPARSE", "max_map": 5}, "C1"),  # a negative key is no position
    ({1: 1.5}, {"cast_to": "TO_INT64"}, "C2"),  # a fractional float to int64 is undefined
    ({1: 1.5}, {"cast_to": "TO_STRING"}, "C2"),  # no text format for floats
])
def test_cast_map_rules(x, attrs, rule):
    with pytest.raises(KernelValidationError) as err:
        kernel("CastMap")(make_map(x, "int64", "float"), **attrs)
    assert err.value.rule == rule


def test_dict_vectorizer_text_example_and_rules():
    dv = kernel("DictVectorizer")
    y = dv(make_map({"a": 4, "c": 8}, "string", "int64"), string_vocabulary=["a", "c", "b", "z"])[0]
    assert y.tolist() == [4, 8, 0, 0] and y.dtype == np.int64  # the text's own example
    y = dv(make_map({1: 2.5}, "int64", "double"), int64_vocabulary=[5, 1, 2])[0]
    assert y.tolist() == [0.0, 2.5, 0.0] and y.dtype == np.float64 and y.ndim == 1
    for x, attrs, rule in [({3: 1.0}, {"int64_vocabulary": [5, 1]}, "V3"),
                           ({1: 1.0}, {"int64_vocabulary": [1], "string_vocabulary": ["a"]}, "V1"),
                           ({1: 1.0}, {"string_vocabulary": ["a"]}, "V2"),
                           ({1: 1.0}, {"int64_vocabulary": [1, 1]}, "V4")]:
        with pytest.raises(KernelValidationError) as err:
            dv(make_map(x, "int64", "float"), **attrs)
        assert err.value.rule == rule


def test_zip_map_rows_and_labels():
    zm = kernel("ZipMap")
    z = zm(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32), classlabels_strings=["a", "b", "c"])[0]
    assert [m.type_str for m in z] == ["map(string, float)"] * 2
    assert z[1] == {"a": 0.5, "b": 0.25, "c": 0.25} and z[0]["c"] == float(np.float32(0.7))
    assert zm(np.zeros((0, 2), np.float32), classlabels_int64s=[10, 20])[0] == []
    with pytest.raises(KernelValidationError) as err:
        zm(np.zeros((1, 3), np.float32), classlabels_int64s=[10, 20])
    assert err.value.rule == "Z2"


# ---------------------------------------------------------------------------------------------
# the generator: every drawn case is valid


@pytest.mark.parametrize("op", ["CastMap", "DictVectorizer", "ZipMap"])
def test_drawn_cases_satisfy_the_rules(op):
    spec = harness.load_op("ai.onnx.ml", op)
    version = spec.versions[0]
    fn = kernel(op)
    types = {"CastMap": {"T2": ["tensor(float)", "tensor(int64)"]}}.get(op)
    seen = set()

    @_SETTINGS
    @given(cases(spec, version, types=types))
    def check(case):
        args = dict(case.inputs)
        outputs = fn(*args.values(), **dict(case.attributes))  # raises on a broken rule
        seen.add(case.types)
        for name, value in case.inputs:
            if isinstance(value, dict):
                assert value.type_str == case.type_map[version.inputs[0].type]
        build(case, version)  # the model has a type proto for every value
        assert outputs[0] is not None

    check()
    assert len(seen) >= 2  # more than one binding drawn


# ---------------------------------------------------------------------------------------------
# comparison and repro bundles


def test_compare_maps_by_keys_and_value_type():
    expected = make_map({1: 0.1, 2: 0.5}, "int64", "float")
    compare_value(expected, {2: 0.5, 1: 0.1}, "map(int64, float)")  # key order is irrelevant
    compare_value([expected], [{1: 0.1, 2: 0.5}], "seq(map(int64, float))")
    compare_value(expected, np.asarray({1: 0.1, 2: 0.5}), "map(int64, float)")  # a worker's 0-d wrapper
    with pytest.raises(Mismatch) as err:
        compare_value(expected, {1: 0.1, 3: 0.5}, "map(int64, float)")
    assert err.value.what == "keys"
    with pytest.raises(Mismatch) as err:
        compare_value(expected, {1: 0.1, 2: 0.6}, "map(int64, float)")
    assert err.value.what == "values" and "[2]" in err.value.message
    with pytest.raises(Mismatch) as err:
        compare_value([expected], [], "seq(map(int64, float))")
    assert err.value.what == "length"


def test_repro_bundle_stores_and_reloads_maps(tmp_path):
    feeds = {"X": make_map({2**62: float("nan"), -1: 1.5}, "int64", "float"), "T": np.ones(2, np.float32),
             "Z": [make_map({"a": 1.0}, "string", "float"), make_map({"b": 2.0}, "string", "float")]}
    tensors, others = split_values(feeds)
    assert set(tensors) == {"T"} and set(others) == {"X", "Z"}
    files = save_values(str(tmp_path), "input", others)
    assert all(f.endswith(".map.json") for f in files.values())
    for name, file in files.items():
        record = json.loads((tmp_path / file).read_text())
        back = load_map_record(record)
        want = feeds[name]
        if isinstance(want, list):
            assert [m.type_str for m in back] == [m.type_str for m in want] and back == want
        else:
            assert back.type_str == want.type_str and set(back) == set(want) and back[-1] == 1.5
            assert np.isnan(back[2**62])  # NaN and 64-bit keys survive the JSON
    assert map_record(feeds["X"])["maps"][0]["items"][1] == [-1, 1.5]


def test_as_value_types_runtime_dicts():
    got = as_value([{"a": 1.0}], "seq(map(string, float))")
    assert isinstance(got[0], MapValue) and got[0].type_str == "map(string, float)"


# ---------------------------------------------------------------------------------------------
# backends


def _one_node(op, in_type, out_type, **attrs):
    from onnx import helper

    node = helper.make_node(op, ["X"], ["Y"], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_value_info("X", value_type(in_type))],
                              [helper.make_value_info("Y", value_type(out_type))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 1),
                                                    helper.make_opsetid("", 21)], ir_version=10)
    return model.SerializeToString()


def test_onnxruntime_feeds_float_maps_and_refuses_the_others_as_unsupported():
    pytest.importorskip("onnxruntime")
    from opkit.backends.onnxruntime import BindingLimit, OnnxRuntimeBackend

    backend = OnnxRuntimeBackend()
    session = backend.prepare(_one_node("CastMap", "map(int64, float)", "tensor(float)"))
    assert session.run({"X": make_map({1: 2.0, 0: 1.0}, "int64", "float")})[0].reshape(-1).tolist() == [1.0, 2.0]
    with pytest.raises(BindingLimit) as err:  # an empty dict: the Python binding refuses it
        session.run({"X": make_map({}, "int64", "float")})
    assert backend.is_unsupported(err.value) and backend.lacks_kernel(err.value) is True
    with pytest.raises(BindingLimit):  # a dict of strings cannot be linked to a map(int64, string)
        backend.prepare(_one_node("CastMap", "map(int64, string)", "tensor(float)"))
    zip_map = backend.prepare(_one_node("ZipMap", "tensor(float)", "seq(map(int64, float))", classlabels_int64s=[4, 5]))
    out = zip_map.run({"X": np.array([[1.0, 2.0]], np.float32)})[0]
    compare_value(kernel("ZipMap")(np.array([[1.0, 2.0]], np.float32), classlabels_int64s=[4, 5])[0], out,
                  "seq(map(int64, float))")


def test_onnx_reference_gets_maps_with_typed_values():
    from opkit.backends.onnx_reference import OnnxReferenceBackend

    session = OnnxReferenceBackend().prepare(_one_node("DictVectorizer", "map(string, float)", "tensor(float)",
                                                       string_vocabulary=["a", "b"]))
    y = session.run({"X": make_map({"a": 1.5, "b": 2.0}, "string", "float")})[0]
    assert y.dtype == np.float32 and y.tolist() == [1.5, 2.0]  # float32, not the doubles of Python floats


def test_opkit_reference_backend_runs_map_models():
    import onnx

    from opkit.backends.reference import ReferenceBackend

    model = onnx.load_from_string(_one_node("ZipMap", "tensor(float)", "seq(map(string, float))",
                                            classlabels_strings=["p", "q"]))
    (z,) = ReferenceBackend.run_model(model, {"X": np.array([[0.25, 0.75]], np.float32)})
    assert z == [{"p": 0.25, "q": 0.75}] and z[0].type_str == "map(string, float)"


def test_opkit_reference_backend_types_plain_dicts_by_the_graph_input():
    import onnx

    from opkit.backends.reference import ReferenceBackend

    model = onnx.load_from_string(_one_node("DictVectorizer", "map(int64, float)", "tensor(float)",
                                            int64_vocabulary=[1, 2]))
    (y,) = ReferenceBackend.run_model(model, {"X": {2: 0.5}})
    assert y.dtype == np.float32 and y.tolist() == [0.0, 0.5]  # not map(int64, double): the graph says float


# ---------------------------------------------------------------------------------------------
# examples written with maps, and their docs rendering

_MAP_EXAMPLES = """
  examples:
  - name: pairs_and_mapping
    doc: A map given as a mapping and a sequence of maps.
    attributes: {classlabels_int64s: [10, 20]}
    inputs:
      X: [[1.0, -1.0]]
    outputs:
      Z:
        type: seq(map(int64, float))
        sequence:
        - map: [[10, 1.0], [20, -1.0]]
"""


def _spec_with(tmp_path, op, extra):
    from opkit.spec.load import load_spec_file

    text = open(f"specs/ai.onnx.ml/{op}.yaml", encoding="utf-8").read()
    text = text.split("\n  examples:\n")[0].rstrip("\n") + "\n" + extra  # the spec's own examples replaced
    path = tmp_path / f"{op}.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec_file(str(path))


def test_map_examples_parse_and_render(tmp_path):
    from opkit.emit.page_examples import _container_view, _py_feed, _type_proto
    from opkit.spec.model import ContainerValue

    spec, diags = _spec_with(tmp_path, "ZipMap", _MAP_EXAMPLES)
    assert spec is not None and not [d for d in diags if d.severity == "error"], diags
    (example,) = spec.versions[0].examples
    z = dict(example.outputs)["Z"]
    assert z.type == "seq(map(int64, float))" and z.items[0] == ContainerValue("map(int64, float)", ((10, 1.0), (20, -1.0)),
                                                                               location=z.items[0].location)
    assert _py_feed(z.items[0]) == "{10: 1.0, 20: -1.0}"
    assert "make_map_type_proto(TensorProto.INT64" in _type_proto("map(int64, float)")
    assert "10: 1" in _container_view("Z", z.items[0])["text"]


def test_map_examples_are_checked(tmp_path):
    bad = """
  examples:
  - name: bad_key
    attributes: {int64_vocabulary: [1]}
    inputs:
      X: {type: 'map(int64, float)', map: {a: 1.0}}
    outputs:
      Y: {dtype: float, value: [1.0]}
"""
    _, diags = _spec_with(tmp_path, "DictVectorizer", bad)
    assert any("not an integer" in d.message for d in diags)


def test_zip_map_mismatch_bundle_reruns_standalone(tmp_path):
    import os
    import subprocess
    import sys

    from opkit.backends.registry import resolve
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.repro import ReproWriter
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker import Worker

    spec = harness.load_op("ai.onnx.ml", "ZipMap")
    backend_spec = resolve("ml_maps_fakes:WrongZipMap")
    with Worker(backend_spec) as worker:
        backend = BackendRunner(worker)
        runner = Runner(backend, max_examples=10, seed=3,
                        repro=ReproWriter(str(tmp_path), backend_spec, backend.info, backend.ir_version))
        runner.run_differential(spec, spec.versions[0], [{"T": "seq(map(string, float))"}])
    rec = next(r for r in runner.results if r.outcome == "mismatch" and r.repro)
    assert "map(" in json.dumps(rec.types)  # the record stays JSON
    files = os.listdir(rec.repro)
    assert any(f.endswith(".map.json") for f in files)  # the expected sequence of maps
    no_opkit = ("import runpy, sys; sys.modules['opkit'] = None; sys.argv = [sys.argv[1]]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", no_opkit, os.path.join(rec.repro, "repro.py")],
                          capture_output=True, text=True, timeout=120, cwd=rec.repro)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "MISMATCH Z[0][" in proc.stdout
