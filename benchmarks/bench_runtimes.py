"""Conformance throughput per runtime backend on the Trilu sweep, and where the time goes.

    python benchmarks/bench_runtimes.py [--backend NAME ...] [--max-examples N] [--op OP] [--json FILE]

For each backend whose engine is installed (default: onnxruntime, openvino, tract, iree, torch,
jax) it runs the examples, properties and differential suites for one op (default ai.onnx::Trilu)
in this process (no worker isolation, so the split can be measured) and prints:

- cases/s: report records (one per example, per property x binding, per differential binding);
- runs/s: model executions (every drawn input and its siblings);
- the share of backend time spent preparing/compiling (``prepare`` plus the per-rank compiles of
  rank-specialized sessions) vs running, and the rest (reference kernel, hypothesis, comparison).

IREE's on-disk module cache is pointed at a fresh temporary folder so that the numbers include
compilation (``--warm-cache`` keeps the user's cache).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

DEFAULT = ["onnxruntime", "openvino", "tract", "iree", "torch", "jax"]


class _TimedSession:
    def __init__(self, inner, totals):
        self._inner, self._t = inner, totals

    def run(self, feeds):
        t0 = time.perf_counter()
        try:
            return self._inner.run(feeds)
        finally:
            self._t["run_s"] += time.perf_counter() - t0


class _TimedBackend:
    """Proxy around a backend: times prepare and every session run."""

    def __init__(self, inner, totals):
        self._inner, self._t = inner, totals

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def prepare(self, model_bytes):
        t0 = time.perf_counter()
        try:
            session = self._inner.prepare(model_bytes)
        finally:
            self._t["prepare_s"] += time.perf_counter() - t0
            self._t["prepares"] += 1
        return _TimedSession(session, self._t)


def bench(name: str, op: str, max_examples: int, seed: int = 0) -> dict:
    from opkit.backends import _runtime_common as common
    from opkit.backends.registry import BackendUnavailable, resolve
    from opkit.run.resolve import _select_specs
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess

    spec_b = resolve(name)
    worker = InProcess(spec_b)
    try:
        info = worker.describe()
    except (ImportError, BackendUnavailable) as exc:
        return {"backend": name, "skipped": str(exc).splitlines()[0]}
    totals = {"prepare_s": 0.0, "run_s": 0.0, "prepares": 0}
    worker._engine.backend = _TimedBackend(worker._engine.backend, totals)
    common.STATS["compiles"], common.STATS["compile_s"] = 0, 0.0
    runner = Runner(BackendRunner(worker, info), max_examples=max_examples, seed=seed)
    specs = _select_specs(os.path.join(ROOT, "specs"), [op])
    t0 = time.perf_counter()
    for spec in specs:
        runner.run_spec(spec, ["examples", "properties", "differential"])
    wall = time.perf_counter() - t0
    worker.close()
    compile_s = common.STATS["compile_s"]
    run_only = max(totals["run_s"] - compile_s, 0.0)
    prep = totals["prepare_s"] + compile_s
    outcomes: dict[str, int] = {}
    for r in runner.results:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    return {"backend": name, "version": info.get("version"), "cases": len(runner.results),
            "runs": runner.backend.executed, "wall_s": round(wall, 2),
            "cases_per_s": round(len(runner.results) / wall, 2), "runs_per_s": round(runner.backend.executed / wall, 1),
            "prepare_s": round(totals["prepare_s"], 2), "prepares": totals["prepares"],
            "compile_s": round(compile_s, 2), "compiles": common.STATS["compiles"], "run_s": round(run_only, 2),
            "prepare_share": round(prep / wall, 3), "run_share": round(run_only / wall, 3),
            "other_share": round(max(wall - prep - run_only, 0.0) / wall, 3), "outcomes": outcomes}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", action="append", help=f"backend (repeatable; default {' '.join(DEFAULT)})")
    parser.add_argument("--op", default="ai.onnx::Trilu")
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--warm-cache", action="store_true", help="keep IREE's on-disk module cache")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if not args.warm_cache:
        os.environ["OPKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="opkit-bench-cache-")
    rows = []
    for name in args.backend or DEFAULT:
        row = bench(name, args.op, args.max_examples)
        rows.append(row)
        if "skipped" in row:
            print(f"{name:<12} skipped: {row['skipped']}", flush=True)
            continue
        print(f"{name:<12} {row['version']:<12} {row['cases']:>4} cases {row['runs']:>6} runs in {row['wall_s']:>7.1f} s: "
              f"{row['cases_per_s']:>6.2f} cases/s {row['runs_per_s']:>7.1f} runs/s | prepare+compile "
              f"{100 * row['prepare_share']:4.1f}% ({row['prepares']} prepares, {row['compiles']} rank compiles) "
              f"run {100 * row['run_share']:4.1f}% other {100 * row['other_share']:4.1f}%", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"op": args.op, "max_examples": args.max_examples, "results": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
