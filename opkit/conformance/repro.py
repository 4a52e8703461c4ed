"""Repro bundles: one folder per distinct failure (backend, op, version, types, suite, outcome).

Each holds ``model.onnx``, ``inputs.npz`` (the graph inputs; initializers live in the model),
``expected.npz`` (the reference kernel's outputs), ``case.json`` and a standalone ``repro.py`` that
reruns the model on the failing backend with only onnx, numpy and the backend installed, prints the
discrepancy and exits 1 while the failure reproduces (0 once it is fixed, 3 when the recorded failure
is gone but the case fails another way). A property that does not
hold is replayed as a property: the bundle also holds the models of the property's ``op()`` calls,
and ``repro.py`` evaluates the property again with them (``property_bundle``).

Arrays of ml_dtypes types (bfloat16, float8 ...) are stored as their raw unsigned bits with the
element type recorded in ``case.json``; strings are stored as unicode arrays (no pickles). A map
(or a sequence of maps) is a ``.map.json`` file: its key and value types and its (key, value) pairs.

Everything that comes from outside opkit (the backend's message, its name and version, the case
and its types, attribute strings, string tensors, paths) is data: it goes to ``case.json`` and the
npz files, which ``repro.py`` loads at run time. The script itself is the same text for every bundle
(a message holding ``\"\"\"`` cannot end its docstring and run code when someone runs or opens it).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from ..spec.model import OpVersion
from ..cases.case import Case
from ..core.values import EMPTY_OPTIONAL, is_optional_type
from ..core.dtypes import elem_from_dtype
from ..cases.onnx_model import DEFAULT_AI_ONNX_OPSET, build, model_opset
from ..cases.output_shapes import with_output_ranks
from ..results.record import CaseRecord

_RAW = {"bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4",
        "float4e2m1", "float8e8m0", "uint2", "int2", "float6e2m3", "float6e3m2"}


def _slug(text: str) -> str:
    """One safe path component: no separators, and never ``.`` or ``..``."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text)).strip("_") or "x"
    return "_" * len(slug) if set(slug) == {"."} else slug


def encode_arrays(arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    out, elems = {}, {}
    for name, arr in arrays.items():
        if arr is None:
            continue
        arr = np.asarray(arr)
        elem = elem_from_dtype(arr.dtype)
        elems[name] = elem
        if elem == "string":
            out[name] = arr.astype(str)
        elif elem in _RAW:
            out[name] = arr.view(np.uint16 if arr.dtype.itemsize == 2 else np.uint8)
        else:
            out[name] = arr
    return out, elems


def split_values(values: dict) -> tuple[dict, dict]:
    """(tensors, everything else): sequences (lists), maps and empty optionals go to files of their own."""
    tensors = {k: v for k, v in values.items() if not isinstance(v, (list, dict)) and v is not EMPTY_OPTIONAL}
    return tensors, {k: v for k, v in values.items() if k not in tensors}


def save_values(folder: str, prefix: str, values: dict) -> dict[str, str]:
    """Write each sequence as an onnx SequenceProto (``<prefix>.<i>-<name>.seq.pb``), each empty
    optional as an OptionalProto (``.opt.pb``) and each map or sequence of maps as JSON
    (``.map.json``, see ``map_record``); returns value name -> file name, for case.json."""
    from onnx import numpy_helper

    files = {}
    for i, (name, value) in enumerate(sorted(values.items())):
        if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict)):
            files[name] = f"{prefix}.{i}-{_slug(name)}.map.json"
            with open(os.path.join(folder, files[name]), "w", encoding="utf-8") as f:
                json.dump(map_record(value), f)
            continue
        if value is EMPTY_OPTIONAL:
            proto, kind = numpy_helper.from_optional(None, name=name), "opt"
        else:
            proto, kind = numpy_helper.from_list([np.asarray(v) for v in value], name=name), "seq"
        files[name] = f"{prefix}.{i}-{_slug(name)}.{kind}.pb"
        with open(os.path.join(folder, files[name]), "wb") as f:
            f.write(proto.SerializeToString())
    return files


