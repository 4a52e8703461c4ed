"""The hand-curated specs: ai.onnx Trilu-14, com.microsoft Trilu-1 and directml DiagonalMatrix1-1.

Everything here is checked against references computed independently of the specs (np.triu /
np.tril, a mask over the diagonal index, a per-element loop of DirectML's pseudocode):

* every example's expected output, and the kernel body run on every example;
* the kernel bodies on every allowed element type and on k = None, 0, +-1, +-large, int64 min/max;
* the properties' expressions on a few inputs, the lowering of Trilu to DiagonalMatrix1;
* the importers leave the curated files alone, and the spec tree validates.

Kernel, property and lowering bodies are executed as the contracts describe (see ``_kernel``).
"""

from __future__ import annotations

import itertools
import os
import textwrap
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from onnxruntime_pin import require_recorded_onnxruntime

from opkit.spec.load import load_spec_file
from opkit.spec.model import OpVersion, TensorValue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN, I32_MAX = -(2**31), 2**31 - 1

SEED_EXAMPLES = [
    "triu", "triu_neg", "triu_out_neg_out", "triu_pos", "triu_out_pos", "triu_square", "triu_square_neg",
    "triu_one_row", "triu_zero", "tril", "tril_neg", "tril_out_neg", "tril_pos", "tril_out_pos",
    "tril_square", "tril_square_neg", "tril_one_row", "tril_zero",
]

