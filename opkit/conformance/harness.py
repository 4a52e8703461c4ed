"""What a conformance check needs beyond the backend: specs, the oracle, examples, properties,
lowerings. Shared by the runner (``opkit test``) and the generated pytest files."""

from __future__ import annotations

import contextlib
import functools
import os
import textwrap
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..spec import scopes
from ..spec.model import ContainerValue, Example, OpSpec, OpVersion, TensorValue
from ..cases.case import Case, make_case, variadic_arguments
from ..core.values import EMPTY_OPTIONAL
from .output_compare import equal
from ..core.dtypes import elem_from_dtype, np_dtype



class Invalid(Exception):
    """The reference kernel rejects the case (KernelValidationError): not a valid test input."""


class OracleTooSlow(Invalid):
    """The reference kernel ran past ORACLE_TIME_LIMIT on the case: not a useful test input."""


@functools.lru_cache(maxsize=None)
def load_op(domain: str, op: str, specs_dir: str | None = None) -> OpSpec:
    """The spec of ``domain::op``: from ``specs_dir`` when given, else wherever the active project
    sees it (its own spec trees, then opkit's built-in one)."""
    from ..spec import catalog
    from ..spec.load import load_spec_file

    if specs_dir:
        path = os.path.join(specs_dir, domain, f"{op}.yaml")
    else:
        entry = catalog.find(domain, op)
        if entry is None:
            raise LookupError(f"no spec for {domain}::{op} in this project or opkit's built-in specs")
        path = entry.path
    spec, diags = load_spec_file(path)
    if spec is None or diags:
        raise ValueError(f"{path}: does not load ({len(diags)} problem(s)); run `opkit validate`")
    return spec


def clear_caches() -> None:
    load_op.cache_clear()


def _registry_kernel(domain: str, op: str, since: int):
    try:
        from ..kernels.registry import get_kernel
    except ImportError:
        return None
    return get_kernel(domain, op, since)


_ORACLE_OVERRIDES: dict[tuple[str, str, int], Callable] = {}


def set_oracle(domain: str, op: str, since: int, fn: Callable | None) -> None:
    """Replace the reference kernel of one op version (tests use this)."""
    if fn is None:
        _ORACLE_OVERRIDES.pop((domain, op, since), None)
    else:
        _ORACLE_OVERRIDES[(domain, op, since)] = fn


def oracle(domain: str, op: str, since: int) -> Callable | None:
    fn = _ORACLE_OVERRIDES.get((domain, op, since))
    return fn if fn is not None else _registry_kernel(domain, op, since)


def validation_error_types() -> tuple[type, ...]:
    try:
        from ..kernels import KernelValidationError

        return (KernelValidationError,)
    except ImportError:
        return (ValueError,)


# A drawn case whose reference output takes this long is not a useful test input (say, STFT with a
# frame length near int64 min asks for 2**63 frames); without a limit one such draw stalls a sweep.
# Seconds of CPU time, not of the clock: on a loaded machine the clock runs several times faster
# than the kernel computes, and a clock limit rejected other draws on another run of the same seed.
ORACLE_TIME_LIMIT = 5.0


