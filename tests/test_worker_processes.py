"""The backend worker's processes: nothing a backend starts outlives a timeout, a crash, close()
or the exit of the process that ran it (even kill -9); time limits hold against code stuck in C
with every signal blocked; the memory limit is on resident memory, so engines that reserve
virtual memory (thread pools) run under it. Fake backends: tests/worker_process_fakes.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import numpy as np
import pytest

from opkit.backends.registry import resolve
from opkit.conformance.worker_engine import CRASH, OK, TIMEOUT
from opkit.conformance.worker import Worker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")


@pytest.fixture(autouse=True, params=["spawn", "forkserver"])
def start_method(request, monkeypatch):
    """Every test here under both ways a worker starts (opkit.conformance.worker_start): a fresh
    interpreter, and a fork of a fork server (then the server, not this process, is its parent)."""
    monkeypatch.setenv("OPKIT_WORKER_START", request.param)
    return request.param

TESTS = os.path.dirname(os.path.abspath(__file__))
FAKES = "worker_process_fakes"
FEEDS = {"x": np.zeros(2, np.float32)}


# -- looking at processes through /proc

def _stat(pid: int):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return None if fields[0] in (b"Z", b"X") else fields  # a zombie is not running


def alive(pid: int) -> bool:
    return _stat(pid) is not None


def group(pgid: int) -> list[int]:
    """Live processes in process group ``pgid``."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None and int(fields[2]) == pgid:
                out.append(int(name))
    return out


def tagged(tag: str) -> list[int]:
    """Live processes whose command line carries ``tag`` (the fakes' ``sleep 1000.<tag>``)."""
    out = []
    needle = f"1000.{tag}".encode()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if needle in cmd and alive(int(name)):
                out.append(int(name))
    return out


