"""What share of generated cases are valid, per op version with a reference kernel.

Target (Valid inputs issue): at least 90 % of the cases ``opkit.cases`` draws pass the final check
(ONNX inference and the reference kernel's validation) for every op version with a kernel.

Usage: python benchmarks/case_validity.py [--per-binding 20] [--bindings 4] [--op Conv ...]
       [--worst 20] [--json out.json] [-j 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import platform
import sys
import time


def _versions(ops):
    from opkit.spec import catalog
    from opkit.conformance import harness

    out = []
    for entry in catalog.entries():
        if ops and entry.op not in ops and f"{entry.domain}::{entry.op}" not in ops:
            continue
        spec = harness.load_op(entry.domain, entry.op)
        for v in spec.versions:
            if v.kernel is not None and not v.deprecated and v.determinism != "nondeterministic":
                out.append((entry.domain, entry.op, v.since))
    return out


def _limit_memory():
    import resource

    # a draw that asks a kernel for an absurd output fails with MemoryError instead of the OOM killer
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def _measure(job):
    domain, op, since, per_binding, max_bindings = job
    from opkit.cases.generator import generatable
    from opkit.conformance.validity import Validity, measure, spread
    from opkit.conformance import harness
    from opkit.cases.bindings import covering_bindings

    spec = harness.load_op(domain, op)
    version = spec.version(since)
    why = generatable(spec, version)
    if why is not None:
        return Validity(domain, op, since, 0, 0, error=f"not generatable: {why}")
    from opkit.cases.ranks import rank_plan

    # as `opkit test` does: a binding ONNX inference rejects at every rank is not an input the op
    # takes (BitCast between widths); the run skips it, so it is not measured either
    bindings = [b for b in covering_bindings(version)
                if version.family or rank_plan(op, domain, version, tuple(sorted(b.items()))) != ()]
    if not bindings:
        return Validity(domain, op, since, 0, 0, error="every type binding is rejected by ONNX inference (skipped)")
    return measure(spec, version, spread(bindings, max_bindings), per_binding)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-binding", type=int, default=20, help="cases drawn per type binding")
    parser.add_argument("--bindings", type=int, default=4, help="type bindings per op version (evenly spread)")
    parser.add_argument("--op", action="append", default=[], help="only these ops (repeatable)")
    parser.add_argument("--worst", type=int, default=20)
    parser.add_argument("--json", help="write every op version's numbers here")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    from opkit.conformance.validity import Validity

    jobs = [(*v, args.per_binding, args.bindings) for v in _versions(set(args.op))]
    start = time.perf_counter()
    results, pending = [], list(jobs)
    while pending:  # a worker that dies (a kernel crash) breaks the pool: record its job, go on
        with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                    initializer=_limit_memory) as pool:
            futures = {pool.submit(_measure, job): job for job in pending}
            pending = []
            for future in concurrent.futures.as_completed(futures):
                job = futures[future]
                try:
                    results.append(future.result())
                except concurrent.futures.process.BrokenProcessPool:
                    pending.append(job)
                except Exception as exc:  # noqa: BLE001
                    results.append(Validity(*job[:3], 0, 0, error=f"{type(exc).__name__}: {exc}"))
                print(f"\r{len(results)}/{len(jobs)} op versions", end="", file=sys.stderr, flush=True)
        if pending and len(pending) == len(futures):  # nothing finished: blame the first, retry the rest
            results.append(Validity(*pending.pop(0)[:3], 0, 0, error="the measuring process died"))
    print(file=sys.stderr)
    wall = time.perf_counter() - start
    results.sort(key=lambda r: (r.rate if not r.error or r.drawn else -1.0, r.domain, r.op, r.since))
    drawn = sum(r.drawn for r in results)
    valid = sum(r.valid for r in results)
    below = [r for r in results if r.rate < 0.9]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"{len(results)} op versions, {drawn} cases drawn, {valid} valid ({valid / max(drawn, 1):.1%}), "
          f"{len(below)} op versions below 90 %, {wall:.0f} s")
    print(f"\nworst {args.worst}:\n")
    print("| op version | valid / drawn | rate | first rejection |")
    print("| --- | --- | --- | --- |")
    for r in results[: args.worst]:
        why = (r.error or r.why).replace("|", "\\|").replace("\n", " ")[:160]
        print(f"| {r.domain}::{r.op}-{r.since} | {r.valid} / {r.drawn} | {r.rate:.0%} | {why} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([dict(r.__dict__, rate=r.rate) for r in results], fh, indent=1)
    return 0 if not below else 1


if __name__ == "__main__":
    sys.exit(main())
