"""Repro bundle written by opkit: reruns one failing conformance case on its backend.

What failed (op, types, backend, suite, outcome, the message seen) is in case.json beside this
script, which prints it when it runs. Needs only numpy, onnx and the backend (ml_dtypes for
bfloat16/float8). Run: python repro.py
Exit status 1 while the discrepancy reproduces, 0 once outputs match, 3 when the recorded failure
is gone but the case fails another way (an error recorded, wrong values now). A property failure
is replayed as a property (see replay_property below): 2 when the replay cannot tell. The case runs
in a child process held to the case's time limit (time_limit in case.json): a hang is stopped
there and a crash is reported, each with the status above.
"""

import json
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "case.json"), encoding="utf-8") as _f:
    META = json.load(_f)
RAW = {"bfloat16": "bfloat16", "float8e4m3fn": "float8_e4m3fn", "float8e4m3fnuz": "float8_e4m3fnuz",
       "float8e5m2": "float8_e5m2", "float8e5m2fnuz": "float8_e5m2fnuz", "uint4": "uint4", "int4": "int4",
       "float4e2m1": "float4_e2m1fn", "float8e8m0": "float8_e8m0fnu", "uint2": "uint2", "int2": "int2",
       "float6e2m3": "float6_e2m3fn", "float6e3m2": "float6_e3m2fn"}
# narrower than a byte: ONNX (and onnxruntime's tensors) pack them, numpy keeps one per byte
PACKED = {"int4", "uint4", "float4e2m1", "int2", "uint2"}
RAISED = ("error", "unsupported", "refused")  # recorded outcomes where the backend raised


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


MAP_VALUES = {"float": np.float32, "double": np.float64, "int64": np.int64, "string": object}


def load_values(files):
    """Sequences (SequenceProto files: lists of arrays), empty optionals (OptionalProto: None) and
    maps (.map.json: dicts, or lists of dicts, with each map's value type in MAP_TYPES)."""
    values = {}
    for key, file in files.items():
        if file.endswith(".map.json"):
            with open(os.path.join(HERE, file), encoding="utf-8") as f:
                record = json.load(f)
            maps = [{k: v for k, v in m["items"]} for m in record["maps"]]
            for m, spec in zip(maps, record["maps"]):
                MAP_TYPES[id(m)] = spec["value_type"]
            values[key] = maps if record["sequence"] else maps[0]
            continue
        with open(os.path.join(HERE, file), "rb") as f:
            data = f.read()
        proto = onnx.SequenceProto() if file.endswith(".seq.pb") else onnx.OptionalProto()
        proto.ParseFromString(data)
        values[key] = onnx.numpy_helper.to_list(proto) if file.endswith(".seq.pb") else \
            onnx.numpy_helper.to_optional(proto)
    return values


