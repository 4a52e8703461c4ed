"""Spec loading and `opkit validate` speed (Foundation issue targets: load <= 1 s, validate <= 2 s).

Run on demand: python benchmarks/bench_specs.py [--runs N]
Peers in the same run: plain yaml.load of the same files with libyaml's CSafeLoader (no model, no
checks: the floor for any YAML-based loader) and with the pure-Python SafeLoader.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from opkit.spec.load import load_specs, spec_files  # noqa: E402


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def summary(name: str, times: list[float]) -> str:
    return f"{name:<42} min {min(times):7.3f} s   median {statistics.median(times):7.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    specs_dir = os.path.join(ROOT, "specs")
    files = spec_files([specs_dir])
    size = sum(os.path.getsize(f) for f in files)
    specs, diags = load_specs([specs_dir])
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"libyaml {yaml.__with_libyaml__}")
    print(f"tree: {len(files)} files, {size / 1e6:.1f} MB, {len(specs)} ops, "
          f"{sum(len(s.versions) for s in specs)} versions, {len(diags)} diagnostics")

    def raw(loader):
        def run():
            for f in files:
                with open(f, "rb") as fh:
                    yaml.load(fh, Loader=loader)
        return run

    ours = timed(lambda: load_specs([specs_dir]), args.runs)
    peer_c = timed(raw(yaml.CSafeLoader), args.runs)
    peer_py = timed(raw(yaml.SafeLoader), max(1, args.runs // 2))
    cli = timed(lambda: subprocess.run([sys.executable, "-m", "opkit.cli", "validate", "-q"], cwd=ROOT,
                                       check=True), args.runs)
    print(summary("opkit load_specs (model + all checks)", ours))
    print(summary("peer: yaml.load CSafeLoader (no checks)", peer_c))
    print(summary("peer: yaml.load SafeLoader (pure Python)", peer_py))
    print(summary("`opkit validate` whole tree (process)", cli))
    print(f"ratio load_specs / CSafeLoader yaml.load: {min(ours) / min(peer_c):.2f}")
    print(f"targets: load <= 1 s: {'met' if min(ours) <= 1 else 'MISSED'}; "
          f"validate <= 2 s: {'met' if min(cli) <= 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
