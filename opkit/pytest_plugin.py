"""pytest plugin (entry point ``opkit``): options and fixtures for generated conformance tests.

Options: ``--backend NAME`` (repeatable; tests run once per backend), ``--max-examples N`` and
``--seed S`` (hypothesis), ``--opkit-timeout SECONDS`` (per case), ``--opkit-report FILE`` (a
conformance report in the ``opkit test`` JSON format), ``--opkit-expectations FILE``.

Tests marked ``@pytest.mark.opkit(domain=, op=, version=, suite=, example=)`` are matched against
the backend's expectations file (``conformance/expectations/<backend>.yaml``): an expected failure
is reported as xfail, an unexpected pass fails as XPASS(strict).
"""

from __future__ import annotations

import time

import pytest

_STATE_KEY = "_opkit_state"


def pytest_addoption(parser):
    group = parser.getgroup("opkit")
    group.addoption("--backend", action="append", default=None,
                    help="opkit backend to test generated conformance tests against (repeatable)")
    group.addoption("--max-examples", type=int, default=None, dest="opkit_max_examples",
                    help="hypothesis examples per generated test (default 50)")
    group.addoption("--seed", type=int, default=None, dest="opkit_seed",
                    help="hypothesis seed for generated tests (default: hypothesis' own)")
    group.addoption("--opkit-report", metavar="FILE", default=None,
                    help="write a conformance report (JSON, the `opkit test --report` format)")
    group.addoption("--opkit-timeout", type=float, default=10.0, help="per-case backend time limit (s)")
    group.addoption("--opkit-expectations", action="append", default=None, metavar="FILE",
                    help="expectations file(s) (default conformance/expectations/<backend>.yaml)")


class _State:
    def __init__(self, config):
        self.config = config
        self.handles: dict[str, object] = {}
        self.records: list = []  # CaseRecord, one per opkit test item
        self.start = time.perf_counter()


def pytest_configure(config):
    config.addinivalue_line("markers", "opkit(domain, op, version, suite, example, types): an opkit conformance test")
    setattr(config, _STATE_KEY, _State(config))
    try:
        from hypothesis import HealthCheck, Phase, settings
    except ImportError:  # pragma: no cover
        return
    max_examples = config.getoption("opkit_max_examples")
    settings.register_profile("opkit", max_examples=max_examples or 50, deadline=None, database=None,
                              suppress_health_check=list(HealthCheck), print_blob=False,
                              report_multiple_bugs=False,
                              phases=(Phase.explicit, Phase.generate, Phase.shrink))  # no slow "explain"
    if max_examples is not None:
        settings.load_profile("opkit")


def backend_names(config) -> list[str]:
    names = config.getoption("backend")
    if names:
        return names
    try:
        import onnxruntime  # noqa: F401

        return ["onnxruntime"]
    except ImportError:
        return ["onnx-reference"]


def pytest_generate_tests(metafunc):
    if "opkit_backend" in metafunc.fixturenames:
        metafunc.parametrize("opkit_backend", backend_names(metafunc.config), indirect=True, scope="session")


def pytest_collection_modifyitems(config, items):
    if any(item.get_closest_marker("opkit") is not None for item in items):
        try:  # generated tests: no example database in the tree, no deadline, quiet health checks
            from hypothesis import settings

            settings.load_profile("opkit")
        except ImportError:  # pragma: no cover
            pass
    seed = config.getoption("opkit_seed")
    if seed is None:
        return
    for item in items:
        fn = getattr(item, "obj", None)
        if fn is not None and hasattr(fn, "hypothesis"):
            try:
                fn._hypothesis_internal_use_seed = seed
            except AttributeError:
                pass


