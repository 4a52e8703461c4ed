"""`opkit test` runs that end badly: atomic reports (kill -9, a full disk), reading broken reports,
interrupts (Ctrl-C, a second Ctrl-C, SIGTERM, a library that swallows KeyboardInterrupt; -j 1 and
-j 2), the checks made before the first case runs, runs in which no case ran, and a short
fault-injection run (benchmarks/fault_injection.py)."""

from __future__ import annotations

import json
import re
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from opkit.cli import main
from opkit.run import interrupts
from opkit.results.record import records
from opkit.results.report import build_report, read_report, validate_report, write_report

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([TESTS] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _report(n: int = 3) -> dict:
    case = {"backend": "reference", "suite": "differential", "op": "Abs", "domain": "ai.onnx", "version": 13,
            "types": {"T": "tensor(float)"}, "example": "differential", "outcome": "pass", "message": "",
            "examples_run": 5, "duration_s": 0.1, "repro": None}
    target = {"backends": [{"name": "reference", "version": "1"}], "opkit": "0", "onnx": "0", "numpy": "0",
              "seed": 0, "machine": {"platform": "x", "cpu_count": 1}}
    settings = {"suites": ["differential"], "ops": None, "max_examples": 5, "timeout_s": 10.0, "expectations": []}
    return build_report(records([dict(case, message="x" * 200) for _ in range(n)]), target, settings, 1.0)


def _mount_tmpfs(folder, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def _umount(folder) -> None:
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB file system (a tmpfs; needs root and mount)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    if not _mount_tmpfs(folder, "size=64k"):
        pytest.skip("cannot mount a tmpfs here")
    yield folder
    _umount(folder)


@pytest.fixture
def read_only_dir(tmp_path):
    """A folder this process cannot create files in: chmod 555 (not root), else a read-only tmpfs."""
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o555)
    try:
        (folder / "probe").write_text("x")
    except OSError:
        yield folder
        os.chmod(folder, 0o755)
        return
    (folder / "probe").unlink()
    os.chmod(folder, 0o755)
    if not _mount_tmpfs(folder, "ro,size=64k"):
        pytest.skip("no read-only folder available (root, and no mount)")
    yield folder
    _umount(folder)


# ------------------------------------------------------------------------------------------------
# 1. atomic reports; reading broken ones


def test_a_report_that_fails_to_serialize_leaves_the_previous_one(tmp_path):
    path = tmp_path / "r.json"
    write_report(_report(), str(path))
    before = path.read_bytes()
    broken = _report()
    broken["cases"].append({"bad": object()})  # json fails after most of the document
    with pytest.raises(TypeError):
        write_report(broken, str(path))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["r.json"]


def test_a_full_disk_leaves_the_previous_report_and_no_temporary_file(tiny_disk):
    path = tiny_disk / "r.json"
    write_report(_report(3), str(path))
    before = path.read_bytes()
    with pytest.raises(OSError) as info:
        write_report(_report(2000), str(path))  # ~600 KB on a 64 KiB disk
    assert "No space left" in str(info.value)
    assert path.read_bytes() == before
    assert os.listdir(tiny_disk) == ["r.json"]


_WRITER = """
import sys
from opkit.results.report import write_report
report = {"format": "x", "cases": [{"n": i, "message": "m" * 300} for i in range(6000)]}
open(sys.argv[2], "w").write("go")
while True:
    write_report(report, sys.argv[1])
"""


def test_kill_9_while_writing_leaves_no_truncated_report(tmp_path):
    """A process killed at random moments while it rewrites a ~2 MB report: the file is always
    complete JSON, and nothing but the report is left (the temporary file of the interrupted write
    is the only possible leftover of kill -9: it has the .tmp name and is not the report)."""
    rng = random.Random(7)
    path = tmp_path / "r.json"
    for attempt in range(8):
        ready = tmp_path / f"ready{attempt}"
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(ready)], env=_env())
        deadline = time.monotonic() + 60
        while not (ready.exists() and path.exists()) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.4))
        proc.kill()
        proc.wait()
        json.loads(path.read_text())  # raises on a truncated report
    leftovers = [n for n in os.listdir(tmp_path) if n != "r.json" and not n.startswith("ready")]
    assert all(n.startswith(".r.json.") and n.endswith(".tmp") for n in leftovers), leftovers


def _compare(*paths):
    proc = subprocess.run([sys.executable, "-m", "opkit.cli", "compare", *map(str, paths)], capture_output=True,
                          text=True, env=_env(), timeout=120)
    return proc.returncode, proc.stderr


