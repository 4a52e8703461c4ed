"""Repro: ai.onnx::Abs-6 T=tensor(double) on openvino 2026.4.1 (differential: mismatch).

Case: X=float64:-0.019363605432456226
Seen: Y: 1/1 elements differ; max abs error 9.16178e-10, max rel error 4.73144e-08 (rtol=1e-12, atol=1e-14); first at []: got 0.019363606348633766, expected 0.019363605432456226

Needs only numpy, onnx and the backend (ml_dtypes for bfloat16/float8). Run: python repro.py
Exit status 1 while the discrepancy reproduces, 0 once outputs match.
"""

import json
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
META = json.load(open(os.path.join(HERE, "case.json")))
RAW = {"bfloat16": "bfloat16", "float8e4m3fn": "float8_e4m3fn", "float8e4m3fnuz": "float8_e4m3fnuz",
       "float8e5m2": "float8_e5m2", "float8e5m2fnuz": "float8_e5m2fnuz", "uint4": "uint4", "int4": "int4",
       "float4e2m1": "float4_e2m1fn", "float8e8m0": "float8_e8m0fnu", "uint2": "uint2", "int2": "int2",
       "float6e2m3": "float6_e2m3fn", "float6e3m2": "float6_e3m2fn"}


def load(name, elems):
    arrays = {}
    with np.load(os.path.join(HERE, name)) as data:
        for key in data.files:
            arr, elem = data[key], elems[key]
            if elem == "string":
                arr = arr.astype(object)
            elif elem in RAW:
                import ml_dtypes
                arr = arr.view(getattr(ml_dtypes, RAW[elem]))
            arrays[key] = arr
    return arrays


def run_onnxruntime(model, feeds, options):
    import ctypes
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=options.get("providers") or ["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    if not any(a.dtype.name in RAW.values() for a in feeds.values()) and \
            not any(o.type[7:-1] in RAW for o in sess.get_outputs()):
        return sess.run(outs, feeds)
    values = {}
    for i in sess.get_inputs():
        arr = feeds[i.name]
        if i.type[7:-1] in RAW:
            raw = np.require(arr, requirements='C').view(np.uint16 if arr.dtype.itemsize == 2 else np.uint8)
            code = getattr(onnx.TensorProto, i.type[7:-1].upper())
            values[i.name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, code)
        else:
            values[i.name] = ort.OrtValue.ortvalue_from_numpy(np.require(arr, requirements='C'))
    result = []
    for value, o in zip(sess.run_with_ort_values(outs, values), sess.get_outputs()):
        elem = o.type[7:-1]
        if elem in RAW:
            import ml_dtypes
            n = value.tensor_size_in_bytes()
            buf = ctypes.string_at(value.data_ptr(), n) if n else b""
            result.append(np.frombuffer(buf, dtype=getattr(ml_dtypes, RAW[elem])).reshape(value.shape()))
        else:
            result.append(value.numpy())
    return result


def run_onnx_reference(model, feeds, options):
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(model).run(None, feeds)


def run_backend_api(model, feeds, options):
    import importlib
    backend = META["backend"]
    if backend.get("sys_path"):
        sys.path.insert(0, backend["sys_path"])
    module, _, attr = backend["target"].partition(":")
    cls = importlib.import_module(module)
    for part in attr.split("."):
        cls = getattr(cls, part)
    rep = cls.prepare(model, device="CPU")
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    return list(rep.run([feeds[n] for n in names]))


def compare(name, expected, actual, rtol, atol):
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype.kind in "OUS" or actual.dtype.kind in "OUS":
        same_dtype = expected.dtype.kind in "OUS" and actual.dtype.kind in "OUS"
    else:
        same_dtype = expected.dtype == actual.dtype
    if not same_dtype:
        return f"{name}: dtype {actual.dtype}, expected {expected.dtype}"
    if expected.shape != actual.shape:
        return f"{name}: shape {list(actual.shape)}, expected {list(expected.shape)}"
    if expected.size == 0:
        return None
    if expected.dtype.kind in "OUS":
        bad = np.array([str(a) != str(e) for a, e in zip(actual.ravel(), expected.ravel())])
        diff = None
    elif expected.dtype.kind in "iub":
        bad = (actual != expected).ravel()
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64)).ravel()
    else:
        wide = np.complex128 if expected.dtype.kind == "c" else np.float64
        e, a = expected.astype(wide).ravel(), actual.astype(wide).ravel()
        with np.errstate(all="ignore"):
            finite = np.isfinite(e) & np.isfinite(a)
            diff = np.where(finite, np.abs(a - e), 0.0)
            bad = (np.isnan(e) != np.isnan(a)) | (~finite & ~np.isnan(e) & ~np.isnan(a) & (a != e))
            bad |= finite & (diff > atol + rtol * np.abs(e))
    if not bad.any():
        return None
    first = int(np.flatnonzero(bad)[0])
    idx = [int(i) for i in np.unravel_index(first, expected.shape)]
    text = (f"{name}: {int(bad.sum())}/{bad.size} elements differ; first at {idx}: "
            f"got {actual.ravel()[first:first + 1].tolist()[0]!r}, "
            f"expected {expected.ravel()[first:first + 1].tolist()[0]!r}")
    if diff is not None and diff.size:
        text += f"; max abs error {float(np.max(diff)):.6g}"
    return text


def main():
    model = onnx.load(os.path.join(HERE, "model.onnx"))
    feeds = load("inputs.npz", META["input_elems"])
    expected = load("expected.npz", META["output_elems"])
    backend = META["backend"]
    runner = {"onnxruntime": run_onnxruntime, "onnx-reference": run_onnx_reference}.get(
        backend["name"].split("[")[0], run_backend_api)
    print(f"{META['domain']}::{META['op']}-{META['version']} {META['types']} on {backend['name']}")
    print(f"case: {META['case']}")
    try:
        outputs = runner(model, feeds, backend.get("options") or {})
    except Exception as exc:  # the backend refuses or fails: that is the repro
        print(f"backend raised {type(exc).__name__}: {exc}")
        return 1
    names = [o.name for o in model.graph.output]
    problems = []
    for name, actual in zip(names, outputs):
        if name in expected:
            rtol, atol = META["tolerances"].get(name, [0.0, 0.0])
            problem = compare(name, expected[name], actual, rtol, atol)
            if problem:
                problems.append(problem)
    for problem in problems:
        print("MISMATCH", problem)
    if not problems:
        print("outputs match the reference: the failure no longer reproduces")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