def _make_handle(name: str, config):
    from opkit.backends.registry import BackendNotFound, resolve
    from opkit.results.outcomes import Expectations, default_expectation_files, load_expectations
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker import Worker

    try:
        spec = resolve(name)
    except BackendNotFound as exc:
        raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("opkit_timeout")
    worker = Worker(spec, timeout=timeout)
    info = worker.describe()
    runner = Runner(BackendRunner(worker, info), max_examples=1, seed=config.getoption("opkit_seed") or 0,
                    timeout=timeout, backend_name=info.get("name", name))
    files = config.getoption("opkit_expectations")
    if not files:
        files = default_expectation_files(spec.name)
    expectations = Expectations()
    for path in files:
        expectations.entries += load_expectations(path).entries

    class Handle:
        pass

    handle = Handle()
    handle.name, handle.spec, handle.worker, handle.info = info.get("name", name), spec, worker, info
    handle.runner, handle.expectations = runner, expectations
    return handle


@pytest.fixture(scope="session")
def opkit_backend(request):
    """The backend under test (one per ``--backend``), with a worker process and cached sessions."""
    state: _State = getattr(request.config, _STATE_KEY)
    name = request.param
    if name not in state.handles:
        state.handles[name] = _make_handle(name, request.config)
    return state.handles[name]


def _record_for(item, call_report, excinfo):
    marker = item.get_closest_marker("opkit")
    if marker is None:
        return None
    kw = dict(marker.kwargs)
    params = getattr(getattr(item, "callspec", None), "params", {})
    types = params.get("types") or kw.get("types") or {}
    backend = params.get("opkit_backend", "spec") if kw.get("suite") != "lowerings" else "spec"
    state: _State = getattr(item.config, _STATE_KEY)
    handle = state.handles.get(backend)
    from opkit.results.record import CaseRecord

    outcome, message, minimal = "pass", "", None
    if excinfo is not None:
        exc = excinfo.value
        # backend failures always arrive as ConformanceFailure (with an outcome); anything else is
        # opkit's own (no valid input drawn, a kernel or property error): untested, not the backend's
        outcome = getattr(exc, "outcome", None) or "untested"
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {str(exc).split(chr(10))[0]}"[:2000]
        case = getattr(exc, "case", None)
        minimal = case.describe() if case is not None else None
    rec = CaseRecord(backend=handle.name if handle else backend, suite=kw.get("suite", "differential"),
                     op=kw.get("op"), domain=kw.get("domain", "ai.onnx"), version=kw.get("version"),
                     types=dict(types), example=kw.get("example", item.name), outcome=outcome, message=message,
                     duration_s=round(call_report.duration, 4), minimal_example=minimal, test=item.nodeid)
    return rec, handle


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or item.get_closest_marker("opkit") is None:
        return
    if report.skipped:
        return
    excinfo = call.excinfo if report.failed else None
    if excinfo is not None and excinfo.errisinstance(pytest.skip.Exception):
        return
    got = _record_for(item, call, excinfo)
    if got is None:
        return
    record, handle = got
    if handle is not None:
        record = handle.expectations.apply_record(record)
    state: _State = getattr(item.config, _STATE_KEY)
    state.records.append(record)
    if record.outcome == "xfail":
        report.outcome = "skipped"
        report.wasxfail = record.expected["reason"]
    elif record.outcome == "untested":  # opkit's gap, not a failure of the backend under test
        report.outcome = "skipped"
        report.longrepr = (str(item.path), None, f"opkit could not test this: {record.message[:500]}")
    elif record.outcome == "xpass":
        report.outcome = "failed"
        report.longrepr = f"XPASS(strict): {record.message}"


def pytest_sessionfinish(session, exitstatus):
    state: _State | None = getattr(session.config, _STATE_KEY, None)
    if state is None:
        return
    path = session.config.getoption("opkit_report")
    if path:
        from opkit.results.report import build_report, environment, write_report

        infos = [{k: v for k, v in h.info.items()} for h in state.handles.values()]
        target = environment(infos, session.config.getoption("opkit_seed") or 0)
        settings = {"suites": sorted({r.suite for r in state.records}), "ops": None,
                    "max_examples": session.config.getoption("opkit_max_examples") or 50,
                    "timeout_s": session.config.getoption("opkit_timeout"), "expectations": []}
        write_report(build_report(state.records, target, settings, time.perf_counter() - state.start), path)
    for handle in state.handles.values():
        handle.worker.close()
