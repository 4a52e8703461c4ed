"""What the options of a run name, looked up: the specs and their versions (--op, --opset), the
backends, the second-opinion engines and the expectations files; every problem a
``TestUsageError``."""

from __future__ import annotations

from ..core.distribution import pip_install

from .config import RunConfig
from .options import TestUsageError


def _select_specs(ops: list[str] | None, opsets: dict[str, int] | None = None):
    """The specs to test for --op selectors (None: every op with a kernel), from every spec the
    project sees (its own, then opkit's built-in ones), the versions of each to run ({path: sinces}
    where not all; see ``selection``), and why ops named with --op were left out (no version of
    them in force at --opset)."""
    from ..spec import catalog
    from ..spec.load import load_spec_file
    from ..core.onnx_types import suggest
    from .selection import SelectionError, narrow_to_opsets, parse_selector, selected_versions

    index: dict[str, list[tuple[str, str]]] = {}
    for entry in catalog.entries():
        index.setdefault(entry.op, []).append((entry.domain, entry.path))
    loaded: dict[str, object] = {}

    def load(path):
        if path not in loaded:
            spec, diags = load_spec_file(path)
            if spec is None or diags:
                raise TestUsageError(f"{path} does not load ({len(diags)} problem(s)); run `opkit validate`")
            loaded[path] = spec
        return loaded[path]

    wanted: dict[str, set[int]] = {}  # path -> the versions selected
    try:
        selectors = [parse_selector(item) for item in ops or ()]
    except SelectionError as exc:
        raise TestUsageError(str(exc)) from None
    for selector in selectors:
        hits = [p for d, p in index.get(selector.name, []) if not selector.domain or d == selector.domain]
        if not hits:
            names = list(index) + [f"{d}::{n}" for n, v in index.items() for d, _ in v]
            raise TestUsageError(f"no spec for op {selector.text!r}" + (suggest(selector.text, names) or ""))
        problems = []
        for path in hits:  # without a domain, a version need only exist in one of the op's domains
            try:  # (the versions first: a domain without them must not be entered with none)
                versions = selected_versions(selector, load(path))
                wanted.setdefault(path, set()).update(versions)
            except SelectionError as exc:
                problems.append(str(exc))
        if len(problems) == len(hits):
            raise TestUsageError(problems[0])
    if not ops:
        try:
            from ..kernels.registry import available_kernels

            have = {(d, o) for d, o, _ in available_kernels()}
        except Exception:  # noqa: BLE001
            have = set()
        wanted = {p: {v.since for v in load(p).versions} for n, v in sorted(index.items()) for d, p in v
                  if (d, n) in have}
    specs, versions, left_out = [], {}, []
    for path in sorted(wanted):
        spec = load(path)
        chosen = sorted(wanted[path])
        chosen = narrow_to_opsets(spec, tuple(chosen), opsets or {})
        if not chosen:
            if ops:  # an op the user named: say why it does not run
                name = spec.name if spec.domain == "ai.onnx" else f"{spec.domain}::{spec.name}"
                left_out.append(f"{name}: left out, no selected version is in force at --opset "
                                f"{opsets.get(spec.domain)}")
            continue
        specs.append(spec)
        if len(chosen) < len(spec.versions):
            versions[path] = chosen
    if ops and opsets and not specs:
        raise TestUsageError(f"none of the ops given exists at --opset {', '.join(map(str, opsets.values()))}")
    return specs, versions, left_out


def _backend_specs(config: RunConfig):
    from ..backends.registry import BackendNotFound, resolve

    from ..core.project import active

    default = active().backend
    names = config.backend or ([default] if default else [])
    if not names:
        raise TestUsageError("give at least one --backend (e.g. --backend onnxruntime), or set `backend` in "
                             "[tool.opkit] of pyproject.toml")
    out = []
    for name in names:
        options = {}
        if config.providers and name in ("onnxruntime", "ort"):
            options["providers"] = [p.strip() for p in config.providers.split(",") if p.strip()]
        try:
            out.append(resolve(name, **options))
        except BackendNotFound as exc:
            raise TestUsageError(str(exc)) from None
    return out


# asked about every failure unless --second-opinion names others (each only when installed)
DEFAULT_SECOND_OPINIONS = ("onnx-reference", "onnxruntime")


def _second_opinion_specs(config: RunConfig, backend_specs) -> list:
    """The engines asked about each failure: those named with --second-opinion (each must be
    installed: a usage error otherwise), or by default each of onnx's ReferenceEvaluator and
    onnxruntime that is installed: two engines written apart place a finding where one alone
    cannot (onnx.reference's own bugs and gaps left 30% of another runtime's crashes unplaced).
    An engine is never asked about its own failures (``run_unit`` drops it)."""
    from ..backends.registry import BackendNotFound, BackendUnavailable, resolve

    if config.no_second_opinion:
        return []
    named = config.second_opinion
    out = []
    for name in named or list(DEFAULT_SECOND_OPINIONS):
        try:
            spec = resolve(name)
            _check_available(spec)
        except (BackendNotFound, BackendUnavailable) as exc:
            if named:
                raise TestUsageError(f"--second-opinion {name}: {exc}") from None
            continue  # the default engine is optional
        out.append(spec)
    return out


def _check_available(spec) -> None:
    """Fail early (usage error) when a backend's package is missing."""
    import importlib

    from ..backends.registry import BackendUnavailable

    module = spec.target.split(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        need = spec.requires or exc.name
        raise BackendUnavailable(f"backend {spec.name!r} needs {need} (missing module {exc.name!r})") from None
    if spec.name.startswith("onnxruntime"):
        try:
            importlib.import_module("onnxruntime")
        except ModuleNotFoundError:
            raise BackendUnavailable(f"backend {spec.name!r} needs onnxruntime: {pip_install('ort')}") from None


def _load_expectations(config: RunConfig, backend_name):
    """The merged expectations for a backend and the files they came from; any problem with a file
    is a usage error (one line naming the file and the entry)."""
    from ..results.outcomes import Expectations, ExpectationsError, default_expectation_files, load_expectations

    if config.no_expectations:
        return Expectations(), []
    paths = list(config.expectations or []) or default_expectation_files(backend_name)
    merged = Expectations()
    for path in paths:
        try:
            merged.entries += load_expectations(path).entries
        except ExpectationsError as exc:
            raise TestUsageError(f"expectations: {exc}") from None
    return merged, paths

