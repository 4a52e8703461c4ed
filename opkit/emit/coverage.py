"""Emitter ``coverage``: ``generated/docs/coverage.md``, which op versions have a reference kernel
and how the reference backend does on onnx's node tests.

Inputs: the specs (kernel per version) and the committed suite report
``conformance/onnx-node-results.json`` (an input, so not under generated/: ``opkit gen`` cannot
rebuild it; ``opkit test --backend reference --suite onnx-node --report
conformance/onnx-node-results.json`` does). Machine paths in its messages are made portable.
No timestamps, sorted everywhere: the page changes only when specs or results do.
"""

from __future__ import annotations

import os

from ..core.jsonfiles import invalid, read_report
from ..spec.model import OpSpec
from . import GenContext, header

NAME = "coverage"
OWNED_DIRS = ()  # shares generated/docs with the docs emitters; writes one file
RESULTS = "conformance/onnx-node-results.json"
REBUILD = "opkit test --backend reference --suite onnx-node --report {path}"
OUTPUT = "generated/docs/coverage.md"


def _results(root: str) -> dict:
    """The committed onnx-node results ({} when there are none); a broken file is a one-line
    ``JSONFileError`` naming it."""
    path = os.path.join(root, RESULTS)
    if not os.path.exists(path):
        return {}
    data = read_report(path, rebuild=REBUILD)
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list) or any(not isinstance(c, dict) or c.get("suite") != "onnx-node" for c in cases):
        raise invalid(path, "not an onnx-node suite report (expected a conformance report of suite 'onnx-node')",
                      rebuild=REBUILD)
    from ..results.record import RecordError, records

    try:
        records(cases, path)
    except RecordError as exc:
        raise invalid(path, str(exc), rebuild=REBUILD) from None
    return data


def _op_key(spec: OpSpec) -> str:
    return spec.name if spec.domain == "ai.onnx" else f"{spec.domain}::{spec.name}"


def _versions_cell(spec: OpSpec) -> str:
    parts = []
    for v in spec.versions:
        if v.kernel is None:
            parts.append(f"{v.since}")
        elif v.kernel.same_as is not None:
            parts.append(f"**{v.since}**")
        else:
            parts.append(f"**{v.since}**")
    return ", ".join(parts)


def _kind(spec: OpSpec) -> str:
    kinds = set()
    for v in spec.versions:
        k = v.kernel
        if k is None or k.same_as is not None:
            continue
        kinds.add(f"template `{k.template}`" if k.template else "python")
    return ", ".join(sorted(kinds)) or "-"


def render(specs: list[OpSpec], results: dict) -> str:
    from ..results.record import records
    from ..suites.onnx_node import case_counts

    cases = records(results.get("cases", []), RESULTS)
    ops = {k: {"passed": p, "total": t} for k, (p, t) in case_counts(cases).items()}
    passed = sum(p["passed"] for p in ops.values())
    total = sum(p["total"] for p in ops.values())
    onnx_version = (results.get("target") or {}).get("onnx", "?")
    lines = [
        header(f"specs/ and {RESULTS}", comment="<!--") + " -->",
        "",
        "# Reference kernel coverage",
        "",
        "Which operator versions have a generated reference kernel (versions in **bold**), and how",
        "opkit's `reference` backend does on onnx's node tests "
        + (f"(onnx {onnx_version}, {passed}/{total} cases pass)." if results else "(no results file yet)."),
        "Node tests without a kernel still run when the op has an ONNX function body, which the",
        "backend expands (`via function`). Regenerate the results with",
        f"`opkit test --suite onnx-node --report {RESULTS}`, then `opkit gen`.",
        "",
    ]
    by_domain: dict[str, list[OpSpec]] = {}
    for spec in specs:
        by_domain.setdefault(spec.domain, []).append(spec)
    summary = []
    body = []
    for domain in sorted(by_domain):
        domain_specs = sorted(by_domain[domain], key=lambda s: s.name)
        with_kernel = [s for s in domain_specs if any(v.kernel for v in s.versions)]
        tested = [s for s in domain_specs if _op_key(s) in ops]
        full = [s for s in tested if ops[_op_key(s)]["passed"] == ops[_op_key(s)]["total"]]
        full_k = [s for s in full if any(v.kernel for v in s.versions)]
        summary.append(f"| {domain} | {len(domain_specs)} | {len(with_kernel)} | "
                       f"{sum(1 for s in domain_specs for v in s.versions if v.kernel)}"
                       f"/{sum(len(s.versions) for s in domain_specs)} | {len(tested)} | {len(full)} | "
                       f"{len(full_k)} |")
        body += ["", f"## {domain}", "", "| Op | Versions (kernel in bold) | Kernel | Node tests | Status |",
                 "|---|---|---|---|---|"]
        for spec in domain_specs:
            key = _op_key(spec)
            has_kernel = any(v.kernel for v in spec.versions)
            if key in ops:
                p, t = ops[key]["passed"], ops[key]["total"]
                tests = f"{p}/{t}"
                if p == t:
                    status = "pass" if has_kernel else "pass (via function)"
                else:
                    status = "partial" if p else "fail"
            else:
                tests, status = "-", "no node tests" if has_kernel else "-"
            body.append(f"| {spec.name} | {_versions_cell(spec)} | {_kind(spec)} | {tests} | {status} |")
    lines += ["| Domain | Ops | Ops with a kernel | Versions with a kernel | Ops with node tests "
              "| All node tests pass | ... with a kernel |", "|---|---|---|---|---|---|---|"]
    lines += summary
    lines += body
    failing = sorted((c.example, c) for c in cases if c.outcome != "pass")
    if failing:
        lines += ["", "## Node tests not passing", "", "| Case | Op | Outcome | Message |", "|---|---|---|---|"]
        for name, case in failing:
            msg = case.message.replace("|", "\\|").replace("\n", " ")
            op = case.op if case.domain == "ai.onnx" else f"{case.domain}::{case.op}"
            lines.append(f"| {name} | {op} | {case.outcome} | {msg} |")
    return "\n".join(lines) + "\n"


def emit(ctx: GenContext) -> dict[str, str]:
    return {OUTPUT: render(list(ctx.specs), _results(ctx.root))}
