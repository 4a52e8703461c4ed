"""opkit test on a local Dask cluster against ``-j`` with the same number of processes.

Scale-out issue (#15): for N in ``--workers`` (default 1, 2 and 4) the same sweep runs twice, as a
user would (``python -m opkit.cli test`` subprocesses, repro bundles off):

- ``-j N`` (N = 1: a plain run): N pool processes, each with its backend worker process;
- ``--scheduler``: a ``dask scheduler`` and N ``dask worker --nthreads 1`` (each a nanny and its
  worker process, the worker with its backend worker process), started before the timed run (a
  user's cluster is already up; its start-up is printed apart).

For each N it prints both wall times, the ratio cluster / ``-j`` (below 1: the cluster is faster),
and whether both reports hold the same cases with the same outcomes (every field but the case
durations). ``--kill`` adds runs on 2 workers where, once some cases finished, a worker that is in
the middle of a task is killed with SIGKILL: its nanny restarts it (``--kill worker``) or, with the
nanny killed first, it is gone for good (``--kill node``); every case must still be there, as the
``-j 2`` run gave them.

Usage: python benchmarks/bench_cluster.py [--workers 1,2,4] [--backend onnxruntime]
                                          [--max-examples 10] [--op OP ...] [--kill worker|node ...]
                                          [--fresh-cache] [-- extra opkit test arguments]

The IREE sample in docs/benchmarks.md: ``--workers 2 --backend iree --max-examples 5 --fresh-cache
--op ... -- --shrink-budget 5`` (the all-ops sweep's settings, every run with an empty compile cache).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

# 8 ops of different sizes: elementwise ones with a few versions, Pad and Cast with many bindings
DEFAULT_OPS = ("Relu", "Abs", "Neg", "Sign", "Softsign", "ai.onnx::Trilu", "Pad", "Cast")


def _env(cache: str | None) -> dict:
    """The environment of a run and of its Dask processes: its own empty compile cache with
    --fresh-cache (IREE keeps compiled modules in $OPKIT_CACHE_DIR), so no run warms the next."""
    env = dict(os.environ)
    if cache:
        os.makedirs(cache, exist_ok=True)
        env["OPKIT_CACHE_DIR"] = cache
    return env


def _opkit(args: list[str], report: str, cache: str | None = None) -> tuple[float, int, str]:
    cmd = [sys.executable, "-m", "opkit.cli", "test", *args, "-q", "--no-repro", "--report", report]
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(cache))
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"opkit test failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return wall, proc.returncode, proc.stderr


def _comparable(path: str) -> list[dict]:
    report = json.load(open(path))
    return [{k: v for k, v in case.items() if k != "duration_s"} for case in report["cases"]]


class LocalDask:
    """A ``dask scheduler`` and N ``dask worker`` on this machine, as a user starts them."""

    def __init__(self, workers: int, folder: str, cache: str | None = None):
        self.file = os.path.join(folder, f"scheduler-{workers}.json")
        self.procs = []
        self.workers = workers
        start = time.perf_counter()
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", self.file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=_env(cache)))
        while not os.path.exists(self.file):
            time.sleep(0.1)
        for _ in range(workers):  # one `dask worker` (a nanny and its worker process) per "node"
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", "--scheduler-file", self.file, "--nthreads", "1",
                 "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                env=_env(cache)))
        from distributed import Client

        self.client = Client(scheduler_file=self.file)
        self.client.wait_for_workers(workers, timeout=180)
        self.startup = time.perf_counter() - start
        self.address = self.client.scheduler.address

    def streamed(self) -> list[dict]:
        return [msg for topic, events in self.client.get_events().items() if topic.startswith("opkit-")
                for _, msg in events]

    def victim(self, after: int, timeout: float = 300) -> str | None:
        """A worker that sent cases of a task it is still processing, once ``after`` cases came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = self.streamed()
            if len(seen) >= after:
                started = {(m["worker"], m["task"]) for m in seen}
                for worker, keys in self.client.processing().items():
                    if any((worker, int(k.split("-")[3])) in started for k in keys if k.startswith("opkit-")):
                        return worker
            time.sleep(0.05)
        return None

    def close(self) -> None:
        self.client.close()
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _kill_run(kind: str, sweep: list[str], folder: str, reference: str, after: int) -> str:
    import psutil

    cluster = LocalDask(2, folder)
    try:
        pids = cluster.client.run(os.getpid)
        report = os.path.join(folder, f"killed-{kind}.json")
        cmd = [sys.executable, "-m", "opkit.cli", "test", *sweep, "-q", "--no-repro", "--report", report,
               "--scheduler", cluster.address]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        victim = cluster.victim(after=after)
        if victim is None:
            proc.kill()
            return f"kill {kind}: no worker was seen in the middle of a task"
        worker = psutil.Process(pids[victim])
        if kind == "node":
            os.kill(worker.ppid(), signal.SIGKILL)  # the nanny first: nothing restarts the worker
        os.kill(worker.pid, signal.SIGKILL)
        killed_at = time.perf_counter() - start
        _, err = proc.communicate()
        wall = time.perf_counter() - start
        same = _comparable(report) == _comparable(reference)
        settings = json.load(open(report))["settings"]["cluster"]
        lines = [line for line in err.splitlines() if "lost" in line]
        return (f"kill {kind}: worker {victim} killed -9 at {killed_at:.1f} s (after {after}+ cases); run ended "
                f"(exit {proc.returncode}) "
                f"at {wall:.1f} s with {len(_comparable(report))} cases, identical to -j 2: {same}; "
                f"report settings.cluster {settings}; stderr: {lines}")
    finally:
        cluster.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4", help="comma-separated process counts (default 1,2,4)")
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--op", action="append", help=f"ops to sweep (default: {' '.join(DEFAULT_OPS)})")
    parser.add_argument("--kill", action="append", choices=("worker", "node"), default=[],
                        help="also run on 2 workers and kill one mid-run (repeatable)")
    parser.add_argument("--kill-after", type=int, default=20, metavar="CASES",
                        help="kill once this many cases finished (default 20)")
    parser.add_argument("--fresh-cache", action="store_true",
                        help="give every run its own empty $OPKIT_CACHE_DIR (IREE's compiled modules)")
    parser.add_argument("--cluster-first", action="store_true",
                        help="run the cluster before -j for each N (on a shared machine, swap the order to "
                             "see how much of a difference the load made)")
    parser.add_argument("--keep", help="keep the reports in this folder")
    parser.add_argument("extra", nargs="*", help="more opkit test arguments (after --)")
    args = parser.parse_args(argv)
    folder = args.keep or tempfile.mkdtemp(prefix="opkit-bench-cluster-")
    os.makedirs(folder, exist_ok=True)
    sweep = ["--backend", args.backend, "--max-examples", str(args.max_examples), *args.extra]
    for op in args.op or DEFAULT_OPS:
        sweep += ["--op", op]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average at start {os.getloadavg()[0]:.1f}")
    print("$ opkit test " + " ".join(sweep))
    rows = []
    for n in [int(x) for x in args.workers.split(",") if x.strip()]:
        cache = (lambda name: os.path.join(folder, "cache", name)) if args.fresh_cache else (lambda name: None)
        local_report = os.path.join(folder, f"j{n}.json")
        if not args.cluster_first:
            local_wall, _, _ = _opkit(sweep + ["-j", str(n)], local_report, cache(f"j{n}"))
        cluster = LocalDask(n, folder, cache(f"cluster{n}"))
        try:
            cluster_report = os.path.join(folder, f"cluster{n}.json")
            cluster_wall, _, _ = _opkit(sweep + ["--scheduler", cluster.address], cluster_report, cache(f"cluster{n}"))
        finally:
            cluster.close()
        if args.cluster_first:
            local_wall, _, _ = _opkit(sweep + ["-j", str(n)], local_report, cache(f"j{n}"))
        same = _comparable(cluster_report) == _comparable(local_report)
        cases = len(_comparable(local_report))
        rows.append((n, local_wall, cluster_wall, cluster.startup, cases, same))
        durations = sum(c.get("duration_s", 0) for c in json.load(open(cluster_report))["cases"])
        print(f"N={n}: -j {n} {local_wall:.1f} s, cluster {cluster_wall:.1f} s (ratio {cluster_wall / local_wall:.2f}; "
              f"cluster start-up {cluster.startup:.1f} s, not timed), {cases} cases, identical: {same}; "
              f"per case: {durations / cases:.3f} s of case time, {cluster_wall * n / cases:.3f} process-s of wall",
              flush=True)
    if rows:
        print("\n| processes | `-j N` | `--scheduler` (N workers) | ratio cluster / -j | cases | identical |")
        print("| --- | --- | --- | --- | --- | --- |")
    for n, local_wall, cluster_wall, _, cases, same in rows:
        print(f"| {n} | {local_wall:.1f} s | {cluster_wall:.1f} s | {cluster_wall / local_wall:.2f} | {cases} | "
              f"{'yes' if same else 'NO'} |")
    for kind in args.kill:
        reference = os.path.join(folder, "j2.json")
        if not os.path.exists(reference):
            _opkit(sweep + ["-j", "2"], reference)
        print(_kill_run(kind, sweep, folder, reference, args.kill_after), flush=True)
    print(f"reports: {folder}")
    return 0 if all(row[-1] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