def wait_for(condition, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def tag():
    """A unique tag; whatever still carries it (or is in a group recorded in ``groups``) at the end
    is killed, so a failing test does not leave processes behind."""
    value = str(uuid.uuid4().int)[:12]  # sleep takes 1000.<digits>
    groups: list[int] = []
    yield value, groups
    for pid in tagged(value):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pgid in groups:  # a worker of a failed test, still leading its group
        try:
            with open(f"/proc/{pgid}/cmdline", "rb") as f:
                ours = b"multiprocessing" in f.read() and alive(pgid)
        except OSError:
            ours = False
        if ours and pgid != os.getpgrp():
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass


def nothing_left(pgid: int, tag: str, seconds: float = 5.0) -> bool:
    return wait_for(lambda: not group(pgid) and not tagged(tag) and not alive(pgid), seconds)


# -- 1. nothing a backend started survives the worker

@pytest.mark.parametrize("cls, kind", [("ForksAndHangs", TIMEOUT), ("ForksAndHangsInC", TIMEOUT),
                                       ("EscapesAndHangs", TIMEOUT), ("ForksAndAborts", CRASH)])
def test_a_killed_worker_takes_the_processes_its_backend_started(tag, cls, kind):
    value, groups = tag
    with Worker(resolve(f"{FAKES}:{cls}", tag=value), timeout=2) as worker:
        worker.describe()
        pid = worker.pid
        groups.append(pid)
        result = worker.run("k", b"model", FEEDS)
        assert result.kind == kind, result.message
        assert nothing_left(pid, value), (f"left behind after the {kind}: group {group(pid)}, "
                                          f"sleeps {tagged(value)}")
        # and the next case runs in a fresh worker
        assert worker.run("k", b"model", FEEDS, timeout=2).kind == kind


def test_close_takes_the_processes_its_backend_started(tag):
    value, groups = tag
    worker = Worker(resolve(f"{FAKES}:ForksAndReturns", tag=value), timeout=10)
    worker.describe()
    pid = worker.pid
    groups.append(pid)
    assert worker.run("k", b"model", FEEDS).kind == OK
    assert wait_for(lambda: tagged(value), 5)  # the backend's child runs between cases
    worker.close()
    assert nothing_left(pid, value), f"left behind after close(): {group(pid)} {tagged(value)}"


def _script(tmp_path, body: str) -> str:
    path = tmp_path / "parent.py"
    path.write_text(textwrap.dedent(f"""\
        import os, sys, time
        sys.path.insert(0, {TESTS!r})
        import numpy as np
        from opkit.backends.registry import resolve
        from opkit.conformance.worker import Worker
        FEEDS = {{"x": np.zeros(2, np.float32)}}

        def report(*values):
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write(" ".join(map(str, values)))
            os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        """) + textwrap.dedent(body))
    return str(path)


def _start(tmp_path, body: str, tag: str):
    """Run a parent script; returns (process, the values it reports)."""
    out = tmp_path / "report.txt"
    proc = subprocess.Popen([sys.executable, _script(tmp_path, body), str(out), tag], cwd=tmp_path)
    assert wait_for(lambda: out.exists() and tagged(tag), 60), "the parent never got its backend running"
    return proc, [int(x) for x in out.read_text().split()]


def test_worker_groups_go_when_the_parent_exits_without_closing(tmp_path, tag):
    value, groups = tag
    proc, (pid,) = _start(tmp_path, """
        if __name__ == "__main__":
            w = Worker(resolve("worker_process_fakes:ForksAndReturns", tag=sys.argv[2]), timeout=30)
            w.describe()
            assert w.run("k", b"model", FEEDS).kind == "ok"
            report(w.pid)
            time.sleep(1)  # then exit with the worker open (atexit)
        """, value)
    groups.append(pid)
    assert proc.wait(30) == 0
    assert nothing_left(pid, value), f"left behind after the parent exited: {group(pid)} {tagged(value)}"


# -- 2. kill -9 of the parent

@pytest.mark.parametrize("cls", ["ForksAndHangs", "ForksAndHangsInC", "ForksAndReturns"])
def test_worker_groups_go_when_the_parent_is_killed(tmp_path, tag, cls):
    """The parent is SIGKILLed while its worker runs a case (hung in Python; hung in C with every
    signal blocked and the GIL held) or between cases: the worker and the processes its backend
    started go within seconds."""
    value, groups = tag
    proc, (pid,) = _start(tmp_path, f"""
        if __name__ == "__main__":
            w = Worker(resolve("worker_process_fakes:{cls}", tag=sys.argv[2]), timeout=600)
            w.describe()
            report(w.pid)
            w.run("k", b"model", FEEDS)
            time.sleep(1000)
        """, value)
    groups.append(pid)
    time.sleep(0.3)
    proc.kill()
    proc.wait(10)
    assert nothing_left(pid, value), f"left behind after kill -9 of the parent: {group(pid)} {tagged(value)}"


def test_pool_processes_with_exit_with_parent_go_when_the_sweep_is_killed(tmp_path, tag):
    """What ``opkit test -j N`` needs: pool processes started with
    ``initializer=exit_with_parent`` exit when the sweep is SIGKILLed, and so do their workers."""
    value, groups = tag
    proc, (pool_pid, pid) = _start(tmp_path, """
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from opkit.conformance.worker_process import exit_with_parent

        def job(out, tag):
            sys.argv[1:] = [out, tag]
            w = Worker(resolve("worker_process_fakes:ForksAndHangs", tag=tag), timeout=600)
            w.describe()
            report(os.getpid(), w.pid)
            w.run("k", b"model", FEEDS)

        if __name__ == "__main__":
            pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=exit_with_parent,
                                       initargs=(os.getpid(),))
            pool.submit(job, sys.argv[1], sys.argv[2]).result()
        """, value)
    groups.append(pid)
    time.sleep(0.3)
    proc.kill()
    proc.wait(10)
    assert wait_for(lambda: not alive(pool_pid), 5), "the pool process outlived the sweep"
    assert nothing_left(pid, value), f"left behind after kill -9 of the sweep: {group(pid)} {tagged(value)}"


# -- 3. the per-case limit is enforced from outside

@pytest.mark.parametrize("cls", ["PythonLoop", "CLoop"])
def test_time_limit_holds_for_code_that_never_returns(tag, cls):
    """A Python busy loop, and a C loop holding the GIL with every signal blocked: the parent
    kills the worker when no answer comes within the limit."""
    value, groups = tag
    with Worker(resolve(f"{FAKES}:{cls}", tag=value), timeout=1.5) as worker:
        worker.describe()
        pid = worker.pid
        groups.append(pid)
        start = time.monotonic()
        result = worker.run("k", b"model", FEEDS)
        took = time.monotonic() - start
        assert result.kind == TIMEOUT and "no answer within 1.5 s" in result.message
        assert took < 1.5 + 5
        assert nothing_left(pid, value, 2)


# -- 4. the memory limit is on resident memory

def test_memory_limit_kills_on_resident_memory_and_says_so(tag):
    value, groups = tag
    with Worker(resolve(f"{FAKES}:UsesMemory", mb=600), timeout=60, memory_gb=0.25) as worker:
        worker.describe()
        pid = worker.pid
        groups.append(pid)
        start = time.monotonic()
        result = worker.run("k", b"model", FEEDS)
        assert result.kind == CRASH and result.stage == "memory", result
        assert result.message.startswith("killed: resident memory over 0.25 GB"), result.message
        assert "died" not in result.message  # not worded like a crash of the backend
        assert time.monotonic() - start < 20
        assert nothing_left(pid, value, 2)


def test_memory_limit_counts_the_processes_a_backend_started(tag):
    value, groups = tag
    with Worker(resolve(f"{FAKES}:ChildUsesMemory", mb=500, tag=value), timeout=60, memory_gb=0.3) as worker:
        worker.describe()
        pid = worker.pid
        groups.append(pid)
        result = worker.run("k", b"model", FEEDS)
        assert result.kind == CRASH and result.message.startswith("killed: resident memory over 0.3 GB"), result
        assert nothing_left(pid, value, 2)


def test_memory_shared_by_forked_processes_counts_once(tag):
    """200 MiB shared by the worker and 3 forked children: 800 MiB of RSS, 200 of PSS; a 0.5 GB
    limit does not kill it (the case times out instead)."""
    value, groups = tag
    with Worker(resolve(f"{FAKES}:ForksSharingMemory", mb=200, threads=3), timeout=4, memory_gb=0.5) as worker:
        worker.describe()
        pid = worker.pid
        groups.append(pid)
        result = worker.run("k", b"model", FEEDS)
        assert result.kind == TIMEOUT, result.message
        assert nothing_left(pid, value, 2)


def test_memory_limit_0_is_none(tag):
    value, groups = tag
    with Worker(resolve(f"{FAKES}:UsesMemory", mb=300), timeout=2, memory_gb=0) as worker:
        worker.describe()
        groups.append(worker.pid)
        result = worker.run("k", b"model", FEEDS)
    assert result.kind == TIMEOUT, result.message


def test_reserved_virtual_memory_is_not_limited():
    """32 threads with 256 MiB stacks: 8 GiB of address space, little of it resident. An
    address-space limit of 4 GB made thread creation fail; the resident limit lets it run."""
    with Worker(resolve(f"{FAKES}:ReservesThreads", threads=32), timeout=60) as worker:
        assert worker.memory_gb == 4.0
        result = worker.run("k", b"model", FEEDS)
    assert result.kind == OK, result.message


def test_an_address_space_limit_of_the_runner_is_not_inherited():
    """``opkit test`` lowers the runner's own RLIMIT_AS (reference kernels) before it starts the
    worker; the worker goes back to the limit the runner had before."""
    import resource

    from opkit.conformance.limits import memory_limit

    before = resource.getrlimit(resource.RLIMIT_AS)
    with memory_limit(4):
        with Worker(resolve(f"{FAKES}:ReservesThreads", threads=32), timeout=60) as worker:
            result = worker.run("k", b"model", FEEDS)
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert result.kind == OK, result.message


def test_onnxruntime_thread_pool_runs_under_the_default_memory_limit(monkeypatch):
    """onnxruntime with 128 pool threads and one malloc arena per thread (as on a many-core
    machine) reserves ~10 GB: under a 4 GB address-space limit its pool hung (no answer in 30 s)."""
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=512")
    with Worker(resolve(f"{FAKES}:OrtManyThreads", threads=128), timeout=30) as worker:
        result = worker.run("k", b"model", FEEDS)
    assert result.kind == OK, result.message
    assert result.outputs[0].shape == (512, 512)


def test_onnxruntime_backend_api_class_runs_under_the_default_memory_limit():
    """``--backend onnxruntime.backend.backend:OnnxRuntimeBackend`` (a module:Class Backend-API
    backend) in a worker with the default limit."""
    pytest.importorskip("onnxruntime")
    from opkit.conformance import harness
    from opkit.cases.onnx_model import build
    from opkit.cases.case import make_case

    spec = harness.load_op("ai.onnx", "Trilu")
    version = spec.version(14)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    built = build(make_case(spec, version, {"T": "tensor(float)"}, {}, [(version.inputs[0].name, x)]), version,
                  ir_version=13)
    with Worker(resolve("onnxruntime.backend.backend:OnnxRuntimeBackend"), timeout=30) as worker:
        assert worker.memory_gb == 4.0
        result = worker.run(built.key, built.model.SerializeToString(), built.feeds)
    assert result.kind == OK, result.message
    np.testing.assert_array_equal(result.outputs[0], np.triu(x))


# -- 5. what a backend writes is kept apart from the terminal, and a crash keeps its last words

def _output_files(name: str) -> list[str]:
    import glob
    import tempfile

    return glob.glob(os.path.join(tempfile.gettempdir(), f"opkit-*{name}*.out"))


def test_a_crash_keeps_the_runtimes_last_words_and_the_terminal_stays_clean(tag, capfd):
    value, groups = tag
    with Worker(resolve(f"{FAKES}:Talks"), timeout=10) as worker:
        worker.describe()
        groups.append(worker.pid)
        assert not _output_files("Talks")  # unlinked once the worker has it open: kill -9 leaves nothing
        ok = worker.run("k", b"model", FEEDS)
        assert ok.kind == OK and ok.output == ""
        crash = worker.run("k", b"model", {"x": np.ones(2, np.float32)})
        assert crash.kind == CRASH and "SIGABRT" in crash.message, crash
        # the case's own words, without the earlier case's, without control characters
        assert crash.output.endswith("terminate called without an active exception"), crash.output
        assert "Assertion '_M_a <= _M_b' failed." in crash.output
        assert crash.output.count("ordinary warning") == 2  # this case's two, not the first case's
        assert "\x1b" not in crash.output and "\r" not in crash.output
        assert "terminate called" not in crash.message  # the cause's signature stays the signal
        assert worker.run("k", b"model", FEEDS).kind == OK  # a fresh worker, its output captured too
        hang = worker.run("k", b"model", {"x": np.full(2, 2, np.float32)}, timeout=1.5)
        assert hang.kind == TIMEOUT and hang.output.endswith("waiting for a lock that never comes"), hang
    err = capfd.readouterr()
    assert "ordinary warning" not in err.err + err.out and "terminate called" not in err.err


def test_the_runtimes_last_words_reach_the_report_and_the_terminal():
    import dataclasses

    from opkit.results.causes import causes, causes_text
    from opkit.results.record import CaseRecord
    from opkit.conformance.case_exec import result_exec
    from opkit.conformance.worker_engine import Result

    ex = result_exec(Result(CRASH, None, "backend worker died: killed by signal SIGABRT",
                            output="terminate called without an active exception"))
    assert ex.message == "backend worker died: killed by signal SIGABRT"
    assert ex.details == {"runtime_output": "terminate called without an active exception"}
    case = CaseRecord(backend="fake", suite="differential", domain="ai.onnx", op="Trilu", version=14,
                      types={"T": "tensor(float)"}, outcome=CRASH, message=ex.message, details=ex.details,
                      minimal_example="x=float32[2, 3]")
    found = causes([case, dataclasses.replace(case, details={"runtime_output": "another run's words"})])
    assert len(found) == 1  # the words never split one bug into two causes
    assert "runtime wrote: terminate called without an active exception" in causes_text(found)


def test_the_runtimes_last_words_are_bounded_plain_text():
    from opkit.conformance.worker_output import TAIL_CHARS, tail_text

    assert tail_text(b"") == ""
    assert tail_text(b"a\r\n\n  b \x1b[31mred\x1b[0m\x07\n") == "a | b red"
    long = tail_text(b"".join(b"line %d " % i + b"x" * 200 + b"\n" for i in range(50)))
    assert len(long) <= TAIL_CHARS and long.startswith("... ") and long.endswith("x")
    assert "line 49" in long and "line 40" not in long
    assert tail_text(b"\xff\xfe broken utf-8") == "\ufffd\ufffd broken utf-8"


def test_the_output_file_never_has_a_name():
    # a named file, unlinked only once the worker had started, was left in /tmp when opkit was
    # killed while a worker started (seen after the kill -9 tests)
    from opkit.conformance.worker_output import WorkerOutput

    out = WorkerOutput("NeverNamed")
    try:
        assert not _output_files("NeverNamed")
        fd = os.open(out.path, os.O_WRONLY | os.O_APPEND)  # as the worker opens it
        os.write(fd, b"first case\n")
        out.clear()
        os.write(fd, b"second case\n")
        os.close(fd)
        assert out.tail() == "second case"
    finally:
        out.close()
    assert out.tail() == ""


def test_without_proc_the_output_file_is_named_until_the_worker_opened_it(monkeypatch):
    from opkit.conformance import shared_file
    from opkit.conformance.worker_output import WorkerOutput

    monkeypatch.setattr(shared_file.os.path, "exists", lambda path: False)  # no /proc/<pid>/fd
    out = WorkerOutput("Named")
    try:
        assert _output_files("Named") == [out.path]
        out.opened()
        assert not _output_files("Named")
        assert out.tail() == ""  # the descriptor stays valid
    finally:
        out.close()