def run_onnxruntime(model, feeds, options):
    import ctypes
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=options.get("providers") or ["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    if not any(getattr(a, "dtype", None) is not None and a.dtype.name in RAW.values() for a in feeds.values()) and \
            not any(o.type[7:-1] in RAW for o in sess.get_outputs()):
        return sess.run(outs, feeds)
    values = {}
    for i in sess.get_inputs():
        arr = feeds[i.name]
        if i.type[7:-1] in PACKED:  # onnxruntime reads these two (four) to a byte, as ONNX stores them
            code = getattr(onnx.TensorProto, i.type[7:-1].upper())
            data = onnx.numpy_helper.from_array(arr, i.name).raw_data
            values[i.name] = ort.OrtValue.ortvalue_from_shape_and_type(list(arr.shape), code)
            if data:
                ctypes.memmove(values[i.name].data_ptr(), data, len(data))
        elif i.type[7:-1] in RAW:
            raw = np.require(arr, requirements='C').view(np.uint16 if arr.dtype.itemsize == 2 else np.uint8)
            code = getattr(onnx.TensorProto, i.type[7:-1].upper())
            values[i.name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, code)
        else:
            values[i.name] = ort.OrtValue.ortvalue_from_numpy(np.require(arr, requirements='C'))
    result = []
    for value, o in zip(sess.run_with_ort_values(outs, values), sess.get_outputs()):
        elem = o.type[7:-1]
        if elem in PACKED:
            n = value.tensor_size_in_bytes()
            buf = ctypes.string_at(value.data_ptr(), n) if n else b""
            tensor = onnx.helper.make_tensor("y", getattr(onnx.TensorProto, elem.upper()), value.shape(), buf,
                                             raw=True)
            result.append(onnx.numpy_helper.to_array(tensor))
        elif elem in RAW:
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


def ulp(x, nmant, minexp):
    """The spacing of a float format with ``nmant`` mantissa bits around each |x|."""
    m = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        _, e = np.frexp(np.where(np.isfinite(m), m, 1.0))
        return np.ldexp(1.0, np.maximum(np.where(m > 0, e - 1, minexp), minexp) - nmant)


def compare(name, expected, actual, rtol, atol, allowance=None):
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
            if allowance:  # what the runner allowed: ULPs of the larger magnitude, a floor, rtol/atol
                mag = np.maximum(np.abs(e), np.abs(a))
                allowed = (np.asarray(allowance["ulps"], dtype=np.float64).ravel() * ulp(mag, allowance["nmant"],
                                                                                       allowance["minexp"])
                           + np.asarray(allowance["floor"], dtype=np.float64).ravel()
                           + allowance["atol"] + allowance["rtol"] * mag + allowance.get("tiny", 0.0))
            else:
                allowed = atol + rtol * np.abs(e)
            bad |= finite & ~(diff <= allowed)
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


MAP_TYPES = {}  # id of an expected map -> its value type


def compare_map(name, expected, actual, rtol, atol, allowance=None):
    """Two maps: the same keys (any order), then the values under each key as elements of the
    expected map's value type."""
    if not isinstance(actual, dict):
        return f"{name}: a {type(actual).__name__}, expected a map"
    if set(actual) != set(expected):
        return f"{name}: map keys {sorted(actual, key=repr)!r}, expected {sorted(expected, key=repr)!r}"
    dtype = MAP_VALUES.get(MAP_TYPES.get(id(expected), ""))
    for key in sorted(expected, key=repr):
        e, a = expected[key], actual[key]
        if dtype is not None and (dtype is object) == isinstance(a, str):
            e, a = np.asarray(e, dtype=dtype), np.asarray(a, dtype=dtype)
        problem = compare(f"{name}[{key!r}]", e, a, rtol, atol, allowance)
        if problem:
            return problem
    return None


def compare_value(name, expected, actual, rtol, atol, allowance=None):
    """compare() for sequences (their count, then tensor by tensor), maps (compare_map) and
    optionals (None: empty)."""
    if isinstance(expected, dict):
        return compare_map(name, expected, actual, rtol, atol, allowance)
    if expected is None or actual is None:
        if (expected is None) == (actual is None):
            return None
        return f"{name}: {'an empty optional' if actual is None else 'a value'}, expected " + \
            ("an empty optional" if expected is None else "a value")
    if isinstance(expected, list) or isinstance(actual, (list, tuple)):
        if not (isinstance(expected, list) and isinstance(actual, (list, tuple))):
            return f"{name}: a {'sequence' if isinstance(actual, (list, tuple)) else 'tensor'}, expected a " + \
                ("sequence" if isinstance(expected, list) else "tensor")
        if len(actual) != len(expected):
            return f"{name}: a sequence of {len(actual)} tensor(s), expected {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = compare_value(f"{name}[{i}]", e, a, rtol, atol, allowance)
            if problem:
                return problem
        return None
    return compare(name, expected, actual, rtol, atol, allowance)


def show(value):
    """Text from case.json or the backend for the terminal: control characters (escape sequences,
    NUL ...) shown escaped, newlines kept."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def main():
    model = onnx.load(os.path.join(HERE, "model.onnx"))
    feeds = load("inputs.npz", META["input_elems"])
    feeds.update(load_values(META.get("input_values", {})))
    expected = load("expected.npz", META["output_elems"])
    expected.update(load_values(META.get("expected_values", {})))
    backend = META["backend"]
    runner = {"onnxruntime": run_onnxruntime, "onnx-reference": run_onnx_reference}.get(
        backend["name"].split("[")[0], run_backend_api)
    print(show(f"{META['domain']}::{META['op']}-{META['version']} {show(META['types'])} on {backend['name']} "
               f"{backend.get('version', '')}"))
    print(show(f"case: {META['case']}"))
    print(show(f"recorded: {META['suite']}: {META['outcome']}: {META['message']}"))
    if META.get("property"):  # a property that does not hold: evaluate it again, not just the case
        return replay_property(runner, backend.get("options") or {})
    # a robustness finding is a crash or a hang on input the spec forbids or leaves open: any
    # answer, a clean error or a value, is what that verdict asks for
    survives = META["suite"].startswith("robustness") and META["outcome"] in ("crash", "timeout")
    try:
        outputs = runner(model, feeds, backend.get("options") or {})
    except Exception as exc:  # the backend refuses or fails: that is the repro
        print(show(f"backend raised {type(exc).__name__}: {exc}"))
        if survives:
            print("the process survives with a clean error: the crash no longer reproduces")
            return 0
        return 1 if META["outcome"] in RAISED else changed()
    if survives:
        print("the process survives and answers: the crash no longer reproduces")
        return 0
    names = [o.name for o in model.graph.output]
    problems = []
    for name, actual in zip(names, outputs):
        if name in expected:
            rtol, atol = META.get("tolerances", {}).get(name, [0.0, 0.0])
            problem = compare_value(name, expected[name], actual, rtol, atol, META.get("allowances", {}).get(name))
            if problem:
                problems.append(problem)
    for problem in problems:
        print("MISMATCH", show(problem))
    if not problems:
        print("outputs match the reference: the failure no longer reproduces")
        return 0
    return 1 if META["outcome"] == "mismatch" else changed()


def changed():
    """The recorded failure is gone, but the case fails another way (a refusal became wrong
    values, a crash an error): exit 3, still not a pass."""
    print(show(f"the recorded {META['outcome']} no longer reproduces: the case now fails another way"))
    return 3


def call_key(inputs, attributes):
    """What decides the model of an ``op(*inputs, **attributes)`` call: each input's dtype and
    rank (and a 1-D integer input's length, which models declare), and the attributes given with
    their values (None means not given). Plain JSON text, the same in opkit and in repro.py."""
    import json

    import numpy as np

    def plain(value):
        if isinstance(value, (np.ndarray, np.generic)):
            arr = np.asarray(value)
            data = arr.tobytes().hex() if arr.dtype.kind == "V" else plain(arr.tolist())
            return ["array", str(arr.dtype), list(arr.shape), data]
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, float):
            return ["float", repr(value)]  # nan and inf are no JSON numbers
        if value is None or isinstance(value, (bool, int, str)):
            return value
        return ["repr", repr(value)]

    shapes = []
    for value in inputs:
        if value is None:
            shapes.append(None)
            continue
        arr = np.asarray(value)
        length = int(arr.shape[0]) if arr.ndim == 1 and arr.dtype.kind in "iu" else None
        shapes.append([str(arr.dtype), arr.ndim, length])
    given = sorted([name, plain(value)] for name, value in attributes.items() if value is not None)
    return json.dumps([shapes, given], sort_keys=True)


class NotReplayable(Exception):
    """The property made a call the failing run never did: no model was recorded for it."""


class BackendRaised(Exception):
    """The backend refused or failed one of the property's calls."""


# ml_dtypes floats: compared as floats (NaN equals NaN), like the reference's equal()
FLOAT_RAW = {name for elem, name in RAW.items() if elem not in ("int4", "uint4", "int2", "uint2")}


def equal(a, b):
    """What properties call ``equal``: same dtype, shape and values, NaN equal to NaN."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    text_a, text_b = a.dtype.kind in "OUS", b.dtype.kind in "OUS"
    if text_a != text_b or (not text_a and a.dtype != b.dtype) or a.shape != b.shape:
        return False
    if text_a:
        return all(str(x) == str(y) for x, y in zip(a.ravel(), b.ravel()))
    if a.dtype.kind in "fc" or a.dtype.name in FLOAT_RAW:
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        x, y = a.astype(wide), b.astype(wide)
        return bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))
    return bool(np.array_equal(a, b))


def describe_call(inputs, attributes):
    parts = ["<absent>" if v is None else f"{np.asarray(v).dtype}{list(np.shape(v))}" for v in inputs]
    return ", ".join(parts + [f"{k}={v!r}" for k, v in attributes.items()])


def recorded_inputs(entry):
    arrays = load(entry["inputs"], entry["input_elems"])
    return [arrays.get(str(i)) for i in range(entry["count"])]


def check_calls(made, recorded):
    """Each call against the reference kernel's output, when the failing run recorded the same
    call (same model, same inputs): which call the backend gets wrong."""
    for n, (inputs, key, output) in enumerate(made, 1):
        entry = next((e for e in recorded if e["key"] == key and e["expected"]  # same key: same input count
                      and all(equal(a, b) for a, b in zip(inputs, recorded_inputs(e)))), None)
        if entry is None:
            print(f"op() call {n}: not a call of the failing run (no reference output recorded for it)")
            continue
        expected = load(entry["expected"], entry["expected_elems"])["output"]
        problem = compare("output", expected, output, 0.0, 0.0, entry["allowance"])
        verdict = f"differs from the reference kernel: {problem}" if problem else "matches the reference kernel"
        print(show(f"op() call {n} ({entry['describe']}): {verdict}"))


def replay_property(runner, options):
    """Evaluate the failed property again on the recorded inputs, with op() running the recorded
    models on the backend: exit status 1 while it does not hold, 0 once it holds, 2 when the
    replay cannot tell (a call the failing run never made, or the property itself raised)."""
    prop = META["property"]
    values = dict(prop["values"])
    values.update(load("property.npz", prop["arrays"]))
    models = {m["key"]: m["model"] for m in prop["models"]}
    made = []

    def op(*inputs, **attributes):
        key = call_key(inputs, attributes)
        if key not in models:
            raise NotReplayable(describe_call(inputs, attributes))
        model = onnx.load(os.path.join(HERE, models[key]))
        feeds = {name: np.asarray(v) for name, v in zip(prop["input_names"], inputs) if v is not None}
        try:
            outputs = runner(model, feeds, options)
        except Exception as exc:  # the backend refuses or fails a call: that is a failure too
            raise BackendRaised(f"{type(exc).__name__}: {exc}") from exc
        made.append((inputs, key, outputs[0]))
        return outputs[0]

    namespace = {"np": np, "equal": equal, "op": op, **values}
    try:
        # the spec's property text, which opkit itself evaluates the same way
        held = bool(eval(compile(prop["holds"], "<property>", "eval"), namespace))
    except NotReplayable as exc:
        print(show(f"cannot replay: the property now calls op({exc}), which the failing run never did"))
        return 2
    except BackendRaised as exc:
        check_calls(made, prop["recorded"])
        print(show(f"backend raised {exc}"))
        return 1
    except Exception as exc:
        check_calls(made, prop["recorded"])
        print(show(f"the property raised {type(exc).__name__}: {exc} (opkit counts that as untested)"))
        return 2
    check_calls(made, prop["recorded"])
    if held:
        print("the property holds: the failure no longer reproduces")
        return 0
    print("MISMATCH", show(f"property {prop['name']!r} does not hold: {prop['holds']}"))
    return 1


def supervise():
    """Run the case in a child process (this script again), so that a hang ends at the case's
    time limit and a crash is reported, each with the documented exit status: the child arms
    SIGALRM at the limit (whose default action ends a process stuck in native code too), and this
    process reads how it ended."""
    import signal
    import subprocess

    limit = float(META.get("time_limit") or 10.0)
    env = dict(os.environ, OPKIT_REPRO_CHILD="1")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env, start_new_session=True)
    try:
        code = child.wait(timeout=limit + BACKSTOP_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        if isinstance(exc, KeyboardInterrupt):
            raise
        code = -signal.SIGALRM
    if code >= 0:
        return code
    survives = META["suite"].startswith("robustness") and META["outcome"] in ("crash", "timeout")
    if code == -getattr(signal, "SIGALRM", 14):
        print(f"the runtime hung: no answer within the case's time limit of {limit:g} s (stopped)")
        return 1 if META["outcome"] == "timeout" or survives else changed()
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    print(f"the runtime's process died: killed by signal {name}")
    return 1 if META["outcome"] == "crash" or survives else changed()


BACKSTOP_S = 30  # past the time limit: a child that blocked SIGALRM is killed all the same


def child_main():
    import signal

    if hasattr(signal, "alarm"):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(1, int(-(-float(META.get("time_limit") or 10.0) // 1))))
    return main()


if __name__ == "__main__":
    if os.environ.get("OPKIT_REPRO_CHILD") == "1" or not hasattr(os, "killpg"):
        sys.exit(child_main())
    sys.exit(supervise())
