"""``opkit import``: write importer output into specs/, merging with what is already there."""

from __future__ import annotations

from ..core.distribution import pip_install

import os
from collections.abc import Callable

from ..importers.merge import merge_spec
from ..spec.diagnostics import Diagnostic
from ..spec.dump import dump_spec
from ..spec.load import load_spec_file
from ..spec.model import OpSpec
from ..core.atomic_files import WriteResult, write_files

IMPORTERS: dict[str, tuple[str, str]] = {
    # name -> (module:function, what it needs installed)
    "onnx": ("opkit.importers.onnx_defs:import_onnx", "onnx"),
    "onnxruntime": ("opkit.importers.onnxruntime:import_onnxruntime", f"onnxruntime ({pip_install('ort')})"),
}


def spec_path(specs_dir: str, spec: OpSpec) -> str:
    return os.path.join(specs_dir, spec.domain, f"{spec.name}.yaml")


def load_importer(name: str) -> Callable[[], list[OpSpec]]:
    import importlib

    target, _needs = IMPORTERS[name]
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def import_specs(specs: list[OpSpec], specs_dir: str, *, check: bool = False,
                 only: set[str] | None = None) -> tuple[WriteResult, list[Diagnostic]]:
    """Merge ``specs`` into ``specs_dir``. A spec file on disk that does not load is left alone
    (its hand-written parts would be lost) and reported."""
    files: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for spec in specs:
        if only and spec.name not in only:
            continue
        path = spec_path(specs_dir, spec)
        old = None
        if os.path.exists(path):
            old, diags = load_spec_file(path)
            if diags:
                problems.extend(diags)
                continue
        files[path] = dump_spec(merge_spec(spec, old))
    return write_files(files, check=check), problems


def import_examples(specs_dir: str, *, check: bool = False, only: set[str] | None = None,
                    max_elements: int | None = None, testcases=None):
    """``opkit import onnx-examples``: onnx's node test cases into the ``examples`` of the specs in
    ``specs_dir``. The examples an earlier import wrote (their ``source`` says so) are replaced;
    hand-written ones are kept and win a name clash. An imported example the spec's own checks
    refuse (a type the spec does not allow, a rank rule) is left out and reported with the
    loader's reason. Returns (WriteResult, ExampleImport, problems of specs on disk)."""
    from dataclasses import replace

    from ..importers.onnx_examples import DEFAULT_MAX_ELEMENTS, import_examples as collect, is_imported
    from ..spec.load import spec_files

    on_disk: dict[tuple[str, str], tuple[str, OpSpec]] = {}
    problems: list[Diagnostic] = []
    for path in spec_files([specs_dir]):
        spec, diags = load_spec_file(path)
        if diags:
            problems.extend(diags)
        elif spec is not None and (not only or spec.name in only):
            on_disk[(spec.domain, spec.name)] = (path, spec)
    found = collect({key: spec for key, (_, spec) in on_disk.items()},
                    max_elements=max_elements or DEFAULT_MAX_ELEMENTS, testcases=testcases)
    by_version: dict[tuple[str, str, int], list] = {}
    for item in found.examples:
        by_version.setdefault((item.domain, item.op, item.since), []).append(item.example)
    files: dict[str, str] = {}
    for (domain, name), (path, spec) in sorted(on_disk.items()):
        versions = []
        for v in spec.versions:
            kept = [e for e in v.examples if not is_imported(e)]
            taken = {e.name for e in kept}
            new = []
            for e in by_version.get((domain, name, v.since), []):
                if e.name in taken:
                    found.leave_out(e, "a hand-written example has its name")
                else:
                    new.append(e)
            accepted = [stated_precision(spec, v, e, found.precision.get(e.name))
                        for e in new if _example_loads(path, spec, v, e, found)]
            versions.append(replace(v, examples=tuple(kept + sorted(accepted, key=lambda e: e.name))))
        files[path] = dump_spec(replace(spec, versions=tuple(versions)))
    return write_files(files, check=check), found, problems


def _example_loads(path: str, spec: OpSpec, version, example, found) -> bool:
    """Whether the spec still loads with ``example`` as the version's only example; if not, the
    loader's first complaint is recorded as the reason it was left out."""
    from dataclasses import replace

    trial = replace(spec, versions=tuple(replace(v, examples=(example,)) if v.since == version.since
                                         else replace(v, examples=()) for v in spec.versions))
    _, diags = load_spec_file(path, dump_spec(trial).encode("utf-8"))
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        found.leave_out(example, f"the spec refuses it: {errors[0].message.split(': ', 1)[-1]}")
        return False
    return True


def stated_precision(spec: OpSpec, version, example, precision: tuple[float, float] | None):
    """``example`` with the precision its source gives (onnx's node tests compare with rtol 1e-3,
    atol 1e-7) where its expected values need it: opkit's reference kernel and onnx's
    ReferenceEvaluator agree with each other within the op's accuracy class, and both miss the
    expected values by more than that class (or the page snippet's tolerance) allows but less than
    the stated precision: the expected values were printed to four digits. Anything else is left
    as it is: an example that only opkit's kernel misses is a kernel bug to fix, not a precision
    to relax."""
    from dataclasses import replace

    from ..conformance.harness import example_case
    from ..results.outcomes import PASS
    from ..conformance.case_exec import check_outputs

    if not precision or not any(precision) or version.draws:
        return example
    case, expected = example_case(spec, version, example)
    try:
        ours, theirs = _reference_outputs(version, case)
    except Exception:  # noqa: BLE001 - an engine that cannot run it gives no evidence either way
        return example
    if check_outputs(version, case, expected, ours).outcome == PASS and _within_snippet(version, expected, ours):
        return example
    agree = check_outputs(version, case, tuple(ours), theirs).outcome == PASS
    within = all(check_outputs(version, case, expected, out, precision=precision).outcome == PASS
                 for out in (ours, theirs))
    return replace(example, rtol=precision[0], atol=precision[1]) if agree and within else example


def _reference_outputs(version, case) -> tuple[list, list]:
    """The case's outputs from opkit's reference backend and from onnx.reference, in-process."""
    import warnings

    import numpy as np
    from onnx.reference import ReferenceEvaluator

    from ..backends.reference import ReferenceBackend
    from ..cases.onnx_model import build

    built = build(case, version)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ours = list(ReferenceBackend.run_model(built.model, built.feeds))
        theirs = list(ReferenceEvaluator(built.model).run(None, built.feeds))
    return ours, theirs


def _within_snippet(version, expected: tuple, actual: list) -> bool:
    """Whether ``actual`` passes the page snippet's float comparison (opkit.emit.docs_pages)."""
    import numpy as np

    from ..emit.page_examples import snippet_tolerance
    from ..core.numpy_types import elem_from_dtype

    for want, got in zip(expected, actual):
        if not isinstance(want, np.ndarray) or want.dtype.kind not in "fc":
            continue
        tol = snippet_tolerance(version, elem_from_dtype(want.dtype))
        if tol is not None and not np.allclose(np.asarray(got, dtype=np.float64) if want.dtype.kind == "f" else got,
                                               want.astype(np.float64) if want.dtype.kind == "f" else want,
                                               rtol=tol[0], atol=tol[1], equal_nan=True):
            return False
    return True