def test_compare_names_a_truncated_report_and_the_position(tmp_path):
    path = tmp_path / "r.json"
    write_report(_report(), str(path))
    path.write_bytes(path.read_bytes()[:300])
    code, err = _compare(path)
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: not valid JSON", err), err


@pytest.mark.parametrize("content", [b"\xff\xfe{", b"", b"[1, 2]", b'{"cases": [{"op": "Abs"}]}', None])
def test_compare_rejects_what_is_not_a_report_in_one_line(tmp_path, content):
    path = tmp_path / "r.json"
    if content is None:
        path.mkdir()  # a folder named like a report
    else:
        path.write_bytes(content)
    code, err = _compare(path)
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(path) in err


def test_read_report_gives_the_report(tmp_path):
    path = tmp_path / "r.json"
    write_report(_report(), str(path))
    assert read_report(str(path))["summary"]["total"] == 3


# ------------------------------------------------------------------------------------------------
# 2. interrupts


def test_an_interrupted_report_is_not_ok():
    report = _report()
    settings = dict(report["settings"], interrupted=True)
    interrupted = build_report(records(report["cases"]), report["target"], settings, 1.0)
    assert interrupted["summary"]["ok"] is False
    assert validate_report(interrupted) == []


def test_a_signal_landing_where_python_swallows_exceptions_does_not_raise_there():
    """Python only prints exceptions raised in gc callbacks (hypothesis installs one) and in
    __del__: the handler does not raise there (the stop flag ends the run instead)."""
    import gc

    seen = []

    def callback(phase, info):
        if phase == "start" and not seen:
            seen.append(interrupts._swallowed_here(sys._getframe()))

    class Finalized:
        def __del__(self):
            seen.append(interrupts._swallowed_here(sys._getframe()))

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    Finalized()
    assert seen == [True, True]
    assert interrupts._swallowed_here(sys._getframe()) is False


def _start(tmp_path, *args, backend="reliability_fakes:Slow", delay=0.05, ops=("Trilu",), **env):
    log = tmp_path / "calls.log"
    report = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "opkit.cli", "test", "--backend", backend, "--suite", "differential",
           "--max-examples", "10", "--siblings", "0", "--report", str(report), "--no-repro", "-q",
           "--no-expectations", *args]
    for op in ops:
        cmd += ["--op", op]
    err = open(tmp_path / "stderr.txt", "wb")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                            env=_env(OPKIT_FAKE_LOG=log, OPKIT_FAKE_DELAY=delay, **env))
    err.close()
    return proc, log, report


def _wait_calls(proc, log, n: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and len(log.read_bytes().splitlines()) >= n:
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"the run did not get to {n} backend calls (exit {proc.poll()})")


def _ended(proc, tmp_path, limit: float) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        proc.wait(limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"still running {limit:g} s after the signal: "
                    f"{(tmp_path / 'stderr.txt').read_text(errors='replace')[-2000:]}")
    return proc.returncode, (tmp_path / "stderr.txt").read_text(errors="replace"), time.monotonic() - t0