class _OracleTimeout(BaseException):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Interrupt the block after ``seconds`` of this process's CPU time (ITIMER_PROF; only in the
    main thread, else no limit). CPU time does not depend on what else the machine runs."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise _OracleTimeout

    previous = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def expected_outputs(case: Case) -> tuple:
    """The oracle's outputs for ``case``; raises Invalid when the kernel rejects the inputs."""
    fn = oracle(case.domain, case.op, case.since)
    if fn is None:
        raise LookupError(f"no reference kernel for {case.domain}::{case.op}-{case.since}")
    try:
        with np.errstate(all="ignore"), _time_limit(ORACLE_TIME_LIMIT):
            # a node declaring fewer or more outputs than the formal ones (Split's parts) tells
            # the kernel how many it must produce, as a runtime would read them off the node
            extra = {"_n_outputs": case.n_outputs} if case.n_outputs else {}
            out = fn(*case.positional(), **case.kernel_attributes(), **extra)
    except _OracleTimeout:
        raise OracleTooSlow(f"reference kernel took over {ORACLE_TIME_LIMIT:g} s of CPU time (inputs too large for a "
                      f"conformance case)") from None
    except validation_error_types() as exc:
        raise Invalid(str(exc)) from exc
    except MemoryError as exc:  # the input asks for an absurd output: not a useful test input
        raise Invalid(f"reference kernel ran out of memory: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - inputs the kernel cannot take (e.g. shapes that do not
        # fit each other, which the strategies do not know about): not a test input either
        raise Invalid(f"reference kernel raised {type(exc).__name__}: {exc}") from exc
    return out if isinstance(out, tuple) else (out,)


# ------------------------------------------------------------------------------------------------
# examples


def tensor_array(tv: TensorValue) -> np.ndarray:
    if tv.dtype == "string":
        arr = np.empty(tv.shape, dtype=object)
        flat = np.asarray(tv.value, dtype=object).ravel().tolist() if tv.shape else [tv.value]
        arr.ravel()[:] = flat
        return arr
    from ..cases.draws import cast

    value = tv.value
    if tv.dtype in ("complex64", "complex128"):
        value = np.vectorize(lambda v: complex(str(v).replace(" ", "")), otypes=[complex])(np.asarray(value, dtype=object)) \
            if np.size(value) else np.zeros(tv.shape)
    arr = cast(np.asarray(value, dtype=object).tolist() if np.ndim(value) else [value], tv.dtype)
    return arr.reshape(tv.shape)


def example_value(value, *, empty_optional=None):
    """An example argument as opkit holds values (``opkit.core.values``): a tensor as an array, a
    sequence as a list, an optional as its element or ``empty_optional``."""
    if isinstance(value, ContainerValue):
        if value.type.startswith("map("):  # a map: its (key, value) pairs, typed by the map's type
            from ..core.values import make_map, map_types

            return make_map(value.items, *map_types(value.type))
        if value.type.startswith("seq("):
            return [example_value(v) for v in value.items]
        return example_value(value.items[0]) if value.items else empty_optional
    return tensor_array(value)


def _attribute_value(value):
    """Tensor attributes (DirectML's Value) are written ``{dtype: float, value: 1}`` in examples."""
    if isinstance(value, TensorValue):
        return tensor_array(value)
    if isinstance(value, dict) and set(value) == {"dtype", "value"}:
        return tensor_array(TensorValue(value["dtype"], tuple(np.shape(value["value"])), value["value"]))
    return value


def example_case(spec: OpSpec, version: OpVersion, example: Example) -> tuple[Case, tuple]:
    """The case an example describes, and its expected outputs in node-output order (a variadic
    output's arguments spread out; None where an optional output is not given)."""
    given = dict(example.inputs)
    inputs = []
    binding: dict[str, str] = {}
    for p in version.inputs:
        if p.name not in given:
            if p.option == "single":
                raise ValueError(f"example {example.name!r}: input {p.name!r} missing")
            inputs.append((p.name, None))
            continue
        tv = given[p.name]
        if isinstance(tv, tuple):  # a variadic input's arguments
            inputs += variadic_arguments(p.name, [example_value(t, empty_optional=EMPTY_OPTIONAL) for t in tv])
        else:
            inputs.append((p.name, None if tv is None else example_value(tv, empty_optional=EMPTY_OPTIONAL)))
        _bind_type(binding, p, tv)
    while inputs and inputs[-1][1] is None:
        inputs.pop()
    produced = dict(example.outputs)
    expected: list = []
    declared = 0  # outputs up to the last one given: trailing ones not given are not declared
    for p in version.outputs:
        tv = produced.get(p.name)
        _bind_type(binding, p, tv)
        if isinstance(tv, tuple):
            expected.extend(example_value(t) for t in tv)
        else:  # None: not given, or the empty optional (the output's optional type tells them apart)
            expected.append(None if tv is None else example_value(tv))
        if tv is not None:
            declared = len(expected)
    del expected[declared:]
    attributes = {name: _attribute_value(v) for name, v in example.attributes}
    case = make_case(spec, version, binding, attributes, inputs)
    if len(expected) != len(version.outputs):
        case = replace(case, n_outputs=len(expected))
    return case, tuple(expected)


def _bind_type(binding: dict[str, str], param, value) -> None:
    """Bind the parameter's type variable from an example value (a variadic one's first)."""
    first = value[0] if isinstance(value, tuple) and value else value
    if "(" in param.type:
        return
    if isinstance(first, TensorValue):
        binding.setdefault(param.type, f"tensor({first.dtype})")
    elif isinstance(first, ContainerValue):
        binding.setdefault(param.type, first.type)


# ------------------------------------------------------------------------------------------------
# properties and lowerings


def infer_binding(version: OpVersion, inputs: list, attributes: dict | None = None) -> dict[str, str]:
    """The type binding a call implies: from its inputs, then from tensor attributes typed by a type
    parameter (DiagonalMatrix1 without InputTensor takes T from Value)."""
    binding = {}
    for p, arr in zip(version.inputs, inputs):
        if arr is not None and "(" not in p.type:
            binding.setdefault(p.type, f"tensor({elem_from_dtype(np.asarray(arr).dtype)})")
    for attr in version.attributes:
        value = (attributes or {}).get(attr.name)
        if attr.element_type and isinstance(value, np.ndarray):
            binding.setdefault(attr.element_type, f"tensor({elem_from_dtype(value.dtype)})")
    return binding


@functools.lru_cache(maxsize=None)
def _compile_expr(source: str):
    return compile(source, "<property>", "eval")


def property_namespace(case: Case, version: OpVersion, op_fn: Callable) -> dict[str, Any]:
    # every input and attribute is bound, None when absent: an optional attribute without a default
    # (DiagonalMatrix1's OutputSizes) was left out, and properties naming it raised NameError
    return scopes.namespace("property", version, {"np": np, "equal": equal, "op": op_fn},
                            {**case.kernel_attributes(), **dict(case.inputs)})


def check_property(prop, case: Case, version: OpVersion, op_fn: Callable) -> bool:
    return bool(eval(_compile_expr(prop.holds), property_namespace(case, version, op_fn)))  # noqa: S307


def lowering_function(lowering, version: OpVersion, target: Callable) -> Callable:
    """The lowering's ``python`` body as a function with the kernel signature."""
    params = [f"{p.name}=None" for p in version.inputs]
    attrs = [f"{a.name}={a.default!r}" for a in version.attributes]
    signature = ", ".join(params + (["*"] + attrs if attrs else []))
    src = f"def lowered({signature}):\n" + textwrap.indent(lowering.python.rstrip() + "\n", "    ")
    def call_target(*args, **kwargs):  # like ``op`` in properties: the first output when there is one
        out = target(*args, **kwargs)
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out

    ns = scopes.provide("lowering", {"np": np, "target": call_target})  # + the parameters of ``lowered``
    exec(compile(src, f"<lowering {lowering.name}>", "exec"), ns)  # noqa: S102
    return ns["lowered"]


def lowering_target(lowering) -> tuple[str, str, int]:
    domain, _, rest = lowering.to.partition("::")
    op, _, since = rest.rpartition("-")
    return domain, op, int(since)


def first(out):
    return out[0] if isinstance(out, tuple) else out


def dtype_of(type_str: str):
    return np_dtype(type_str)
