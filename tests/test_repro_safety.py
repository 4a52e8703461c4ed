"""Repro bundles hold foreign text (the backend's message, its name and version, the case): it must
stay data (case.json), never become Python source in repro.py (opkit/conformance/repro.py).

A backend whose message would end repro.py's docstring and run code (``x\"\"\"; import os; open(
"PWNED", "w"); \"\"\"``) must produce a repro.py that parses, does not create PWNED when run, and
still shows the message.
"""

from __future__ import annotations

import ast
import json
import os

import pytest

from opkit.backends.registry import resolve
from opkit.conformance import harness
from opkit.conformance.repro import ReproWriter, _slug, repro_script
from opkit.conformance.backend_runner import BackendRunner
from opkit.conformance.runner import Runner
from opkit.conformance.worker import Worker
from test_conformance_fakes import _Fake
from test_conformance_repro import rerun

PAYLOAD = 'import os; open("PWNED", "w").write("owned")'
MESSAGES = {
    "triple double": f'x"""; {PAYLOAD}; """',
    "triple single": f"x'''; {PAYLOAD}; '''",
    "backslashes": f'x\\"""\\\\"""; {PAYLOAD}; """\\',
    "newlines": f'x"""\n{PAYLOAD}\n"""\n# \r\n{PAYLOAD}',
    "nul": f'x\x00"""; {PAYLOAD}; """\x00',
    "format": f'{{__import__("os").system("touch PWNED")}} %s %(x)s"""; {PAYLOAD}; """',
    "escape sequences": f'\x1b[2J\x1b]0;title\x07"""; {PAYLOAD}; """\u202e',
}


def _refuses_with(message: str) -> type:
    class Refuses(_Fake):
        @classmethod
        def prepare(cls, model, device="CPU", **kwargs):
            raise RuntimeError(message)

    return Refuses


_CLASSES = {}
for _i, (_name, _message) in enumerate(sorted(MESSAGES.items())):
    _CLASSES[_name] = f"Hostile{_i}"
    globals()[f"Hostile{_i}"] = _refuses_with(_message)


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_hostile_message_stays_data(tmp_path, name, monkeypatch):
    """A backend refuses the model with a hostile message: bundles written, rerun standalone."""
    monkeypatch.chdir(tmp_path)
    spec = harness.load_op("ai.onnx", "Trilu")
    backend_spec = resolve(f"test_repro_safety:{_CLASSES[name]}")
    with Worker(backend_spec) as worker:
        backend = BackendRunner(worker)
        repro = ReproWriter(str(tmp_path / "bundles"), backend_spec, backend.info, backend.ir_version)
        runner = Runner(backend, max_examples=3, seed=3, repro=repro)
        runner.run_differential(spec, spec.version(14), [{"T": "tensor(float)"}])
    results = runner.results
    assert results and all(r.repro for r in results)
    for rec in results:
        folder = rec.repro
        if not os.path.isabs(folder):
            folder = os.path.join(str(tmp_path), folder)
        meta = json.load(open(os.path.join(folder, "case.json"), encoding="utf-8"))
        assert PAYLOAD in meta["message"]  # the message is kept, as data
        source = open(os.path.join(folder, "repro.py"), encoding="utf-8").read()
        ast.parse(source)  # (a) parses
        assert "PWNED" not in source and PAYLOAD not in source  # nothing foreign in the source
        proc = rerun(folder)
        assert not os.path.exists(os.path.join(folder, "PWNED"))  # (b) runs no code from the message
        assert not os.path.exists(tmp_path / "PWNED")
        assert proc.returncode == 1, proc.stderr
        assert PAYLOAD in proc.stdout  # (c) still shows the message (control characters escaped)
        assert "recorded:" in proc.stdout and "\x1b" not in proc.stdout and "\x00" not in proc.stdout


def test_script_is_the_same_for_every_bundle():
    """Every foreign field of case.json: the script does not change, so none is pasted into it."""
    hostile = MESSAGES["triple double"]
    meta = {"op": hostile, "domain": hostile, "version": hostile, "types": {hostile: hostile},
            "suite": hostile, "example": hostile, "outcome": hostile, "message": hostile, "case": hostile,
            "backend": {"name": hostile, "version": hostile, "target": hostile, "api": hostile, "options": {}}}
    assert repro_script(meta) == repro_script({}) and "PWNED" not in repro_script(meta)
    ast.parse(repro_script(meta))


def test_folder_names_stay_in_the_repro_folder():
    for text in ("..", ".", "../../etc", "a/../../b", "/abs", "x\x00y"):
        slug = _slug(text)
        assert slug not in (".", "..") and "/" not in slug and "\x00" not in slug and os.sep not in slug
