"""Fault injection for ``opkit test``: kill real runs at random moments and check what is left.

Each round starts a real run, exactly as a user would::

    opkit test --backend reference --op Abs --op Trilu --op Where --suite differential
               --max-examples 100000 --report R -q -j {1,2}

waits until it is running cases (a backend worker or pool process is up), waits a random delay and
injects one fault:

- ``kill9``: SIGKILL to the run (the OOM killer); half of these rounds start with an older valid
  report at R, which must survive untouched;
- ``sigint``: SIGINT to the run's process group (Ctrl-C in a terminal);
- ``sigint2``: two SIGINTs to the process group, the second 0-0.5 s after the first (while the
  report is being written);
- ``sigterm``: SIGTERM to the run only (``kill PID``, a CI timeout);
- ``sigint+kill9``: Ctrl-C, then SIGKILL 0-0.4 s later: kill -9 while the report is written;
- ``diskfull``: R on a small tmpfs (``mount -t tmpfs``, needs root) filled up once the run is going,
  then Ctrl-C: the report cannot be written. Without mount, a full disk is simulated in the run
  (os.fsync raises ENOSPC, through a sitecustomize on PYTHONPATH).

After each run it checks that the report is absent (a kill -9 before writing) or complete, valid
JSON that passes opkit/results/report.schema.json (for interrupts: settings.interrupted true,
summary.ok false, exit code 130, stopped within --stop-limit seconds), that no temporary file is
left beside it, and that no process of the run (its pool processes, backend workers: found by an
environment variable they inherit, wherever they were reparented) is still alive a few seconds
later. It prints a table of outcomes; the exit status is 1 when a round
failed a check.

Usage: python benchmarks/fault_injection.py [--rounds N] [--seed S] [--faults kill9,sigint,...]
                                            [--jobs 1,2] [--max-examples 100000] [--max-delay 8]
                                            [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

FAULTS = ("kill9", "sigint", "sigint2", "sigterm", "sigint+kill9", "diskfull")
INTERRUPTS = ("sigint", "sigint2", "sigterm", "diskfull")
OPS = ("Abs", "Trilu", "Where")
READY_TIMEOUT = 120.0  # seconds for the run to start its first worker (a loaded machine)
EXIT_TIMEOUT = 60.0  # seconds for the run to end after the fault
SETTLE = 15.0  # seconds for the run's other processes to go away after it ended
TMPFS_SIZE = "256k"

_SITECUSTOMIZE = '''\
import errno, os
if os.environ.get("OPKIT_FAULT_ENOSPC"):
    _fsync = os.fsync
    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    os.fsync = fsync
'''


@dataclass
class Outcome:
    round: int
    fault: str
    jobs: int
    delay_s: float
    exit: int | None = None
    stop_s: float | None = None  # first signal -> exit
    report: str = "absent"  # absent | old | valid | INVALID: ...
    cases: int | None = None
    interrupted: bool | None = None
    ok: bool | None = None
    temp_files: list = field(default_factory=list)
    left_processes: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    stderr_tail: str = ""
    passed: bool = False


# ------------------------------------------------------------------------------------------------
# processes


MARK = "OPKIT_FAULT_RUN"  # environment variable set for each run: its processes inherit it


def run_processes(token: str) -> list[tuple[int, str]]:
    """Live processes that belong to the run marked ``token``: the run, its pool processes and
    backend workers, wherever they went (an orphan reparented to init, a worker in its own
    session), found by the environment they inherited (like ``ps e | grep``); with command lines."""
    needle = f"{MARK}={token}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            if stat[stat.rindex(")") + 2:].split()[0] in ("Z", "X"):
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(name), cmd[:160]))
    return out


def _ready(token: str, pid: int) -> bool:
    """The run is past its checks and running cases: a spawned worker or pool process is up, or a
    worker forked by a fork server (worker_start: it shows the server's command line, so the
    server and at least one worker)."""
    procs = [(p, cmd) for p, cmd in run_processes(token) if p != pid and "resource_tracker" not in cmd]
    return any("spawn_main" in cmd for _, cmd in procs) or sum("forkserver" in cmd for _, cmd in procs) >= 2


def _kill_all(token: str) -> None:
    for p, _ in run_processes(token):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


# ------------------------------------------------------------------------------------------------
# a full disk


def _mount_tmpfs(folder: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", folder],
                          capture_output=True)
    return done.returncode == 0


def _umount(folder: str) -> None:
    if subprocess.run(["umount", folder], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", folder], capture_output=True)


def _fill(folder: str) -> int:
    """Fill the file system of ``folder``; the bytes written."""
    written = 0
    fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 4096, 512, 1):
            block = b"\0" * size
            while True:
                try:
                    written += os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return written


# ------------------------------------------------------------------------------------------------
# reports


def _schema():
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "..", "opkit", "results", "report.schema.json"),):
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
    from opkit.results.report import REPORT_SCHEMA

    return REPORT_SCHEMA


def schema_problems(report: dict) -> list[str]:
    try:
        import jsonschema
    except ImportError:
        from opkit.results.report import validate_report

        return validate_report(report)
    validator = jsonschema.Draft202012Validator(_schema())
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(report)]


def _read(path: str, old: bytes | None, outcome: Outcome) -> dict | None:
    if not os.path.exists(path):
        outcome.report = "absent"
        return None
    raw = open(path, "rb").read()
    if old is not None and raw == old:
        outcome.report = "old"
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        outcome.report = f"INVALID: {str(exc)[:80]} ({len(raw)} bytes)"
        return None
    problems = schema_problems(data)
    if problems:
        outcome.report = f"INVALID: schema: {problems[0][:80]}"
        return None
    outcome.report = "valid"
    outcome.cases = len(data["cases"])
    outcome.interrupted = bool(data["settings"].get("interrupted"))
    outcome.ok = data["summary"]["ok"]
    return data


# ------------------------------------------------------------------------------------------------
# one round


def run_round(number: int, fault: str, jobs: int, delay: float, workdir: str, old_report: bytes | None,
              rng: random.Random, max_examples: int = 100000, stop_limit: float = 15.0) -> Outcome:
    outcome = Outcome(number, fault, jobs, round(delay, 2))
    folder = os.path.join(workdir, f"round-{number:03d}")
    os.makedirs(folder)
    token = f"{os.getpid()}-{number}-{random.getrandbits(32):08x}"
    env = dict(os.environ, **{MARK: token})
    mounted = False
    if fault == "diskfull":
        mounted = _mount_tmpfs(folder)
        if not mounted:
            hooks = os.path.join(workdir, "hooks")
            os.makedirs(hooks, exist_ok=True)
            with open(os.path.join(hooks, "sitecustomize.py"), "w") as f:
                f.write(_SITECUSTOMIZE)
            env["PYTHONPATH"] = hooks + os.pathsep + env.get("PYTHONPATH", "")
            env["OPKIT_FAULT_ENOSPC"] = "1"
            outcome.notes.append("no tmpfs: ENOSPC simulated in fsync")
    report = os.path.join(folder, "report.json")
    seeded = None
    if fault == "kill9" and old_report is not None and number % 2:
        with open(report, "wb") as f:
            f.write(old_report)
        seeded = old_report
        outcome.notes.append("older report in place")
    cmd = [sys.executable, "-m", "opkit.cli", "test", "--backend", "reference"]
    for op in OPS:
        cmd += ["--op", op]
    cmd += ["--suite", "differential", "--max-examples", str(max_examples), "--report", report, "-q",
            "-j", str(jobs), "--repro-dir", os.path.join(folder, "repro")]
    err_path = os.path.join(workdir, f"round-{number:03d}.stderr")
    try:
        with open(err_path, "wb") as err, open(os.devnull, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT
        while not _ready(token, proc.pid):
            if proc.poll() is not None or time.monotonic() > deadline:
                outcome.notes.append("the run ended or never started a worker before the fault")
                break
            time.sleep(0.05)
        if fault == "diskfull" and mounted:
            _fill(folder)
        time.sleep(delay)
        first = time.monotonic()
        try:
            _inject(fault, proc.pid, rng)
        except ProcessLookupError:
            outcome.notes.append("the run had already ended when the fault came")
        try:
            proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            outcome.notes.append(f"HUNG: still running {EXIT_TIMEOUT:g} s after the fault")
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        outcome.exit = proc.returncode
        outcome.stop_s = round(time.monotonic() - first, 2)
        settle = time.monotonic() + SETTLE
        while run_processes(token) and time.monotonic() < settle:
            time.sleep(0.1)
        outcome.left_processes = [f"{p} {cmd}" for p, cmd in run_processes(token)]
        _kill_all(token)
        with open(err_path, "rb") as f:
            stderr = f.read().decode("utf-8", "replace")
        outcome.stderr_tail = stderr[-1500:]
        data = _read(report, seeded, outcome)
        outcome.temp_files = sorted(n for n in os.listdir(folder)
                                    if n not in ("report.json", "filler", "repro", "lost+found"))
        _judge(outcome, data, stderr, stop_limit)
    finally:
        if mounted:
            _umount(folder)
    return outcome


def _inject(fault: str, pid: int, rng: random.Random) -> None:
    if fault == "kill9":
        os.kill(pid, signal.SIGKILL)
    elif fault in ("sigint", "diskfull"):
        os.killpg(pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole process group
    elif fault == "sigint2":
        os.killpg(pid, signal.SIGINT)
        time.sleep(rng.uniform(0.0, 0.5))
        os.killpg(pid, signal.SIGINT)
    elif fault == "sigterm":
        os.kill(pid, signal.SIGTERM)
    elif fault == "sigint+kill9":
        os.killpg(pid, signal.SIGINT)
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(pid, signal.SIGKILL)


def _judge(o: Outcome, data: dict | None, stderr: str, stop_limit: float) -> None:
    problems = []
    if any(n.startswith("the run") for n in o.notes):
        problems.append("the run did not run until the fault")
    if any(n.startswith("HUNG") for n in o.notes):
        problems.append("hung")
    if o.report.startswith("INVALID"):
        problems.append("broken report")
    if o.temp_files:
        problems.append("temporary files left")
    if o.left_processes:
        problems.append("processes left")
    if o.fault in ("sigint", "sigint2", "sigterm"):
        if o.exit != 130:
            problems.append(f"exit {o.exit}, expected 130")
        if o.report != "valid":
            problems.append("no report")
        elif not (o.interrupted and o.ok is False):
            problems.append("report does not say interrupted / not ok")
        if o.stop_s is not None and o.stop_s > stop_limit:
            problems.append(f"took {o.stop_s} s to stop")
    elif o.fault == "diskfull":
        if o.exit != 130:
            problems.append(f"exit {o.exit}, expected 130")
        if o.report not in ("absent",):
            problems.append(f"report {o.report} on a full disk")
        if "cannot write the report" not in stderr:
            problems.append("no error about the report")
        if "Traceback" in stderr:
            problems.append("traceback")
    elif o.fault in ("kill9", "sigint+kill9"):
        if o.report == "valid" and o.fault == "sigint+kill9" and not o.interrupted:
            problems.append("report not marked interrupted")
    o.notes += problems
    o.passed = not problems


# ------------------------------------------------------------------------------------------------


def _baseline(workdir: str) -> bytes | None:
    """A small valid report (the 'older report' some kill -9 rounds start with)."""
    path = os.path.join(workdir, "baseline.json")
    subprocess.run([sys.executable, "-m", "opkit.cli", "test", "--backend", "reference", "--op", "Abs", "--suite",
                    "differential", "--max-examples", "2", "--report", path, "-q", "--no-repro"],
                   capture_output=True, timeout=300)
    return open(path, "rb").read() if os.path.exists(path) else None


def plan(rounds: int, faults, jobs, seed: int, max_delay: float) -> list[tuple[str, int, float]]:
    """(fault, -j, delay) per round: every (fault, -j) pair in turn, in a shuffled order."""
    rng = random.Random(seed)
    pairs = [(f, j) for f in faults for j in jobs]
    rng.shuffle(pairs)
    return [(*pairs[i % len(pairs)], rng.uniform(0.0, max_delay)) for i in range(rounds)]


def run(rounds: int, faults=FAULTS, jobs=(1, 2), seed: int = 0, max_delay: float = 8.0,
        max_examples: int = 100000, stop_limit: float = 15.0, workdir: str | None = None,
        progress=None) -> list[Outcome]:
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="opkit-faults-")
    rng = random.Random(seed + 1)
    try:
        old = _baseline(workdir) if "kill9" in faults else None
        outcomes = []
        for number, (fault, j, delay) in enumerate(plan(rounds, faults, jobs, seed, max_delay), 1):
            o = run_round(number, fault, j, delay, workdir, old, rng, max_examples, stop_limit)
            outcomes.append(o)
            if progress:
                progress(o)
        return outcomes
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


def table(outcomes: list[Outcome]) -> str:
    head = ("round", "fault", "-j", "delay s", "exit", "stop s", "report", "cases", "interrupted", "ok",
            "temp files", "procs left", "result")
    rows = [head]
    for o in outcomes:
        rows.append((str(o.round), o.fault, str(o.jobs), f"{o.delay_s:.2f}", str(o.exit),
                     "-" if o.stop_s is None else f"{o.stop_s:.2f}", o.report[:40],
                     "-" if o.cases is None else str(o.cases), "-" if o.interrupted is None else str(o.interrupted),
                     "-" if o.ok is None else str(o.ok), str(len(o.temp_files)), str(len(o.left_processes)),
                     "PASS" if o.passed else "FAIL: " + "; ".join(o.notes)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
        if k == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 6)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=len(FAULTS) * 2,
                        help="runs (each fault x -j pair in turn; default: each once)")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma separated, of {', '.join(FAULTS)}")
    parser.add_argument("--jobs", default="1,2", help="-j values to use (default 1,2)")
    parser.add_argument("--max-examples", type=int, default=100000)
    parser.add_argument("--max-delay", type=float, default=8.0, help="seconds after start-up before the fault")
    parser.add_argument("--stop-limit", type=float, default=15.0,
                        help="seconds an interrupted run may take to exit (default 15)")
    parser.add_argument("--json", metavar="FILE", help="also write the outcomes as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (reports, stderr)")
    args = parser.parse_args(argv)
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        parser.error(f"unknown fault(s) {', '.join(unknown)}")
    jobs = [int(j) for j in args.jobs.split(",")]
    workdir = tempfile.mkdtemp(prefix="opkit-faults-")
    print(f"fault injection: {args.rounds} rounds, seed {args.seed}, work folder {workdir}", flush=True)

    def progress(o: Outcome):
        print(f"  round {o.round}: {o.fault} -j {o.jobs} after {o.delay_s:.2f} s -> exit {o.exit}, report "
              f"{o.report[:50]}, {'PASS' if o.passed else 'FAIL ' + '; '.join(o.notes)}", flush=True)

    try:
        outcomes = run(args.rounds, faults, jobs, args.seed, args.max_delay, args.max_examples, args.stop_limit,
                       workdir, progress)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(table(outcomes))
    failed = [o for o in outcomes if not o.passed]
    print(f"\n{len(outcomes) - len(failed)}/{len(outcomes)} rounds passed")
    for o in failed:
        print(f"\nround {o.round} ({o.fault} -j {o.jobs}) stderr tail:\n{o.stderr_tail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(o) for o in outcomes], f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
