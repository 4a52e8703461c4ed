"""The full conformance sweep: every op with a reference kernel x every allowed type x N examples.

Target (Conformance issue): against onnxruntime, ``--max-examples 20 -j 2`` in at most 10 minutes
on this machine. Runs ``opkit test`` exactly as a user would (a subprocess, repro bundles on),
then reads its JSON report for the per-op cost and the outcome counts.

Usage: python benchmarks/bench_sweep.py [--backend onnxruntime] [--max-examples 20] [-j 2]
                                        [--report sweep.json] [--top 15] [-- extra opkit test args]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--report", help="keep the sweep's JSON report here")
    parser.add_argument("--top", type=int, default=15, help="most expensive ops to list")
    parser.add_argument("extra", nargs="*", help="more opkit test arguments (after --)")
    args = parser.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="opkit-sweep-")
    report_path = args.report or os.path.join(tmp, "report.json")
    cmd = [sys.executable, "-m", "opkit.cli", "test", "--backend", args.backend, "--max-examples",
           str(args.max_examples), "-j", str(args.jobs), "-q", "--repro-dir", os.path.join(tmp, "repro"),
           "--report", report_path, *args.extra]
    print("$ " + " ".join(cmd[2:]), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode not in (0, 1):
        print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    report = json.load(open(report_path))
    cases = report["cases"]
    per_op: dict = collections.defaultdict(lambda: [0.0, 0])
    for c in cases:
        per_op[f"{c['domain']}::{c['op']}"][0] += c.get("duration_s", 0.0)
        per_op[f"{c['domain']}::{c['op']}"][1] += 1
    summary = report["summary"]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"backend: {report['target']['backends']}")
    print(f"wall {wall / 60:.1f} min ({wall:.0f} s; target <= 600 s with -j 2 and 20 examples), "
          f"ops {len(per_op)}, cases {summary['total']}, backend calls {summary['examples_run']}, "
          f"skipped {len(report.get('skipped', []))}, peak RSS of one process {peak_mb:.0f} MB")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in summary["outcomes"].items()))
    print(f"most expensive ops (sum of case durations; {sum(v[0] for v in per_op.values()):.0f} s in all):")
    for op, (secs, n) in sorted(per_op.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {op:40s} {secs:7.1f} s  {n:4d} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
