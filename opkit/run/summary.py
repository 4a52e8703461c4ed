"""What a run reports: the JSON report built from the records collected so far (also for an
interrupted run and the watchdog), the warnings about ops that had no case, the exit code and
the terminal summary. ``run`` is the session (``session._Run``)."""

from __future__ import annotations

import sys
import time

from ..core.exit_codes import ExitCode
from ..results.record import CaseRecord


def _listed(values):
    """A repeatable option as the report has always held it: a list, or None when not given."""
    return list(values) if values is not None else None


def backend_infos(run) -> list[dict]:
    """describe() of every backend that started (a -j pool's from what it streamed)."""
    infos = []
    for position, spec_b in enumerate(getattr(run, "backend_specs", [])):
        info = run.infos.get(position)
        if info is None and position in run.streams:
            info = run.streams[position].info() or {"name": spec_b.name, "version": "unknown"}
        if info is None and run.cluster is not None:
            info = run.cluster.infos.get(position)
        if info is None:
            continue  # interrupted before this backend started
        infos.append({k: v for k, v in info.items() if k not in ("max_ir_version", "needs_output_shapes")}
                     | {"max_ir_version": info.get("max_ir_version")})
    return infos


def build_run_report(run, interrupted: bool) -> tuple[dict, list[CaseRecord], list[dict], list[str]]:
    """The report of what the run did so far; with the records, skipped items and warnings in it."""
    from ..results.attribute_coverage import split_coverage
    from ..results.report import build_report, environment

    records, skipped = run.collect()
    skipped, coverage = split_coverage(skipped)
    warnings = list(run.warnings)
    if not interrupted:
        warnings += _unmatched(run, records, skipped)
        warnings += _empty_ops(run, records, skipped)
    if run.cluster is not None:
        warnings += run.cluster.warnings()
    failed_repros = [r for r in records if r.repro_error]
    if failed_repros:
        warnings.append(f"{len(failed_repros)} repro bundle(s) could not be written under {run.repro_dir}: "
                        f"{failed_repros[0].repro_error}")
    config = run.config
    target = environment(backend_infos(run), config.seed)
    target["code_scope"] = list(run.code_scope)  # the adapters the report's code covers
    settings = {"suites": run.suites, "ops": _listed(config.op), "max_examples": config.max_examples,
                "timeout_s": config.timeout, "expectations": [f for _, files in run.expectations for f in files]}
    if run.cluster is not None:
        settings["cluster"] = run.cluster.summary().as_dict()
    if interrupted:
        settings["interrupted"] = True  # the report holds the cases that finished before Ctrl-C/SIGTERM
        if run.signame:
            settings["interrupted_by"] = run.signame
    report = build_report(records, target, settings, time.perf_counter() - run.start, skipped,
                          warnings=warnings, require_cases=True, coverage=coverage)
    return report, records, skipped, warnings


def _unmatched(run, records, skipped) -> list[str]:
    from ..spec import catalog
    from ..results.outcomes import unmatched_expectations

    known = {(e.domain, e.op) for e in catalog.entries()}
    ops = {(s.domain, s.name): s for s in run.specs}
    out = []
    for position, spec_b in enumerate(run.backend_specs):
        expectations, _ = run.expectations[position]
        if not expectations.entries:
            continue
        name = (run.infos.get(position) or {}).get("name", spec_b.name)
        mine = [r for r in records if r.backend == name]
        suites = run.suites if position == 0 else [x for x in run.suites if x != "lowerings"]
        out += [f"expectation {w}" for w in unmatched_expectations(expectations, mine, skipped, ops, suites, known)]
    return out


def _empty_ops(run, records, skipped) -> list[str]:
    """Why ops had no case: for every op when none ran, else for the ops --op named."""
    ran = {(r.domain, r.op) for r in records}
    if records and not run.config.op:
        return []
    out = []
    for spec in run.specs:
        if (spec.domain, spec.name) in ran:
            continue
        name = spec.name if spec.domain == "ai.onnx" else f"{spec.domain}::{spec.name}"
        out.append(f"{name}: no case ran ({_why_no_cases(spec, run.suites, skipped)})")
    return out


def exit_code(run, records, interrupted: bool) -> int:
    from ..results.outcomes import run_ok

    if interrupted:
        return ExitCode.INTERRUPTED
    if run.cluster is not None and run.cluster.failed:  # ops that did not run: not a passing run
        return ExitCode.PROBLEMS
    return ExitCode.OK if run_ok(r.outcome for r in records) else ExitCode.PROBLEMS


