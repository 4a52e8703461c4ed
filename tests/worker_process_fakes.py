"""Fake opkit backends for tests/test_worker_processes.py: they start processes, hang in Python or
in C (every signal blocked, the GIL held), reserve virtual memory or use resident memory.

The module holds no tests; the tests load these classes as ``worker_process_fakes:Class`` (tests/
is on sys.path of the worker, which inherits the parent's). ``tag`` (a backend option) marks the
``sleep`` processes a backend starts (``sleep 1000.<tag>``) so that a test can find them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

from opkit.backends.base import BackendBase


def start_sleep(tag: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(["sleep", f"1000.{tag}"], **kwargs)


def hang_in_c() -> None:
    """Block every signal, then spin in C holding the GIL (a regex with catastrophic
    backtracking): no signal, no Python-level timer and no other thread of this process can stop
    it; only a SIGKILL from outside can."""
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    re.match(r"(a+)+$", "a" * 64 + "b")


class _Session:
    def __init__(self, backend):
        self.backend = backend

    def run(self, feeds):
        return self.backend.act(feeds)


class _Fake(BackendBase):
    name = "fake"

    def __init__(self, tag: str | None = None, mb: int = 0, threads: int = 0):
        tag = tag if tag is not None else os.environ.get("OPKIT_TEST_TAG", "0")  # the CLI takes no options
        self.tag, self.mb, self.threads = str(tag), int(mb), int(threads)
        self.children: list[subprocess.Popen] = []
        self.keep: list = []

    def version(self) -> str:
        return "0.0-fake"

    def prepare(self, model_bytes: bytes):
        return _Session(self)

    def act(self, feeds):
        return [feeds[k] for k in sorted(feeds)]


class ForksAndHangs(_Fake):
    """Starts ``sleep`` and hangs (in Python, time.sleep)."""

    def act(self, feeds):
        self.children.append(start_sleep(self.tag))
        time.sleep(1000)


class EscapesAndHangs(_Fake):
    """Starts ``sleep`` in a session of its own (outside the worker's process group) and hangs."""

    def act(self, feeds):
        self.children.append(start_sleep(self.tag, start_new_session=True))
        time.sleep(1000)


class ForksAndHangsInC(_Fake):
    """Starts ``sleep`` and hangs in C with every signal blocked and the GIL held."""

    def act(self, feeds):
        self.children.append(start_sleep(self.tag))
        hang_in_c()


class ForksAndAborts(_Fake):
    """Starts ``sleep`` and aborts (a crash)."""

    def act(self, feeds):
        self.children.append(start_sleep(self.tag))
        os.abort()


class ForksAndReturns(_Fake):
    """Starts ``sleep`` (kept running) and answers normally."""

    def act(self, feeds):
        self.children.append(start_sleep(self.tag))
        return super().act(feeds)


class PythonLoop(_Fake):
    def act(self, feeds):
        while True:
            pass


class CLoop(_Fake):
    def act(self, feeds):
        hang_in_c()


class ReservesThreads(_Fake):
    """Like an engine's thread pool: ``threads`` threads with 256 MiB stacks (virtual memory,
    hardly any of it resident) alive while it runs."""

    def act(self, feeds):
        threading.stack_size(256 << 20)
        stop = threading.Event()
        started = []
        try:
            for _ in range(self.threads):
                t = threading.Thread(target=stop.wait)
                t.start()
                started.append(t)
        finally:
            stop.set()
            for t in started:
                t.join()
            threading.stack_size(0)
        return super().act(feeds)


class UsesMemory(_Fake):
    """Makes ``mb`` MiB resident (written, not just reserved) and keeps it."""

    def act(self, feeds):
        self.keep.append(b"\x01" * (self.mb << 20))
        time.sleep(1000)


class ChildUsesMemory(_Fake):
    """Starts a Python child that makes ``mb`` MiB resident; the worker itself stays small."""

    def act(self, feeds):
        code = f"import time; x = b'\\x01' * ({self.mb} << 20); time.sleep(1000)  # 1000.{self.tag}"
        self.children.append(subprocess.Popen([sys.executable, "-c", code]))
        time.sleep(1000)


class OrtManyThreads(_Fake):
    """onnxruntime with a thread pool of ``threads`` threads, as a custom ``module:Class`` backend
    gets on a many-core machine (onnxruntime sizes its pool by the cores). Each pool thread that
    allocates gets its own glibc malloc arena (64 MiB reserved) when $GLIBC_TUNABLES allows as many
    arenas as a many-core machine has: gigabytes of address space, little of it resident."""

    def prepare(self, model_bytes: bytes):
        import onnxruntime as ort
        from onnx import TensorProto, helper

        node = helper.make_node("MatMul", ["x", "x"], ["y"])
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

        class Session:
            def run(self, feeds):
                import numpy as np

                return session.run(None, {"x": np.ones((512, 512), np.float32)})

        return Session()


class ForksSharingMemory(_Fake):
    """Makes ``mb`` MiB resident, then forks ``threads`` children that share it (copy-on-write,
    never written) and hangs: the RSS sum counts it 1 + ``threads`` times, the PSS sum once."""

    def act(self, feeds):
        self.keep.append(b"\x01" * (self.mb << 20))
        for _ in range(self.threads):
            if os.fork() == 0:
                try:
                    time.sleep(1000)
                finally:
                    os._exit(0)
        time.sleep(1000)


class Talks(_Fake):
    """Writes to its stdout and stderr as runtimes do: a warning on every case, and, when the first
    input value is 1, a C++ runtime's last words (with a terminal colour code) before it aborts; 2 or
    more: a line, then a hang."""

    def act(self, feeds):
        os.write(1, b"ordinary warning on stdout\n")
        os.write(2, b"\x1b[0;93m2026 [W:fake] an ordinary warning\x1b[m\n")
        value = float(next(iter(feeds.values())).flat[0])
        if value >= 2:
            os.write(2, b"waiting for a lock that never comes\n")
            time.sleep(1000)
        if value:
            os.write(2, b"random.h:1901: Assertion '_M_a <= _M_b' failed.\r\n"
                        b"terminate called without an active exception\n")
            os.abort()
        return super().act(feeds)