def map_record(value) -> dict:
    """A map (or a list of maps) as JSON: ``{"sequence": bool, "maps": [{"key_type", "value_type",
    "items": [[key, value], ...]}]}``; pairs, since JSON object keys would turn int64 keys into text."""
    maps = value if isinstance(value, list) else [value]
    return {"sequence": isinstance(value, list),
            "maps": [{"key_type": getattr(m, "key_type", ""), "value_type": getattr(m, "value_type", ""),
                      "items": [[k, v] for k, v in m.items()]} for m in maps]}


def load_map_record(record: dict):
    """The map (or list of maps) ``map_record`` wrote, as ``MapValue``s."""
    from ..core.values import make_map

    maps = [make_map([tuple(p) for p in m["items"]], m["key_type"], m["value_type"]) for m in record["maps"]]
    return maps if record.get("sequence") else maps[0]


def _sequence_elems(values: dict) -> dict[str, str]:
    """The element type of each non-empty sequence (its tensors' allowance; a map's value type)."""
    out = {}
    for k, v in values.items():
        first = v[0] if isinstance(v, list) and v else v
        if isinstance(first, dict):
            out[k] = getattr(first, "value_type", "float")
        elif isinstance(v, list) and v:
            out[k] = elem_from_dtype(np.asarray(v[0]).dtype)
    return out


