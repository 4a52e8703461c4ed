"""Suite ``onnx-node``: onnx's node test cases (``onnx.backend.test.case.node``) against a backend.

Every case is a one-node model (or its ``_expanded`` function body) with inputs and expected
outputs. Outputs are compared as onnx's backend test runner does (same shapes and dtypes, then
``assert_allclose`` with the case's rtol/atol: 1e-3 / 1e-7 for every node case in onnx 1.23, two
bfloat16 ULPs for bfloat16). The JSON report is an ordinary conformance report (the case records
``opkit test`` writes, suite ``onnx-node``, so ``opkit compare`` and the scoreboard read it), and
deterministic (no timings) so it can be committed.
"""

from __future__ import annotations

import functools
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.values import structure
from ..results.record import CaseRecord, records

SUITE = "onnx-node"
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


@dataclass(frozen=True)
class Case:
    name: str
    op: str  # 'Abs' for ai.onnx, 'domain::Op' otherwise
    opset: int  # the model's opset for the op's domain
    testcase: Any  # onnx.backend.test.case.test_case.TestCase
    draws: bool = False  # a node draws random values: only the outputs' types and shapes are compared


@dataclass
class CaseResult:
    name: str
    op: str
    status: str  # pass | fail | error | unsupported
    message: str = ""
    seconds: float = 0.0
    opset: int = 0


# node-suite status -> conformance outcome
OUTCOME_OF = {"pass": "pass", "fail": "mismatch", "error": "error", "unsupported": "unsupported"}


@dataclass
class SuiteResult:
    backend: str
    cases: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(c.status == "pass" for c in self.cases)

    @property
    def ok(self) -> bool:
        return all(c.status == "pass" for c in self.cases)

    def per_op(self) -> dict[str, tuple[int, int]]:
        out: dict[str, list[int]] = {}
        for c in self.cases:
            entry = out.setdefault(c.op, [0, 0])
            entry[0] += c.status == "pass"
            entry[1] += 1
        return {op: (p, t) for op, (p, t) in sorted(out.items())}

    def records(self) -> list[CaseRecord]:
        """The cases as conformance records (``opkit.results.record.CaseRecord``), by name."""
        out = []
        for c in sorted(self.cases, key=lambda c: c.name):
            domain, _, op = c.op.rpartition("::")
            out.append(CaseRecord(backend=self.backend, suite=SUITE, op=op, domain=domain or "ai.onnx",
                                  version=c.opset, types={}, example=c.name, outcome=OUTCOME_OF[c.status],
                                  message=c.message, examples_run=1))
        return out

    def to_json(self, ops: list[str] | None = None) -> dict[str, Any]:
        """The conformance report (deterministic: no timings, no machine facts beyond the platform)."""
        import onnx

        from ..results.report import build_report, environment

        target = environment([{"name": self.backend, "version": "onnx " + onnx.__version__}], 0)
        import platform

        target.pop("python", None)  # a committed report must not change with the machine it was made on
        target["machine"] = {"platform": platform.system(), "cpu_count": None}
        return build_report(self.records(), target,
                            {"suites": [SUITE], "ops": sorted(ops) if ops else None}, 0.0)


def per_op_counts(report: dict) -> dict[str, tuple[int, int]]:
    """(passed, total) node cases per op key ('Abs', 'com.microsoft::Op') of a node-suite report."""
    return case_counts(records(report.get("cases", []), report.get("_path", "report")))


def case_counts(cases: list[CaseRecord]) -> dict[str, tuple[int, int]]:
    """``per_op_counts`` of a report's cases read as records."""
    out: dict[str, list[int]] = {}
    for c in cases:
        key = c.op if c.domain == "ai.onnx" else f"{c.domain}::{c.op}"
        entry = out.setdefault(key, [0, 0])
        entry[0] += c.outcome == "pass"
        entry[1] += 1
    return {k: (p, t) for k, (p, t) in sorted(out.items())}


def _op_key(node) -> str:
    domain = node.domain or "ai.onnx"
    return node.op_type if domain == "ai.onnx" else f"{domain}::{node.op_type}"