def _left(token: str) -> list[str]:
    """Live processes of the run marked ``token`` (its environment), wherever they were reparented
    or whatever session they started."""
    needle = f"OPKIT_TEST_RUN={token}".encode()
    left = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if needle not in open(f"/proc/{name}/environ", "rb").read().split(b"\0"):
                continue
            stat = open(f"/proc/{name}/stat").read()
        except (OSError, ValueError):
            continue
        if stat[stat.rindex(")") + 2:].split()[0] not in ("Z", "X"):
            left.append(name)
    return left


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("how", ["sigint", "sigint-twice", "sigterm"])
def test_an_interrupted_run_reports_the_cases_that_finished(tmp_path, jobs, how):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it), Ctrl-C twice (the second while
    the run shuts down and writes its report) and SIGTERM (to the run only): exit 130, and the
    report holds the cases that finished, says interrupted, and is not ok. With -j 2 the cases come
    from the pool processes, streamed as they finish."""
    token = f"{os.getpid()}-{jobs}-{how}-{random.getrandbits(32)}"
    proc, log, report = _start(tmp_path, "-j", jobs, ops=("Trilu", "com.microsoft::Trilu"), OPKIT_TEST_RUN=token)
    _wait_calls(proc, log, 80)  # ~15 calls per type binding: several cases have finished
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
        if how == "sigint-twice":
            time.sleep(0.15)
            os.killpg(proc.pid, signal.SIGINT)
    code, err, took = _ended(proc, tmp_path, 30)
    assert code == 130, err[-2000:]
    data = json.loads(report.read_text())
    assert validate_report(data) == []
    assert data["settings"]["interrupted"] is True
    assert data["summary"]["ok"] is False
    assert data["cases"], "the finished cases are missing"
    assert {c["outcome"] for c in data["cases"]} == {"pass"}  # nothing the interrupt broke was recorded
    assert "interrupted" in err
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    deadline = time.monotonic() + 10
    while _left(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _left(token), "pool processes or backend workers left behind"


def test_a_swallowed_keyboard_interrupt_still_stops_the_run(tmp_path):
    """A library that catches KeyboardInterrupt (here: the backend, in process) must not keep the
    run going: the runner checks the stop flag between examples."""
    proc, log, report = _start(tmp_path, "--no-isolate", "--max-examples", "100",
                               backend="reliability_fakes:SwallowsInterrupts", delay=0.2)
    _wait_calls(proc, log, 3)
    os.killpg(proc.pid, signal.SIGINT)
    code, err, took = _ended(proc, tmp_path, 20)
    assert code == 130, err[-2000:]
    assert took < 10
    data = json.loads(report.read_text())
    assert data["settings"]["interrupted"] is True and data["summary"]["ok"] is False


def test_the_watchdog_ends_a_run_that_will_not_stop(tmp_path):
    """A backend stuck swallowing every KeyboardInterrupt: the watchdog writes the partial report
    (with the cases that finished) and ends the process OPKIT_INTERRUPT_GRACE seconds after the
    signal."""
    proc, log, report = _start(tmp_path, "--no-isolate", backend="reliability_fakes:SwallowsForever", delay=0.3,
                               OPKIT_INTERRUPT_GRACE=2)
    _wait_calls(proc, log, 40)  # a few type bindings finished
    proc.send_signal(signal.SIGTERM)
    code, err, took = _ended(proc, tmp_path, 30)
    assert code == 130, err[-2000:]
    assert "did not stop within 2 s" in err
    data = json.loads(report.read_text())
    assert validate_report(data) == []
    assert data["settings"]["interrupted"] is True and data["summary"]["ok"] is False
    assert data["cases"]
    assert any("watchdog" in w for w in data["summary"]["warnings"])


# ------------------------------------------------------------------------------------------------
# 3. checks before the first case runs; runs in which nothing ran


def _run(*argv):
    return main(["test", *argv])


ABS = ("--backend", "reference", "--op", "Abs", "--suite", "differential", "--max-examples", "2", "-q")


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_must_be_at_least_one(tmp_path, capsys, jobs):
    assert _run(*ABS, "-j", jobs, "--report", str(tmp_path / "r.json")) == 2
    assert "-j" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_missing_report_folder_is_made_before_the_run(tmp_path, capsys):
    """The README's main command writes `--report reports/...` in a fresh clone."""
    path = tmp_path / "missing" / "deeper" / "r.json"
    assert _run(*ABS, "--report", str(path)) == 0
    assert json.loads(path.read_text())["summary"]["ok"] is True


def test_a_report_folder_that_cannot_be_made_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "sub" / "r.json"  # a folder below a file
    assert _run(*ABS, "--report", str(path)) == 2
    err = capsys.readouterr().err
    assert "cannot make the folder" in err and str(tmp_path / "file" / "sub") in err