NUMPY_DTYPES = {
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float": np.float32, "double": np.float64,
    "bool": np.bool_, "string": np.dtype(object), "complex64": np.complex64, "complex128": np.complex128,
}
DML_TYPES = ("double", "float", "float16", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")
K_VALUES = [None, 0, 1, -1, 2, -3, 1000, -1000, 2**40, -(2**40), I32_MAX, I32_MIN, I64_MIN, I64_MAX]
SHAPES = [(3, 5), (5, 3), (4, 4), (2, 3, 4), (1, 1), (0, 4), (4, 0), (2, 0, 3), (2, 1, 2, 3, 3)]


# ---------------------------------------------------------------------------------------------
# the specs, and their Python bodies made callable per the contracts


def _load(rel: str):
    path = os.path.join(ROOT, rel)
    spec, diags = load_spec_file(path)
    assert not diags, "\n".join(map(str, diags))
    assert len(spec.versions) == 1
    return spec, spec.versions[0]


ONNX_SPEC, ONNX = _load("specs/ai.onnx/Trilu.yaml")
MS_SPEC, MS = _load("specs/com.microsoft/Trilu.yaml")
DML_SPEC, DML = _load("specs/directml/DiagonalMatrix1.yaml")
TRILUS = {"ai.onnx": ONNX, "com.microsoft": MS}


def _attr_default(attr):
    if attr.default is None:
        return None
    if attr.type == "tensor":
        return _tensor(attr.default)
    return attr.default


def _function(version: OpVersion, body: str, scope: dict):
    """A function with the op's kernel signature: inputs by formal name (optional ones default to
    None), then attributes as keyword arguments defaulting to the spec default or None."""
    params = [p.name + ("=None" if p.option == "optional" else "") for p in version.inputs]
    attrs = [f"{a.name}=__defaults[{a.name!r}]" for a in version.attributes]
    signature = ", ".join(params + (["*"] + attrs if attrs else []))
    source = f"def __body({signature}):\n" + textwrap.indent(body, "    ")
    namespace = dict(scope, __defaults={a.name: _attr_default(a) for a in version.attributes})
    exec(compile(source, f"<{version.since}>", "exec"), namespace)
    return namespace["__body"]


def _kernel(version: OpVersion):
    return _function(version, version.kernel.python, {"np": np, "ml_dtypes": ml_dtypes})


DML_KERNEL = _kernel(DML)
KERNELS = {name: _kernel(v) for name, v in TRILUS.items()}
LOWERINGS = {
    name: _function(v, v.lowerings[0].python, {"np": np, "target": DML_KERNEL}) for name, v in TRILUS.items()
}


# ---------------------------------------------------------------------------------------------
# literal tensors and comparisons


def _tensor(t) -> np.ndarray:
    """A TensorValue (or an attribute's {dtype, value} mapping) as a numpy array."""
    dtype, value = (t.dtype, t.value) if isinstance(t, TensorValue) else (t["dtype"], t["value"])
    shape = t.shape if isinstance(t, TensorValue) else np.shape(value)
    np_dtype = NUMPY_DTYPES[dtype]

    def fix(v):
        if isinstance(v, (tuple, list)):
            return [fix(x) for x in v]
        return complex(v.replace(" ", "")) if dtype.startswith("complex") and isinstance(v, str) else v

    if 0 in shape:
        return np.zeros(shape, dtype=np_dtype)
    if dtype == "string":
        out = np.empty(shape, dtype=object)
        out[...] = fix(value) if shape else value
        return out
    return np.array(fix(value), dtype=np_dtype).reshape(shape)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bits (so -0.0 != +0.0 and NaN payloads count); strings by value."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return a.tolist() == b.tolist()
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def equal(a, b) -> bool:
    """The `equal` of the property contract: same dtype, shape and values, NaN == NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object or a.dtype == np.bool_:
        return a.tolist() == b.tolist()
    if a.dtype.kind in "iu":
        return bool(np.array_equal(a, b))
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    return bool(np.array_equal(a.astype(wide), b.astype(wide), equal_nan=True))


def _example_io(version: OpVersion, example):
    inputs = [None] * len(version.inputs)
    names = [p.name for p in version.inputs]
    for name, t in example.inputs:
        inputs[names.index(name)] = None if t is None else _tensor(t)
    attrs = {}
    for name, value in example.attributes:
        attr = version.attribute(name)
        attrs[name] = _tensor(value) if attr.type == "tensor" else value
    outputs = [_tensor(t) for _, t in example.outputs]
    return inputs, attrs, outputs


# ---------------------------------------------------------------------------------------------
# independent references


def _zero(dtype):
    return np.array("", dtype=object) if dtype == object else np.zeros((), dtype)


def trilu_reference(x: np.ndarray, k, upper: int) -> np.ndarray:
    """np.triu / np.tril; a diagonal mask for strings (np.triu's zero would be 0, not '')."""
    n, m = x.shape[-2:]
    kk = 0 if k is None else int(k)
    if x.dtype == object:
        diag = np.arange(m)[None, :] - np.arange(n)[:, None]
        keep = diag >= kk if upper else diag <= kk
        out = np.empty(x.shape, dtype=object)
        out[...] = np.where(keep, x, "")
        return out
    # np.triu computes m - k in int64 and overflows for k near int64 min/max; a k beyond every
    # diagonal (all lie in [1 - n, m - 1]) selects what k = -n - 1 or m + 1 selects
    kk = max(-n - 1, min(m + 1, kk))
    return np.triu(x, kk) if upper else np.tril(x, kk)


def dml_reference(inp, value, begin: int, end: int, sizes) -> np.ndarray:
    """DirectML's pseudocode, one coordinate at a time."""
    shape = tuple(inp.shape) if inp is not None else tuple(sizes)
    out = np.zeros(shape, dtype=value.dtype)
    for coord in itertools.product(*(range(d) for d in shape)):
        y, x = coord[-2], coord[-1]
        top_x = x - y
        use_value = (end >= begin) ^ (top_x >= begin) ^ (top_x < end)
        if use_value:
            out[coord] = value
        elif inp is not None:
            out[coord] = inp[coord]
        else:
            out[coord] = 0
    return out


# ---------------------------------------------------------------------------------------------
# random inputs for every element type


def _random(dtype_name: str, shape, rng) -> np.ndarray:
    dt = NUMPY_DTYPES[dtype_name]
    if dtype_name == "string":
        out = np.empty(shape, dtype=object)
        for index in np.ndindex(*shape):
            out[index] = "".join(rng.choice(list("abcxyz"), size=rng.integers(1, 4)))
        return out
    if dtype_name == "bool":
        return rng.random(shape) < 0.7
    if dtype_name.startswith(("int", "uint")):
        info = np.iinfo(dt)
        # avoid zeros so a wrongly kept/zeroed element is visible
        v = rng.integers(1, min(info.max, 2**62), size=shape, dtype=np.int64, endpoint=True)
        return v.astype(dt)
    if dtype_name.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape) + (3 + 3j)).astype(dt)
    v = rng.standard_normal(shape) + 5.0
    if v.size >= 3:  # specials must survive (kept) or become +0 (zeroed)
        flat = v.reshape(-1)
        flat[0], flat[1], flat[2] = np.nan, -np.inf, -0.0
    return v.astype(dt)


def _k(k):
    return None if k is None else np.array(k, dtype=np.int64)