@functools.lru_cache(maxsize=1)
def collect() -> tuple[Case, ...]:
    """Every node test case of the installed onnx, named and attributed to its op."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            testcases = list(collect_testcases())
    base_op: dict[str, str] = {}
    for tc in testcases:
        if not _EXPANDED.search(tc.name) and len(tc.model.graph.node) == 1:
            base_op[tc.name] = _op_key(tc.model.graph.node[0])
    cases = []
    for tc in testcases:
        base = _EXPANDED.sub("", tc.name)
        op = base_op.get(base) or base_op.get(tc.name) or _op_key(tc.model.graph.node[0])
        domain = "" if "::" not in op else op.split("::")[0]
        opset = next((o.version for o in tc.model.opset_import
                      if o.domain in ((domain,) if domain else ("", "ai.onnx"))), 0)
        cases.append(Case(tc.name, op, opset, tc, draws=_draws(tc.model)))
    return tuple(sorted(cases, key=lambda c: c.name))


def _draws(model) -> bool:
    """Whether a node of ``model`` (or of a subgraph) draws random values
    (``opkit.spec.model.draws_random_values`` on its onnx schema: Bernoulli, the Random ops,
    Multinomial, Dropout from 12). onnx's expected outputs for those are one draw of NumPy's
    generator, seeded or not; the text leaves the generator to the runtime, so no runtime, opkit's
    kernels included, can be held to those values (an unseeded kernel matched them by chance in some
    runs: a pass count that changed from run to run). A Dropout in inference mode is compared by
    types and shapes only: the suite cannot tell its draw from none without reading its inputs."""
    import onnx

    from ..spec.model import draws_random_values

    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}

    def nodes(graph):
        for node in graph.node:
            yield node
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    yield from nodes(attr.g)
                for g in attr.graphs:
                    yield from nodes(g)

    for node in nodes(model.graph):
        domain = node.domain or "ai.onnx"
        try:
            schema = onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), "" if domain == "ai.onnx" else domain)
        except Exception:  # noqa: BLE001 - a function or unknown op: not a schema's random op
            continue
        determinism = {"NonDeterministic": "nondeterministic"}.get(getattr(schema.node_determinism, "name", ""), "")
        if draws_random_values(determinism, schema.attributes, (i.name for i in schema.inputs)):
            return True
    return False


def select(ops: list[str] | None = None) -> list[Case]:
    cases = list(collect())
    if ops:
        wanted = set(ops)
        cases = [c for c in cases if c.op in wanted or c.op.split("::")[-1] in wanted]
    return cases


def _normalize(value: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, onnx.SequenceProto):
        return [_normalize(v) for v in numpy_helper.to_list(value)]
    if isinstance(value, onnx.OptionalProto):
        return numpy_helper.to_optional(value)
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


def compare(expected: list[Any], actual: list[Any], rtol: float, atol: float, where: str = "output") -> None:
    """Raise AssertionError unless ``actual`` matches ``expected`` under onnx's backend-test rules.

    The rules of ``onnx.backend.test.runner.Runner.assert_similar_outputs``: same number of
    outputs; sequences element by element; then equal shapes, equal dtypes (strings compared
    exactly), and ``assert_allclose(rtol, atol)``, bfloat16 compared in float32 with
    ``rtol >= 2**-6`` (two bfloat16 ULPs). Unlike the runner's recursion, a sequence of 0-d
    tensors is compared correctly (onnx 1.23's runner raises TypeError on it)."""
    if len(actual) != len(expected):
        raise AssertionError(f"{where}: expected {len(expected)} values, got {len(actual)}")
    for i, (exp, out) in enumerate(zip(expected, actual)):
        name = f"{where}[{i}]"
        if isinstance(exp, (list, tuple)):
            if not isinstance(out, (list, tuple)):
                raise AssertionError(f"{name}: expected a sequence, got {type(out).__name__}")
            compare(list(exp), list(out), rtol, atol, name)
            continue
        if exp is None or out is None:
            if exp is not out:
                raise AssertionError(f"{name}: expected {'no value' if exp is None else 'a value'}, "
                                     f"got {'none' if out is None else type(out).__name__}")
            continue
        if not isinstance(out, np.ndarray):
            raise AssertionError(f"{name}: expected an array, got {type(out).__name__}")
        if out.shape != exp.shape:
            raise AssertionError(f"{name} has incorrect shape: expected {exp.shape}, got {out.shape}")
        if exp.dtype == object:
            np.testing.assert_array_equal(out, exp, err_msg=name)
            continue
        if out.dtype != exp.dtype:
            raise AssertionError(f"{name} has dtype {out.dtype}, expected {exp.dtype}")
        r = rtol
        if out.dtype.name == "bfloat16":
            r = max(rtol, 2 ** -6)
            out, exp = out.astype(np.float32), exp.astype(np.float32)
        np.testing.assert_allclose(out, exp, rtol=r, atol=atol, err_msg=name)


def run_case(backend: Any, case: Case) -> CaseResult:
    result = _run_case(backend, case)
    result.opset = case.opset
    return result


def _run_case(backend: Any, case: Case) -> CaseResult:
    tc = case.testcase
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                rep = backend.prepare(tc.model, "CPU")
                for inputs, outputs in tc.data_sets:
                    got = [_normalize(x) for x in rep.run([_normalize(x) for x in inputs])]
                    expected = [_normalize(x) for x in outputs]
                    if case.draws:
                        expected, got = structure(expected), structure(got)
                    compare(expected, got, tc.rtol, tc.atol)
    except NotImplementedError as exc:
        return CaseResult(case.name, case.op, "unsupported", _first_line(exc), time.perf_counter() - start)
    except AssertionError as exc:
        return CaseResult(case.name, case.op, "fail", _first_line(exc), time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a kernel crash is a result, not a suite crash
        return CaseResult(case.name, case.op, "error", f"{type(exc).__name__}: {_first_line(exc)}",
                          time.perf_counter() - start)
    return CaseResult(case.name, case.op, "pass", "", time.perf_counter() - start)


def _quiet_onnxruntime() -> None:
    """onnxruntime logs a warning per model it cannot optimise fully (hundreds of lines over the node
    cases) on stderr: the suite's results carry every failure already."""
    if "onnxruntime" in sys.modules:
        try:
            sys.modules["onnxruntime"].set_default_logger_severity(4)  # fatal only
        except Exception:  # noqa: BLE001 - an old or stub onnxruntime: keep its logging
            pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else type(exc).__name__
    if len(lines) > 1 and line.startswith(("\nNot equal", "Not equal", "Arrays are not")):
        line += " " + lines[1].strip()
    return line[:300]


def run(backend: Any, ops: list[str] | None = None, report_path: str | None = None,
        progress: bool = True) -> SuiteResult:
    """Run the (selected) node cases through ``backend`` (a Backend class or a short name)."""
    name = backend if isinstance(backend, str) else (getattr(backend, "name", None)
                                                     or getattr(backend, "__name__", type(backend).__name__))
    if isinstance(backend, str):
        from ..backends.registry import backend_api_class

        backend = backend_api_class(backend)
    _quiet_onnxruntime()
    cases = select(ops)
    result = SuiteResult(name)
    start = time.perf_counter()
    current = None
    for case in cases:
        r = run_case(backend, case)
        result.cases.append(r)
        if progress and case.op != current:
            current = case.op
    result.seconds = time.perf_counter() - start
    if progress:
        for op, (p, t) in result.per_op().items():
            mark = "ok  " if p == t else "FAIL"
            print(f"  {mark} {op:<32} {p:>3}/{t}", file=sys.stderr)
        print(f"{SUITE}: {result.passed}/{len(result.cases)} cases passed, "
              f"{sum(p == t for p, t in result.per_op().values())}/{len(result.per_op())} ops fully "
              f"({result.seconds:.1f} s)", file=sys.stderr)
    if report_path:
        from ..results.report import write_report

        write_report(result.to_json(ops), report_path)
    return result