def _slow_trilu(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("OPKIT_FAKE_LOG", str(log))
    monkeypatch.setenv("OPKIT_FAKE_DELAY", "0")
    return log, ("--backend", "reliability_fakes:Slow", "--op", "ai.onnx::Trilu", "--suite", "differential",
                 "--max-examples", "2", "--siblings", "0", "-q", "--no-expectations")


def test_a_read_only_report_folder_fails_before_the_first_case(tmp_path, read_only_dir, monkeypatch, capsys):
    monkeypatch.syspath_prepend(TESTS)
    log, args = _slow_trilu(tmp_path, monkeypatch)
    assert _run(*args, "--no-repro", "--report", str(read_only_dir / "r.json")) == 2
    err = capsys.readouterr().err
    assert "cannot write in" in err and len(err.strip().splitlines()) == 1
    assert not log.exists(), "cases ran before the check"


def test_a_read_only_repro_dir_fails_before_the_first_case(tmp_path, read_only_dir, monkeypatch, capsys):
    monkeypatch.syspath_prepend(TESTS)
    log, args = _slow_trilu(tmp_path, monkeypatch)
    assert _run(*args, "--repro-dir", str(read_only_dir / "repro")) == 2
    err = capsys.readouterr().err
    assert "--repro-dir" in err and len(err.strip().splitlines()) == 1
    assert not log.exists(), "cases ran before the check"


@pytest.mark.parametrize("text, expected", [
    ("expectations:\n  - {op: Abs, reason: x\n", "not valid YAML (line 3"),
    ("expectations:\n  - {op: Abs, reason: x, outcom: error}\n", "expectations[0] (op Abs): unknown key(s) outcom"),
    ("expectations:\n  - {op: Abs, reason: x, version: fourteen}\n", "expectations[0] (op Abs): 'version'"),
    ("expectations:\n  - {op: Abs, reason: x, types: [tensor(float)]}\n", "expectations[0] (op Abs): 'types'"),
    ("expectations:\n  - {op: Abs, reason: x, outcome: 5}\n", "expectations[0] (op Abs): 'outcome'"),
    ("expectations:\n  - {op: Abs, reason: x, suite: diferential}\n", "expectations[0] (op Abs): suite"),
    ("expectations:\n  - {op: Abs, reason: [x]}\n", "expectations[0] (op Abs): 'reason'"),
    ("expectation:\n  - {op: Abs, reason: x}\n", "unknown top-level key(s) expectation"),
])
def test_a_broken_expectations_file_is_a_one_line_usage_error(tmp_path, capsys, text, expected):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    assert _run(*ABS, "--expectations", str(path), "--report", str(tmp_path / "r.json")) == 2
    err = capsys.readouterr().err
    assert expected in err and str(path) in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()


def test_expectations_that_match_nothing_are_warned_about(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    path.write_text("expectations:\n"
                    "  - {op: Abs, reason: a typo in the type, types: {T: tensor(flaot)}}\n"
                    "  - {op: Abs, reason: no such version, version: 99}\n"
                    "  - {op: Absx, reason: no such op}\n"
                    "  - {op: Abs, reason: no such example, example: nope}\n"
                    "  - {op: Trilu, reason: not part of this run}\n"
                    "  - {op: Abs, reason: a suite this run did not run, suite: properties}\n")
    report = tmp_path / "r.json"
    assert _run(*ABS, "--expectations", str(path), "--report", str(report)) == 0
    err = capsys.readouterr().err
    warnings = json.loads(report.read_text())["summary"]["warnings"]
    for i in range(4):
        assert f"expectations[{i}]" in err
        assert any(f"expectations[{i}]" in w for w in warnings)
    for i in (4, 5):
        assert f"expectations[{i}]" not in err


@pytest.mark.parametrize("args, reason", [
    (("--op", "com.microsoft::PackedAttention"), "no reference kernel"),
    (("--op", "com.microsoft::PackedMultiHeadAttention"), "no reference kernel"),
    (("--op", "Abs", "--suite", "properties"), "no properties"),
])
def test_a_run_in_which_no_case_ran_fails_and_says_why(tmp_path, capsys, args, reason):
    report = tmp_path / "r.json"
    assert _run("--backend", "reference", *args, "--max-examples", "2", "-q", "--report", str(report)) == 1
    err = capsys.readouterr().err
    assert "no case ran" in err and reason in err
    data = json.loads(report.read_text())
    assert data["summary"]["ok"] is False and data["summary"]["total"] == 0
    assert any(reason in w for w in data["summary"]["warnings"])


def test_an_op_without_cases_next_to_one_with_cases_is_a_warning(tmp_path, capsys):
    assert _run(*ABS, "--op", "com.microsoft::PackedAttention") == 0
    assert "PackedAttention: no case ran" in capsys.readouterr().err


def test_the_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["test", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "no case ran" in out and "130" in out


# ------------------------------------------------------------------------------------------------
# 4. fault injection (the short version of benchmarks/fault_injection.py)


def _fault_injection():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fault_injection", os.path.join(ROOT, "benchmarks",
                                                                                  "fault_injection.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


def test_fault_injection_short(tmp_path):
    """Three real runs killed at random moments (kill -9 during the report write, two Ctrl-Cs, a
    full disk): every report left is absent or complete and valid, no temporary file and no
    process is left behind."""
    fi = _fault_injection()
    start = time.monotonic()
    outcomes = fi.run(3, faults=("sigint+kill9", "sigint2", "diskfull"), jobs=(1, 2), seed=3, max_delay=1.5,
                      workdir=str(tmp_path))
    table = fi.table(outcomes)
    assert all(o.passed for o in outcomes), table
    assert time.monotonic() - start < 400, table