TRILU_TYPES = {
    name: [t[7:-1] for t in v.type_constraint("T").types] for name, v in TRILUS.items()
}


# ---------------------------------------------------------------------------------------------
# structure


def test_trilu_specs_carry_the_extensions():
    for v, x, k, y in ((ONNX, "input", "k", "output"), (MS, "X", "k", "Y")):
        assert v.changes and v.semantics and v.kernel.python
        assert v.attribute("upper").domain.values == (0, 1)
        ranks = {p.name: (p.rank.min, p.rank.max) for p in v.inputs + v.outputs}
        assert ranks == {x: (2, None), k: (0, 0), y: (2, None)}
        assert [r.label for r in v.rules][:3] == ["C1", "C2", "C3"]
        assert {p.name for p in v.properties} >= {"partition", "idempotent", "complement", "transpose_duality"}
        assert [lo.to for lo in v.lowerings] == ["directml::DiagonalMatrix1-1"]
        names = [e.name for e in v.examples]
        assert names[:18] == SEED_EXAMPLES
        for e in v.examples[:18]:
            assert {t.dtype for _, t in e.inputs + e.outputs if t is not None} == {"int64"}
    assert "Trilu-14" in MS_SPEC.doc
    assert len(DML.type_constraint("T").types) == 11
    assert [e.name for e in DML.examples][:4] == ["identity_matrix", "diagonal_strip", "keep_strict_upper",
                                                 "keep_diagonal"]


def test_zero_size_examples_keep_their_shape():
    for v in TRILUS.values():
        shapes = {e.name: dict(e.inputs)[v.inputs[0].name].shape for e in v.examples}
        assert shapes["triu_zero"] == (0, 5)
        assert shapes["tril_zero"] == (3, 0, 5)


# ---------------------------------------------------------------------------------------------
# examples


@pytest.mark.parametrize("domain", TRILUS)
def test_trilu_examples(domain):
    v = TRILUS[domain]
    kernel, lowering = KERNELS[domain], LOWERINGS[domain]
    for e in v.examples:
        (x, k), attrs, (expected,) = _example_io(v, e)
        upper = attrs.get("upper", 1)
        assert same(trilu_reference(x, k, upper), expected), e.name
        assert same(kernel(x, k, **attrs), expected), e.name
        assert same(lowering(x, k, **attrs), expected), e.name


def test_dml_examples():
    for e in DML.examples:
        (inp,), attrs, (expected,) = _example_io(DML, e)
        ref = dml_reference(inp, attrs["Value"], attrs["DiagonalFillBegin"], attrs["DiagonalFillEnd"],
                            attrs.get("OutputSizes"))
        assert same(ref, expected), e.name
        assert same(DML_KERNEL(inp, **attrs), expected), e.name


def test_dml_identity_example_records_value_1():
    e = next(e for e in DML.examples if e.name == "identity_matrix")
    assert dict(e.attributes)["Value"] == {"dtype": "float", "value": 1}
    assert "Value: 7" in e.doc


# ---------------------------------------------------------------------------------------------
# kernels over every type and k


@pytest.mark.parametrize("domain", TRILUS)
def test_trilu_kernel_all_types(domain):
    kernel = KERNELS[domain]
    rng = np.random.default_rng(0)
    for dtype_name in TRILU_TYPES[domain]:
        for shape in SHAPES:
            x = _random(dtype_name, shape, rng)
            for k, upper in itertools.product(K_VALUES, (0, 1)):
                got = kernel(x, _k(k), upper=upper)
                assert same(got, trilu_reference(x, k, upper)), (dtype_name, shape, k, upper)
    # the default of upper is 1
    x = _random("int32", (3, 4), rng)
    assert same(kernel(x), np.triu(x))


@pytest.mark.parametrize("domain", TRILUS)
def test_trilu_kernel_noncontiguous_input(domain):
    kernel = KERNELS[domain]
    x = np.arange(60, dtype=np.float64).reshape(3, 4, 5).transpose(0, 2, 1)[:, ::-1]
    for k, upper in itertools.product((-2, 0, 3), (0, 1)):
        assert same(kernel(x, _k(k), upper=upper), trilu_reference(x, k, upper))
    assert not np.shares_memory(kernel(x, None), x)


