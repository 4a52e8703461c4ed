"""Conformance throughput: cases/s against onnxruntime in one process, and the peer.

opkit: `opkit test`'s differential runner on Trilu-14 (hypothesis draws, the reference kernel, the
onnxruntime worker process with one cached session per model signature, comparison), counting
every case the backend ran. Also the same with the backend in process (no crash isolation).

Peer: onnx's own conformance runner, ``onnx.backend.test.BackendTest`` driving
``onnxruntime.backend`` over the node suite (one model per test, a fresh session each), counting
tests run per second, in the same run.

Usage: python benchmarks/bench_conformance.py [--max-examples N] [--skip-peer]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import unittest


def bench_opkit(max_examples: int, isolate: bool, types) -> dict:
    from opkit.backends.registry import resolve
    from opkit.conformance import harness
    from opkit.conformance.backend_runner import BackendRunner
    from opkit.conformance.runner import Runner
    from opkit.conformance.worker_engine import InProcess
    from opkit.conformance.worker import Worker

    spec = harness.load_op("ai.onnx", "Trilu")
    worker = (Worker if isolate else InProcess)(resolve("onnxruntime"), timeout=30)
    with worker:
        backend = BackendRunner(worker)  # starts the worker (not timed)
        runner = Runner(backend, max_examples=max_examples, seed=0)
        start = time.perf_counter()
        runner.run_differential(spec, spec.version(14), [{"T": t} for t in types])
        elapsed = time.perf_counter() - start
    outcomes = sorted({r.outcome for r in runner.results})
    return {"runner": "opkit" + ("" if isolate else " (in process)"), "cases": backend.executed,
            "seconds": round(elapsed, 3), "cases_per_s": round(backend.executed / elapsed, 1),
            "outcomes": outcomes}


def bench_peer() -> dict:
    import onnx.backend.test
    import onnxruntime.backend

    bt = onnx.backend.test.BackendTest(onnxruntime.backend, "bench_peer")
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for name, case in bt.test_cases.items():
        if "Node" in name:
            suite.addTests(loader.loadTestsFromTestCase(case))
    runner = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0)
    start = time.perf_counter()
    result = runner.run(suite)
    elapsed = time.perf_counter() - start
    executed = result.testsRun - len(result.skipped)  # the _cuda twins are skipped on a CPU build
    return {"runner": "onnx BackendTest + onnxruntime.backend (node suite)", "cases": executed,
            "seconds": round(elapsed, 3), "cases_per_s": round(executed / elapsed, 1),
            "tests_collected": result.testsRun, "skipped": len(result.skipped),
            "failures": len(result.failures), "errors": len(result.errors)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=200)
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    types = ["tensor(float)", "tensor(int64)", "tensor(double)", "tensor(bool)"]
    rows = [bench_opkit(args.max_examples, True, types), bench_opkit(args.max_examples, False, types)]
    if not args.skip_peer:
        rows.append(bench_peer())
    print(f"machine: {os.cpu_count()} cpus, python {sys.version.split()[0]}")
    for row in rows:
        extra = {k: v for k, v in row.items() if k not in ("runner", "cases", "seconds", "cases_per_s")}
        print(f"{row['runner']:<55} {row['cases']:>7} cases {row['seconds']:>8.2f} s "
              f"{row['cases_per_s']:>9.1f} cases/s  {extra}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