def print_summary(run, report: dict, records: list[CaseRecord], skipped: list[dict], warnings: list[str],
                  interrupted: bool, write_error: str | None) -> None:
    """The terminal summary of a finished run: the table, the causes of failures, what could not
    be tested or was not run, one line of totals, the warnings and why the run did not pass."""
    from ..results.outcomes import UNTESTED
    from ..results.causes import causes, causes_text
    from ..results.report_text import failures_text, skipped_text, summary_table, untested_text

    config = run.config
    run.progress.done()
    if not config.quiet:
        print(summary_table(records))
    found = causes(records)
    if found:
        failing = sum(c.cases for c in found)
        print(f"{failing} failing case{'s' if failing != 1 else ''} from {len(found)} cause"
              f"{'s' if len(found) != 1 else ''} (one line each, with the smallest failing case):")
        print(causes_text(found))
    xpassed = failures_text([c for c in records if c.outcome == "xpass"])
    if xpassed:
        print(xpassed)
    untested = untested_text(records)
    if untested:
        print("\nopkit could not test these (not charged to the backend):\n" + untested)
    if skipped:  # what the backend cannot be asked (an opset newer than it, ...): apart from the cases
        print("\nnot run (not charged to the backend):\n" + skipped_text(skipped))
    review = report["summary"].get("second_opinion", {}).get("review")
    if review:
        print(f"\n{review} finding(s) marked REVIEW: a second opinion computes what the runtime did, or fails "
              "too; check opkit's expectation before reporting them", file=sys.stderr)
    s = report["summary"]
    print(f"opkit test: {s['total']} cases ({s['examples_run']} examples) in {s['duration_s']:.1f} s: "
          + ", ".join(f"{n} {o}" for o, n in s["outcomes"].items())
          + (f"; {len(skipped)} skipped (not run, not charged to the backend: see above and the report)"
             if skipped else "")
          + (f"; report: {config.report}" if config.report and not write_error else ""), file=sys.stderr)
    if run.cluster is not None and not config.quiet:
        print(f"opkit test: {run.cluster.workers_text()}", file=sys.stderr)
    if write_error:
        print(f"opkit test: error: {write_error}", file=sys.stderr)
    for w in warnings:
        print(f"opkit test: warning: {w}", file=sys.stderr)
    if interrupted:
        print(f"opkit test: interrupted ({run.signame or 'stop requested'}); the report holds the "
              f"{s['total']} case(s) that finished", file=sys.stderr)
    elif not records:
        print("opkit test: no case ran, so nothing was tested (see the warnings above): exit 1",
              file=sys.stderr)
    elif all(r.outcome == UNTESTED for r in records):
        print("opkit test: opkit could not test any case (outcome 'untested'; nothing is charged to the "
              "backend): exit 1", file=sys.stderr)


def _why_no_cases(spec, suites, skipped) -> str:
    """What the chosen suites need that an op lacks."""
    from ..conformance.harness import oracle

    live = [v for v in spec.versions if not v.deprecated]
    if not live:
        return "every version of the op is deprecated; runtimes need not run it"
    with_kernel = [v for v in live if oracle(spec.domain, spec.name, v.since) is not None]
    reasons = []
    if "examples" in suites and not any(v.examples for v in live):
        reasons.append("no examples")
    needs_kernel = [x for x in suites if x in ("properties", "differential", "robustness", "lowerings")]
    if needs_kernel and not with_kernel:
        reasons.append(f"no reference kernel ({', '.join(needs_kernel)} need one)")
    elif needs_kernel:
        if "properties" in suites and not any(v.properties for v in with_kernel):
            reasons.append("no properties")
        if "differential" in suites and all(v.draws for v in with_kernel):
            reasons.append("random outputs (no differential test)")
        if "lowerings" in suites and not any(v.lowerings for v in with_kernel):
            reasons.append("no lowerings")
    n = sum(1 for s in skipped if s.get("op") == spec.name and s.get("domain") == spec.domain)
    if n:
        reasons.append(f"{n} type binding(s) or version(s) skipped: see the report's 'skipped' list")
    return "; ".join(reasons) or f"nothing for the suites {', '.join(suites)}"
