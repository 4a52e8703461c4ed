"""The part of a repro bundle that lets its ``repro.py`` evaluate a failed property again.

Written next to the drawn case's own files (``model.onnx``, ``inputs.npz`` ...) when the failure is
a property that does not hold (see ``property_calls``):

- ``property.npz`` and ``case.json``'s ``property.values``: what the property's names are bound
  to (the inputs by formal name, the attributes with their defaults);
- ``calls/model-N.onnx``: one model per distinct call key, as the runner sent it to the backend;
- ``calls/call-N-inputs.npz`` / ``calls/call-N-expected.npz``: each call of the failing evaluation
  with the reference kernel's output for it, so the script can say which call differs.

``case.json``'s ``property`` names these files; the property text itself is the spec's, which
opkit evaluates the same way (``harness.check_property``).
"""

from __future__ import annotations

import os

import numpy as np

from ..spec.model import OpVersion
from ..cases.case import Case
from . import harness
from .property_calls import BACKEND, PropertyCall


def _json_value(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def write(folder: str, version: OpVersion, prop_name: str, case: Case, calls: tuple[PropertyCall, ...],
          encode_arrays, allowances) -> dict:
    """Write the files above into ``folder``; returns ``case.json``'s ``property`` entry.
    ``encode_arrays`` and ``allowances`` are the bundle writer's (one encoding for every npz)."""
    prop = next(p for p in version.properties if p.name == prop_name)
    names = dict(case.inputs)
    bound = {p.name: names.get(p.name) for p in version.inputs}
    bound.update(case.kernel_attributes())
    arrays = {k: np.asarray(v) for k, v in bound.items() if isinstance(v, (np.ndarray, np.generic))}
    encoded, elems = encode_arrays(arrays)
    np.savez(os.path.join(folder, "property.npz"), **encoded)
    os.makedirs(os.path.join(folder, "calls"), exist_ok=True)

    models: dict[str, str] = {}
    for call in calls:
        if call.key not in models:
            path = f"calls/model-{len(models)}.onnx"
            with open(os.path.join(folder, path), "wb") as f:
                f.write(call.model.model.SerializeToString())
            models[call.key] = path

    recorded = []
    for i, call in enumerate(c for c in calls if c.source == BACKEND):
        inputs, input_elems = encode_arrays({str(j): a for j, (_, a) in enumerate(call.case.inputs)})
        entry = {"key": call.key, "describe": call.case.describe(), "count": len(call.case.inputs),
                 "inputs": f"calls/call-{i}-inputs.npz", "input_elems": input_elems,
                 "expected": None, "expected_elems": {}, "allowance": None}
        np.savez(os.path.join(folder, entry["inputs"]), **inputs)
        try:
            expected = harness.expected_outputs(call.case)
        except Exception:  # noqa: BLE001 - the reference refuses the call: nothing to compare it with
            expected = None
        if expected and expected[0] is not None:
            out, out_elems = encode_arrays({"output": expected[0]})
            entry["expected"], entry["expected_elems"] = f"calls/call-{i}-expected.npz", out_elems
            np.savez(os.path.join(folder, entry["expected"]), **out)
            names_out = call.model.output_names[:1]
            entry["allowance"] = allowances(version, call.case, expected, names_out, {names_out[0]: out_elems["output"]}) \
                .get(names_out[0]) if names_out else None
        recorded.append(entry)

    return {"name": prop.name, "holds": prop.holds.strip(), "input_names": [p.name for p in version.inputs],
            "values": {k: (None if k in arrays else _json_value(v)) for k, v in bound.items()},
            "arrays": elems, "models": [{"key": k, "model": v} for k, v in models.items()],
            "recorded": recorded}


def script_part() -> str:
    """The functions of the bundle's ``repro.py`` that replay a property (``replay_property``),
    with ``call_key``'s source: the script cannot import opkit. They use the script's ``load``,
    ``compare``, ``show``, ``HERE`` and ``META``."""
    from .property_calls import call_key_source

    return "\n\n" + call_key_source() + _SCRIPT_PART


_SCRIPT_PART = r'''

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
'''