def test_trilu_kernel_is_memory_lean():
    x = np.ones((512, 512), dtype=np.float32)
    for upper in (0, 1):
        tracemalloc.start()
        out = KERNELS["ai.onnx"](x, None, upper=upper)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak <= 1.1 * out.nbytes + 64 * 1024, peak


def test_dml_kernel_against_pseudocode():
    rng = np.random.default_rng(1)
    bounds = [0, 1, -1, 2, -2, 3, 7, -7, I32_MIN, I32_MAX]
    for dtype_name in DML_TYPES:
        for shape in [(3, 5), (4, 2), (2, 2, 3), (2, 1, 3, 2)]:
            x = _random(dtype_name, shape, rng)
            value = np.array(7, dtype=x.dtype)
            for begin, end in itertools.product(bounds, bounds):
                for inp in (x, None):
                    ref = dml_reference(inp, value, begin, end, shape)
                    got = DML_KERNEL(inp, Value=value, DiagonalFillBegin=begin, DiagonalFillEnd=end,
                                     OutputSizes=None if inp is not None else list(shape))
                    assert same(got, ref), (dtype_name, shape, begin, end, inp is None)


def test_dml_kernel_leaves_input_alone():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    before = x.copy()
    DML_KERNEL(x, Value=np.array(-1, np.int32), DiagonalFillBegin=0, DiagonalFillEnd=2)
    assert same(x, before)


# ---------------------------------------------------------------------------------------------
# properties


def _type_class(dtype_name: str, cls: str | None) -> bool:
    if cls is None:
        return True
    numeric = dtype_name not in ("bool", "string")
    return {
        "numeric": numeric,
        "float": dtype_name in ("float16", "bfloat16", "float", "double"),
        "integer": dtype_name.startswith(("int", "uint")),
        "signed": numeric and not dtype_name.startswith("uint"),
    }[cls]


@pytest.mark.parametrize("domain", TRILUS)
def test_trilu_properties(domain):
    v, kernel = TRILUS[domain], KERNELS[domain]
    x_name = v.inputs[0].name
    rng = np.random.default_rng(2)
    checked = {p.name: 0 for p in v.properties}
    for dtype_name in TRILU_TYPES[domain]:
        for shape in [(3, 5), (4, 4), (2, 3, 2), (0, 3)]:
            x = _random(dtype_name, shape, rng)
            for k, upper in itertools.product([None, 0, 2, -1, 9, I64_MIN, I64_MAX], (0, 1)):
                env = {x_name: x, "k": _k(k), "upper": upper, "op": kernel, "np": np, "equal": equal}
                for p in v.properties:
                    if _type_class(dtype_name, p.types):
                        assert eval(p.holds, dict(env)) is True, (p.name, dtype_name, shape, k, upper)
                        checked[p.name] += 1
    assert all(checked.values()), checked


def test_trilu_properties_catch_a_wrong_kernel():
    """The properties are not vacuous: an off-by-one lower kernel breaks some of them."""
    v, good = ONNX, KERNELS["ai.onnx"]

    def bad(input, k=None, *, upper=1):
        kk = 0 if k is None else int(k)
        return good(input, k, upper=upper) if upper else good(input, np.array(kk + 1 if kk < I64_MAX else kk), upper=0)

    x = np.arange(1, 13, dtype=np.int64).reshape(3, 4)
    env = {"input": x, "k": np.array(0), "upper": 1, "op": bad, "np": np, "equal": equal}
    failing = {p.name for p in v.properties if not eval(p.holds, dict(env))}
    assert {"partition", "complement", "transpose_duality"} <= failing


def test_dml_properties():
    rng = np.random.default_rng(3)
    bounds = [0, 1, -1, 3, -2, I32_MIN, I32_MAX]
    checked = {p.name: 0 for p in DML.properties}
    for dtype_name in DML_TYPES:
        for shape in [(3, 4), (2, 2, 3)]:
            x = _random(dtype_name, shape, rng)
            value = np.array(3, dtype=x.dtype)
            for (begin, end), (inp, sizes) in itertools.product(
                    itertools.product(bounds, bounds), [(x, None), (None, list(shape)), (x, list(shape))]):
                env = {"InputTensor": inp, "Value": value, "DiagonalFillBegin": begin, "DiagonalFillEnd": end,
                       "OutputSizes": sizes, "op": DML_KERNEL, "np": np, "equal": equal}
                for rule in DML.rules:
                    assert eval(rule.holds, dict(env)), rule.label
                for p in DML.properties:
                    if _type_class(dtype_name, p.types):
                        assert eval(p.holds, dict(env)) is True, (p.name, dtype_name, shape, begin, end)
                        checked[p.name] += 1
    assert all(checked.values()), checked


