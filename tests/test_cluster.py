"""``opkit test --scheduler``: the sweep on a Dask cluster (opkit.run.cluster).

One ``distributed.LocalCluster`` (2 worker processes with a nanny each, 1 thread each) serves the
module; the scheduler gives up on a task after 2 worker deaths (``allowed-failures`` 1), so the test
of an op that kills its workers stays short. A run goes to the cluster from this process (opkit's
``main``, in a thread where the test must act during the run) and is compared with the same sweep
run here, record for record.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import pytest

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed: pip install "
                                  "'opkit-onnx[dask]' (or the dev extra) to test --scheduler")
pytest.importorskip("onnxruntime", reason="the cluster sweeps run onnxruntime")

import dask  # noqa: E402

from opkit.cli import main  # noqa: E402
from opkit.conformance import stopping  # noqa: E402
from opkit.results.report import validate_report  # noqa: E402

# four cheap ops, every type binding each (passes, refusals and load errors among them)
SWEEP = ["test", "--backend", "onnxruntime", "--op", "Relu", "--op", "Neg", "--op", "Abs", "--op", "Sign",
         "--suite", "differential", "--max-examples", "3", "--no-repro", "--no-second-opinion", "-q"]


@pytest.fixture(scope="module")
def cluster():
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
    client = distributed.Client(local, set_as_default=False)
    yield local, client
    client.close()
    local.close()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("local") / "local.json"
    code = main(SWEEP + ["--report", str(path)])
    return code, json.loads(path.read_text())


def _comparable(report: dict) -> list[dict]:
    """The report's cases as a local run and a cluster run must both give them (durations differ)."""
    return [{k: v for k, v in case.items() if k != "duration_s"} for case in report["cases"]]


def _in_thread(argv: list[str]):
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("code", main(argv)), daemon=True)
    thread.start()
    return thread, out


def _streamed(client) -> list[dict]:
    """Every case event opkit runs have sent through the scheduler so far."""
    return [msg for topic, events in client.get_events().items() if topic.startswith("opkit-")
            for _, msg in events]


def test_same_cases_as_a_local_run_with_dask_scheduler_address(cluster, local_run, tmp_path, monkeypatch):
    local, _ = cluster
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", local.scheduler_address)  # no --scheduler: Dask's variable
    path = tmp_path / "cluster.json"
    code = main(SWEEP + ["--report", str(path)])
    report = json.loads(path.read_text())
    assert report["settings"]["cluster"] == {"scheduler": local.scheduler_address, "workers": 2,
                                             "workers_lost": 0, "tasks_rerun": 0}
    assert validate_report(report) == []
    local_code, local_report = local_run
    assert len(report["cases"]) == len(local_report["cases"]) > 20
    assert _comparable(report) == _comparable(local_report)
    assert report["summary"]["outcomes"] == local_report["summary"]["outcomes"]
    assert code == local_code