class ReproWriter:
    def __init__(self, root: str, backend_spec, backend_info: dict, ir_version: int = 13, time_limit: float = 10.0):
        self.root = root
        self.time_limit = time_limit  # the run's per-case --timeout: repro.py holds the case to it
        self.spec = backend_spec
        self.info = backend_info
        self.ir_version = ir_version
        self.written: dict[tuple, str] = {}

    def __call__(self, record: CaseRecord, case: Case, ex, version: OpVersion) -> str | None:
        types = "_".join(v[7:-1] if v.startswith("tensor(") else v for _, v in sorted(record.types.items()))
        key = (record.backend, record.domain, record.op, record.version, types, record.suite,
               record.example, record.outcome)
        if key in self.written:
            return self.written[key]
        name = f"{types or 'notypes'}-{record.suite}-{record.outcome}"
        if record.example != record.suite:  # an example, a property, a search's second failure
            name += f"-{_slug(record.example)}"
        folder = os.path.join(self.root, _slug(record.backend), _slug(record.domain),
                              _slug(f"{record.op}-{record.version}"), _slug(name))
        os.makedirs(folder, exist_ok=True)
        built = build(case, version, ir_version=self.ir_version, infer=record.suite != "robustness",
                      opset=model_opset(case.domain, case.since, self.info.get("min_opsets")), companion_opset=min(
            DEFAULT_AI_ONNX_OPSET, (self.info.get("max_opsets") or {}).get("ai.onnx", DEFAULT_AI_ONNX_OPSET)))
        if self.info.get("needs_output_shapes") and ex.expected is not None:  # as the backend got it
            built = with_output_ranks(built, [None if e is None or isinstance(e, list) else np.ndim(e)
                                              for e in ex.expected])
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(built.model.SerializeToString())
        tensor_feeds, value_feeds = split_values(built.feeds)
        inputs, in_elems = encode_arrays(tensor_feeds)
        np.savez(os.path.join(folder, "inputs.npz"), **inputs)
        in_values = save_values(folder, "input", value_feeds)
        expected = {}
        if ex.expected is not None:
            bound = [case.type_map.get(p.type, p.type) for p in version.outputs]
            for name_, value, type_str in zip(built.output_names, ex.expected, bound):
                if value is not None:
                    expected[name_] = value
                elif is_optional_type(type_str):  # the reference's None of an optional output: an empty optional
                    expected[name_] = EMPTY_OPTIONAL
        tensor_expected, value_expected = split_values(expected)
        exp, out_elems = encode_arrays(tensor_expected)
        np.savez(os.path.join(folder, "expected.npz"), **exp)
        out_values = save_values(folder, "expected", value_expected)
        allowances = _allowances(version, case, ex.expected, built.output_names,
                                 {**out_elems, **_sequence_elems(value_expected)})
        backend = {"name": record.backend, "target": self.spec.target, "api": self.spec.api,
                   "options": {k: list(v) if isinstance(v, tuple) else v for k, v in self.spec.options},
                   "version": self.info.get("version", "")}
        if self.spec.api in ("onnx", "auto") or self.spec.name not in ("onnxruntime", "onnx-reference"):
            module = self.spec.target.split(":")[0]
            try:
                import importlib

                mod = importlib.import_module(module)
                file = getattr(mod, "__file__", None)
                if file:
                    top = mod.__name__.split(".")[0]
                    path = os.path.dirname(os.path.abspath(file))
                    for _ in range(mod.__name__.count(".")):
                        path = os.path.dirname(path)
                    backend["sys_path"] = path if top else None
            except Exception:  # noqa: BLE001
                pass
        meta = {
            "op": record.op, "domain": record.domain, "version": record.version, "types": record.types,
            "suite": record.suite, "example": record.example, "outcome": record.outcome,
            "message": record.message, "case": case.describe(), "backend": backend,
            "input_elems": in_elems, "output_elems": out_elems, "allowances": allowances,
            "input_values": in_values, "expected_values": out_values, "time_limit": self.time_limit,
        }
        if getattr(ex, "calls", None) and record.suite == "properties":  # replay the property itself
            from . import property_bundle

            meta["property"] = property_bundle.write(folder, version, record.example, case, ex.calls,
                                                     encode_arrays, _allowances)
        with open(os.path.join(folder, "case.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, default=str)
            f.write("\n")
        with open(os.path.join(folder, "repro.py"), "w", encoding="utf-8") as f:
            f.write(repro_script(meta))
        rel = os.path.relpath(folder)
        path = rel if not rel.startswith("..") else folder
        self.written[key] = path
        return path


def _allowances(version: OpVersion, case: Case, expected, names, out_elems: dict) -> dict:
    """Per float output, the allowance the runner held it to, as plain JSON the script can apply
    without opkit: ULPs and floor (a number, or nested lists per element), rtol/atol, and the
    element type's mantissa bits and smallest normal exponent for its ULP."""
    from .allowance import allowance_for
    from .ulp import float_format

    out = {}
    for i, (name_, value) in enumerate(zip(names, expected or ())):
        if name_ not in out_elems or value is None:
            continue
        allowance = allowance_for(version, case, i, expected)
        fmt = float_format(allowance.elem) if allowance is not None else None
        if fmt is None:
            continue
        out[name_] = {"accuracy": allowance.accuracy, "ulps": _plain(allowance.ulps), "floor": _plain(allowance.floor),
                      "rtol": allowance.rtol, "atol": allowance.atol, "tiny": allowance.tiny, "nmant": fmt.nmant,
                      "minexp": fmt.minexp}
    return out


def _plain(value):
    arr = np.asarray(value, dtype=np.float64)
    if arr.size and np.all(arr == arr.reshape(-1)[0]):
        return float(arr.reshape(-1)[0])
    return arr.tolist()


def repro_script(meta: dict | None = None) -> str:
    """The bundle's ``repro.py``: the same text for every bundle (``meta`` is not used; it is in
    ``case.json``, which the script reads), so nothing foreign is ever Python source."""
    from .property_bundle import script_part

    return _SCRIPT + script_part() + _SCRIPT_MAIN


_SCRIPT_MAIN = """

def supervise():
    \"\"\"Run the case in a child process (this script again), so that a hang ends at the case's
    time limit and a crash is reported, each with the documented exit status: the child arms
    SIGALRM at the limit (whose default action ends a process stuck in native code too), and this
    process reads how it ended.\"\"\"
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
"""


_SCRIPT = r'''"""Repro bundle written by opkit: reruns one failing conformance case on its backend.

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
'''