# ---------------------------------------------------------------------------------------------
# rules


def test_trilu_rules():
    for v in TRILUS.values():
        x_name = v.inputs[0].name
        rules = {r.label: r.holds for r in v.rules}

        def holds(label, x, k, upper):
            return bool(eval(rules[label], {"np": np, x_name: x, "k": k, "upper": upper}))

        ok = np.zeros((2, 3), np.int64)
        assert all(holds(label, ok, np.array(1), 1) for label in rules)
        assert holds("C2", ok, None, 0)
        assert not holds("C1", np.zeros(3), None, 1)
        assert not holds("C2", ok, np.array([1]), 1)
        assert not holds("C3", ok, None, 2)


def test_dml_rules():
    rules = {r.label: r.holds for r in DML.rules}

    def broken(**over):
        env = {"np": np, "InputTensor": np.zeros((2, 3), np.float32), "Value": np.array(0, np.float32),
               "DiagonalFillBegin": 0, "DiagonalFillEnd": 1, "OutputSizes": None}
        env.update(over)
        return {label for label, holds in rules.items() if not eval(holds, dict(env))}

    assert broken() == set()
    assert broken(InputTensor=np.zeros((1, 2, 3, 4, 5), np.float32)) == {"C1"}
    assert broken(InputTensor=None) == {"C2"}
    assert broken(InputTensor=None, OutputSizes=[5]) == {"C3"}
    assert broken(OutputSizes=[3, 2]) == {"C4"}
    assert broken(Value=np.zeros(1, np.float32)) == {"C5"}
    assert broken(Value=np.array(0, np.float64)) == {"C6"}
    assert broken(InputTensor=None, OutputSizes=[2, 2], Value=np.array(True)) == {"C7"}
    assert broken(DiagonalFillEnd=2**31) == {"C8"}


# ---------------------------------------------------------------------------------------------
# the lowering Trilu -> DiagonalMatrix1


@pytest.mark.parametrize("domain", TRILUS)
def test_trilu_lowering_matches_kernel(domain):
    kernel, lowering = KERNELS[domain], LOWERINGS[domain]
    rng = np.random.default_rng(4)
    calls = []

    def spy(*args, **kwargs):  # DiagonalMatrix1's rules hold for every call the lowering makes
        env = {"np": np, "InputTensor": args[0] if args else kwargs.get("InputTensor"),
               "OutputSizes": kwargs.get("OutputSizes"), **kwargs}
        for rule in DML.rules:
            assert eval(rule.holds, env), rule.label
        assert env["Value"].dtype.name in ("float64", "float32", "float16", "int64", "int32", "int16", "int8",
                                           "uint64", "uint32", "uint16", "uint8")
        calls.append(1)
        return DML_KERNEL(*args, **kwargs)

    lowering.__globals__["target"] = spy
    try:
        for dtype_name in TRILU_TYPES[domain]:
            for shape in SHAPES:
                x = _random(dtype_name, shape, rng)
                for k, upper in itertools.product(K_VALUES, (0, 1)):
                    got = lowering(x, _k(k), upper=upper)
                    assert same(got, kernel(x, _k(k), upper=upper)), (dtype_name, shape, k, upper)
    finally:
        lowering.__globals__["target"] = DML_KERNEL
    assert calls


def test_trilu_lowering_refuses_matrices_beyond_int32():
    wide = np.broadcast_to(np.zeros((1, 1), np.uint8), (1, 2**31))  # no memory: a stride-0 view
    with pytest.raises(ValueError, match="INT32"):
        LOWERINGS["ai.onnx"](wide, None)


# ---------------------------------------------------------------------------------------------
# the curated files survive re-import, and the tree validates


def _cli(*argv) -> int:
    from opkit.cli import main

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return main(list(argv))
    finally:
        os.chdir(cwd)


def test_reimport_onnx_keeps_extensions():
    assert _cli("import", "onnx", "--op", "Trilu", "--check") == 0


def test_reimport_onnxruntime_keeps_extensions():
    require_recorded_onnxruntime()
    assert _cli("import", "onnxruntime", "--op", "Trilu", "--check") == 0


def test_spec_tree_validates():
    assert _cli("validate", "-q", os.path.join(ROOT, "specs")) == 0