def test_a_backend_missing_on_the_workers_is_a_one_line_usage_error(cluster, tmp_path, monkeypatch, capsys):
    local, _ = cluster
    # importable here, not in the workers (started before this folder joined sys.path)
    (tmp_path / "only_on_the_client.py").write_text("from test_conformance_fakes import Correct as Fake\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    report = tmp_path / "r.json"
    code = main(["test", "--backend", "only_on_the_client:Fake", "--op", "ai.onnx::Trilu", "--scheduler",
                 local.scheduler_address, "--no-repro", "-q", "--report", str(report)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert "Dask worker tcp://" in err[0] and "only_on_the_client" in err[0]
    assert not report.exists()


def test_minus_j_with_a_scheduler_and_a_missing_distributed_are_usage_errors(tmp_path, monkeypatch, capsys):
    code = main(SWEEP + ["-j", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert code == 2
    assert "do not mix" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:1")
    code = main(SWEEP)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["opkit: DASK_SCHEDULER_ADDRESS needs Dask's distributed: pip install 'opkit-onnx[dask]' "
                   "(or unset DASK_SCHEDULER_ADDRESS to run here)"]


def test_an_unreachable_scheduler_is_a_usage_error(capsys):
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(SWEEP + ["--scheduler", "tcp://127.0.0.1:9"])  # discard port: nothing listens
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("opkit: cannot reach the Dask scheduler at tcp://127.0.0.1:9 "
                                               "(--scheduler)")


def test_an_interrupted_run_keeps_its_finished_cases_and_stops_its_tasks(cluster, tmp_path):
    local, client = cluster
    client.wait_for_workers(2)
    before = len(_streamed(client))
    path = tmp_path / "interrupted.json"
    # one task of ~20 cases, each of ~30 slow calls: over 20 s unless the stop reaches the worker
    thread, out = _in_thread(["test", "--backend", "cluster_fakes:Slow", "--op", "ai.onnx::Trilu", "--suite",
                              "differential", "--max-examples", "3", "--siblings", "0", "--no-repro",
                              "--no-second-opinion", "--no-expectations", "-q", "--scheduler",
                              local.scheduler_address, "--report", str(path)])
    deadline = time.monotonic() + 60
    while len(_streamed(client)) < before + 3 and time.monotonic() < deadline:  # _info and 2 cases
        time.sleep(0.02)
    stopping.request_stop()  # what Ctrl-C does (the run is in a thread here: no signal handler)
    thread.join(60)
    assert out.get("code") == 130
    report = json.loads(path.read_text())
    assert report["settings"]["interrupted"] is True
    assert len(report["cases"]) >= 2, "the cases streamed before the stop are in the report"
    assert {(c["op"], c["outcome"]) for c in report["cases"]} == {("Trilu", "pass")}
    # the worker was told to stop: its task ends at its next check instead of making its remaining
    # cases (a cancelled Dask task is only forgotten by the scheduler: its thread would go on)
    made = len(_streamed(client))
    time.sleep(4)  # over two cases' time
    assert len(_streamed(client)) == made, "cases were still made after the stop"


def test_a_worker_killed_mid_run_still_gives_every_case(cluster, local_run, tmp_path):
    import psutil

    local, client = cluster
    client.wait_for_workers(2)
    pids = client.run(os.getpid)
    before = len(_streamed(client))
    path = tmp_path / "killed.json"
    thread, out = _in_thread(SWEEP + ["--scheduler", local.scheduler_address, "--report", str(path)])
    # a worker that is in the middle of an op: it sent cases of a task it is still processing
    victim, deadline = None, time.monotonic() + 60
    while victim is None and time.monotonic() < deadline:
        started = {(m["worker"], m["task"]) for m in _streamed(client)[before:]}
        for worker, keys in client.processing().items():
            if any((worker, int(k.split("-")[3])) in started for k in keys if k.startswith("opkit-")):
                victim = worker
                break
        time.sleep(0.02)
    assert victim is not None, "no worker was seen in the middle of an op"
    backends = psutil.Process(pids[victim]).children(recursive=True)  # its onnxruntime worker process
    assert backends
    os.kill(pids[victim], signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive()
    report = json.loads(path.read_text())
    local_code, local_report = local_run
    assert _comparable(report) == _comparable(local_report)  # every case, as the local run gave them
    assert out["code"] == local_code
    assert report["settings"]["cluster"]["workers_lost"] >= 1
    # the killed worker's backend processes went with it (their lifeline closed)
    deadline = time.monotonic() + 10
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in backends):
        assert time.monotonic() < deadline, backends
        time.sleep(0.1)


def test_an_op_that_kills_its_workers_is_a_crash_case_not_retried_for_ever(cluster, tmp_path):
    local, client = cluster
    client.wait_for_workers(2)
    path = tmp_path / "killer.json"
    # --no-isolate: the backend runs in the Dask worker, and ends it at the first model it prepares
    code = main(["test", "--backend", "cluster_fakes:KillsItsProcess", "--no-isolate", "--op", "ai.onnx::Trilu",
                 "--suite", "differential", "--max-examples", "2", "--scheduler", local.scheduler_address,
                 "--no-repro", "--no-second-opinion", "--no-expectations", "-q", "--report", str(path)])
    report = json.loads(path.read_text())
    assert code == 1
    [case] = report["cases"]
    assert case["op"] == "Trilu" and case["outcome"] == "crash"
    assert case["details"]["stage"] == "cluster" and case["details"]["workers_died"] == 2
    assert "Dask worker(s) died while running this op" in case["message"]
    assert report["settings"]["cluster"]["workers_lost"] == 2


def test_a_killed_worker_with_the_backend_isolated_is_charged_to_opkit_not_the_backend():
    """With the backend in its own process, its deaths are already 'crash' cases: a Dask worker that
    died is opkit's runner (or the machine), so the op version is 'untested', as a -j pool's is."""
    from distributed import KilledWorker

    from opkit.run.cluster import Cluster
    from opkit.run.cluster_units import Unit
    from opkit.core.project import active

    class Dead:
        address = "tcp://10.0.0.7:4321"

    path = os.path.join(active().trees[0].specs, "ai.onnx", "Relu.yaml")
    cluster = Cluster("tcp://127.0.0.1:8786", "--scheduler")
    killed = KilledWorker("opkit-x-0-1-Relu-6", Dead(), 3)
    isolated = cluster._failed_record(Unit(path, "Relu", (6,), False), "onnxruntime", False, killed)  # no_isolate
    assert (isolated.outcome, isolated.version, isolated.details["workers_died"]) == ("untested", 6, 4)
    assert "tcp://10.0.0.7:4321" in isolated.message and "reported before" not in isolated.message
    in_process = cluster._failed_record(Unit(path, "Relu"), "onnxruntime", True, killed, finished=2)
    assert in_process.outcome == "crash" and "reported before this one" in in_process.message
    assert cluster.failed == []  # dying workers are the report's news, not a failed run


def test_a_version_and_the_older_ones_it_supersedes_are_one_task():
    """Their probes lean on the newer version's search (conformance.superseded): split apart, a Dask
    run searched the older versions in full and its report differed from a local run's."""
    from opkit.conformance import harness
    from opkit.run.cluster_units import units

    identity = harness.load_op("ai.onnx", "Identity")
    found = units([identity], max_bindings=64)
    newest = identity.versions[-1].since
    assert found[0].versions[0] == newest and len(found[0].versions) > 1
    assert sorted(s for u in found for s in u.versions) == sorted(v.since for v in identity.versions)
    assert found[-1].lowerings and not any(u.lowerings for u in found[:-1])


def test_an_op_is_split_by_version_with_its_lowerings_in_the_last_task():
    from types import SimpleNamespace as NS

    from opkit.run.cluster_units import Unit, units

    def version(since, types=2, properties=0, examples=0):
        return NS(since=since, type_constraints=(NS(types=("t",) * types),), properties=("p",) * properties,
                  examples=("e",) * examples, kernel=None, deprecated=False)

    relu = NS(path="/s/Relu.yaml", name="Relu", versions=[version(1), version(6), version(13), version(14, 8)])
    trilu = NS(path="/s/Trilu.yaml", name="Trilu", versions=[version(14, 20, properties=5, examples=18)])
    found = units([relu, trilu], max_bindings=64)
    # newest first, as a local run takes them (conformance.superseded: no kernels here, so no groups)
    assert found == [Unit("/s/Relu.yaml", "Relu", (14,), False), Unit("/s/Relu.yaml", "Relu", (13,), False),
                     Unit("/s/Relu.yaml", "Relu", (6,), False), Unit("/s/Relu.yaml", "Relu", (1,), True),
                     Unit("/s/Trilu.yaml", "Trilu", None, True)]
    assert [u.label for u in found] == ["Relu-14", "Relu-13", "Relu-6", "Relu-1", "Trilu"]
    # the expected cases (bindings x (differential + properties) + examples) set which task starts first
    assert [u.weight for u in found] == [8, 2, 2, 2, 20 * 6 + 18]
    # past max_bindings the other 16 bindings are probed, at a sixth of the cost each
    assert units([trilu], max_bindings=4)[0].weight == 4 * 6 + 16 // 6 + 18
