"""``opkit gen`` and the files it reads and writes: broken committed reports, paths outside the
generated folder, two gens at once, disk errors, machine paths in reports, inputs kept out of
generated/.

Most tests build a small project in a temporary folder (``opkit init``) and run the real CLI in a
subprocess there, as a user would; a few call ``generate`` in-process to inject a failure.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import re
import subprocess
import sys
import time

import pytest

from opkit.emit import write_generated as gen_module
from opkit.emit import coverage, docs_pages, scoreboard
from opkit.core.project import discover, using

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_SPACE = os.strerror(errno.ENOSPC)


# the `opkit` console script: unlike `python -m`, it does not import from the current folder (where
# a builtin project's generated opkit/spec/schema.json would shadow the opkit package)
CLI = [sys.executable, "-c", "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
                             "from opkit.cli import main; sys.exit(main(sys.argv[1:]))"]


def opkit(cwd, *argv, env=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "OPKIT_PROJECT"} | (env or {})
    done = subprocess.run([*CLI, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return done.returncode, done.stdout, done.stderr


def _env():
    return {k: v for k, v in os.environ.items() if k != "OPKIT_PROJECT"}


@pytest.fixture
def project(tmp_path):
    """A fresh project of one op (``opkit init``), nothing generated yet."""
    code, out, err = opkit(tmp_path, "init")
    assert code == 0, err
    return tmp_path


@pytest.fixture
def builtin_project(project):
    """The same project marked ``builtin = true``: it gets opkit's own pages too (scoreboard,
    coverage), which read conformance/reports/*.json and conformance/onnx-node-results.json."""
    config = project / "pyproject.toml"
    config.write_text(config.read_text().replace("[tool.opkit]\n", "[tool.opkit]\nbuiltin = true\n", 1))
    return project


def _files(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, n), folder) for r, _, names in os.walk(folder) for n in names)


def _temp_files(folder) -> list[str]:
    return [f for f in _files(folder) if ".tmp-" in os.path.basename(f)]


def _report(message="values differ", **backend) -> dict:
    return {"format": "opkit-conformance-report/1",
            "target": {"backends": [{"name": "fakert", "version": "1.0", **backend}], "opkit": "0", "onnx": "0",
                       "numpy": "0", "seed": 0, "machine": {"platform": "x", "cpu_count": 1}},
            "settings": {"expectations": []}, "summary": {"total": 1, "outcomes": {"mismatch": 1}, "ok": False,
                                                         "duration_s": 0.0},
            "cases": [{"backend": "fakert", "suite": "differential", "op": "ScaledTanh", "domain": "my.ops",
                       "version": 1, "types": {"T": "tensor(float)"}, "example": "differential",
                       "outcome": "mismatch", "message": message, "repro": None}]}


# ------------------------------------------------------------------------------------------------
# 1. a truncated or corrupt committed report: one line naming file, line and column; exit 1


TRUNCATED = '{\n "format": "opkit-conformance-report/1",\n "cases": [\n  {"op": "ScaledTanh", "outcome": "pa'
REPORT_FILES = {
    "scoreboard": "conformance/reports/fakert.json",
    "coverage": "conformance/onnx-node-results.json",
    "docs_pages": "conformance/reports/fakert.json",  # op pages read the scoreboard's reports
}


@pytest.mark.parametrize("emitter", sorted(REPORT_FILES))
def test_a_corrupt_report_is_one_line_naming_file_line_and_column(builtin_project, emitter):
    rel = REPORT_FILES[emitter]
    path = builtin_project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TRUNCATED)
    with pytest.raises(json.JSONDecodeError) as decode:
        json.loads(TRUNCATED)
    where = f"{rel}:{decode.value.lineno}:{decode.value.colno}: not valid JSON ("
    for argv in (["gen"], ["gen", "--check"], ["gen", "-q"]):
        code, out, err = opkit(builtin_project, *argv)
        assert code == 1, (argv, out, err)
        assert "Traceback" not in err, err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(where), lines[0]
        assert re.search(rf"run `opkit test .*--report {re.escape(rel)}` again or delete it$", lines[0]), lines[0]
    # nothing was written: the broken input stops gen before the write phase
    assert not (builtin_project / "generated").exists()
    # deleting it (as the message says) is enough
    path.unlink()
    assert opkit(builtin_project, "gen", "-q")[0] == 0
    assert opkit(builtin_project, "gen", "--check", "-q")[0] == 0


def test_read_json_errors(tmp_path):
    from opkit.core.jsonfiles import JSONFileError, read_json

    with pytest.raises(JSONFileError, match=r"nope\.json: cannot read: No such file or directory$"):
        read_json(str(tmp_path / "nope.json"))
    (tmp_path / "r.json").write_text('{"a": [1, 2,\n  }')
    with pytest.raises(JSONFileError, match=r"r\.json:2:3: not valid JSON \(.*\): run `opkit test \.\.\. --report "
                                            r".*r\.json` again or delete it$"):
        read_json(str(tmp_path / "r.json"))


def test_not_utf8_and_wrong_documents_are_located(tmp_path):
    from opkit.core.jsonfiles import JSONFileError

    results = tmp_path / coverage.RESULTS
    results.parent.mkdir(parents=True)
    results.write_bytes(b'{\n "suite": "onnx-node",\n "x": "\xff"}')
    with pytest.raises(JSONFileError, match=r"onnx-node-results\.json:3:8: not valid JSON \(not UTF-8 text\): run "
                                            r"`opkit test --backend reference --suite onnx-node --report .*` again"):
        coverage._results(str(tmp_path))
    results.write_text("[1, 2]")
    with pytest.raises(JSONFileError, match=r"not an onnx-node suite report"):
        coverage._results(str(tmp_path))
    (tmp_path / "conformance" / "reports").mkdir()
    (tmp_path / "conformance" / "reports" / "dir.json").mkdir()
    with pytest.raises(JSONFileError, match=r"dir\.json: cannot read: Is a directory"):
        scoreboard.load(str(tmp_path))


def test_valid_json_that_is_not_a_report_is_still_ignored(tmp_path):
    for rel in (f"{scoreboard.REPORTS}/other.json", docs_pages.REPORTS_GLOB.replace("*", "other")):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"suite": "onnx-node", "cases": {}}))
    assert scoreboard.load(str(tmp_path)) == []
    assert docs_pages.load_reports(str(tmp_path)) == []


# ------------------------------------------------------------------------------------------------
# 2. output paths stay under their root


def test_write_files_refuses_paths_outside_the_roots(tmp_path):
    from opkit.core.atomic_files import WriteError, write_files

    root = tmp_path / "generated"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    for bad in (str(root / ".." / "evil.md"), str(root / "link" / "evil.md"), str(tmp_path / "evil.md")):
        files = {str(root / "ok.md"): "ok\n", bad: "evil\n"}
        with pytest.raises(WriteError, match="refusing to write outside"):
            write_files(files, roots=(str(root),))
        assert not (root / "ok.md").exists(), "nothing is written when one path escapes"
        assert _files(outside) == [] and not (tmp_path / "evil.md").exists()
    # a managed folder outside the roots would have its files removed as stale: refused too
    (outside / "keep.txt").write_text("mine")
    with pytest.raises(WriteError, match="refusing to clean a folder outside"):
        write_files({str(root / "ok.md"): "ok\n"}, managed_dirs=(str(outside),), roots=(str(root),))
    assert (outside / "keep.txt").exists()
    result = write_files({str(root / "sub" / "ok.md"): "ok\n"}, roots=(str(root),))
    assert result.written == (str(root / "sub" / "ok.md"),)


def _in_process_gen(folder, monkeypatch, capsys, **kwargs):
    monkeypatch.chdir(folder)
    with using(discover(str(folder))) as project:
        code = gen_module.generate(project, verbose=False, **kwargs)
    out, err = capsys.readouterr()
    return code, out, err


def test_gen_refuses_an_emitter_path_outside_generated(project, monkeypatch, capsys):
    real = gen_module.emitters

    def with_hostile():
        return real() + [("hostile", lambda ctx: {"generated/../../evil.md": "evil\n"}, ())]

    monkeypatch.setattr(gen_module, "emitters", with_hostile)
    code, out, err = _in_process_gen(project, monkeypatch, capsys)
    assert code == 1
    assert "refusing to write outside" in err and "(emitter hostile)" in err, err
    assert not (project.parent / "evil.md").exists()
    assert not (project / "generated").exists(), "nothing is written, not even the other emitters' files"


def test_gen_refuses_a_hostile_spec_domain(project, monkeypatch, capsys):
    """Spec-name validation should reject a domain like ``../../../evil``; if one gets through,
    the kernels, tests and page emitters build paths from it and the writer refuses them."""
    real = gen_module.load_specs

    def hostile(folders):
        specs, diags = real(folders)
        return [dataclasses.replace(s, domain="../../../evil") for s in specs], diags

    monkeypatch.setattr(gen_module, "load_specs", hostile)
    code, out, err = _in_process_gen(project, monkeypatch, capsys)
    assert code == 1 and "refusing to write outside" in err, err
    assert not (project.parent / "evil").exists() and not (project.parent.parent / "evil").exists()
    assert not (project / "generated").exists()


# ------------------------------------------------------------------------------------------------
# 3. two opkit gen at once

SLOW_GEN = """
import os, sys, time
real, first = os.replace, [True]

def slow_replace(src, dst):
    if first and first.pop():  # the first file: its temp file exists until the test releases us
        open(sys.argv[1], "w").close()
        deadline = time.monotonic() + 120
        while not os.path.exists(sys.argv[2]) and time.monotonic() < deadline:
            time.sleep(0.02)
    return real(src, dst)

os.replace = slow_replace
from opkit.cli import main
sys.exit(main(["gen"]))
"""


def test_a_second_gen_waits_for_the_first(project, tmp_path_factory):
    """The first gen stops in the middle of writing (a temp file exists) until the second one has
    either said it waits or finished. Without a lock the second removes the first one's temp file as
    stale (or the first removes a file the second just wrote): a traceback."""
    sync = tmp_path_factory.mktemp("sync")
    writing, release = sync / "writing", sync / "release"
    first = subprocess.Popen([sys.executable, "-c", SLOW_GEN, str(writing), str(release)], cwd=project, env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = None
    try:
        deadline = time.monotonic() + 120
        while not writing.exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first gen never started writing"
            time.sleep(0.02)
        second = subprocess.Popen([*CLI, "gen"], cwd=project, env=_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        seen = []
        for line in second.stderr:  # until it waits (or, unlocked, runs to the end)
            seen.append(line)
            if "waiting for another opkit gen" in line:
                break
        release.touch()
        out1, err1 = first.communicate(timeout=120)
        out2, rest = second.communicate(timeout=120)
        err2 = "".join(seen) + rest
    finally:
        release.touch()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert "Traceback" not in err1 + err2
    assert "waiting for another opkit gen" in err2, err2
    assert _temp_files(project) == []
    assert opkit(project, "gen", "--check", "-q")[0] == 0


def test_two_gens_started_together_both_succeed(project):
    procs = [subprocess.Popen([*CLI, "gen"], cwd=project, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    for code, err in results:
        assert code == 0 and "Traceback" not in err, err
    assert _temp_files(project) == []
    code, out, err = opkit(project, "gen", "--check", "-q")
    assert code == 0, out + err


def test_gen_gives_up_with_a_clear_message_after_the_timeout(project, monkeypatch, capsys):
    lock = project / ".opkit" / "gen.lock"
    lock.parent.mkdir()
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another gen is writing
        monkeypatch.setenv("OPKIT_GEN_LOCK_TIMEOUT", "0.3")
        start = time.monotonic()
        code, out, err = _in_process_gen(project, monkeypatch, capsys)
        assert time.monotonic() - start < 30
    assert code == 1
    assert "waiting for another opkit gen" in err
    assert "gave up after 0.3 s waiting for another opkit gen" in err and "OPKIT_GEN_LOCK_TIMEOUT" in err, err
    assert not (project / "generated").exists()


# ------------------------------------------------------------------------------------------------
# 4. read-only or full disk: one line naming the file and the reason, no temp file left


def _fail_replace(code):
    def replace(src, dst):
        raise OSError(code, os.strerror(code))
    return replace


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_write_files_names_the_file_and_removes_its_temp_file(tmp_path, monkeypatch, code):
    from opkit.core.atomic_files import WriteError, write_files

    target = tmp_path / "out" / "a.md"
    monkeypatch.setattr(os, "replace", _fail_replace(code))
    with pytest.raises(WriteError) as exc:
        write_files({str(target): "text\n"})
    message = str(exc.value)
    assert message.endswith(f"a.md: cannot write: {os.strerror(code)}") and "\n" not in message, message
    assert _temp_files(tmp_path) == [] and not target.exists()


def test_a_failing_write_leaves_no_temp_file(tmp_path, monkeypatch):
    from opkit.core import atomic_files as writer
    from opkit.core.atomic_files import WriteError, write_files

    real_open = open

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            self.f.write(text[:10])
            raise OSError(errno.ENOSPC, NO_SPACE)

    def fake_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return Full(f) if "w" in mode else f

    monkeypatch.setattr(writer, "open", fake_open, raising=False)
    target = tmp_path / "a.md"
    target.write_text("old\n")
    with pytest.raises(WriteError, match=f"a.md: cannot write: {NO_SPACE}$"):
        write_files({str(target): "new text\n"})
    assert target.read_text() == "old\n", "the old file is untouched"
    assert _temp_files(tmp_path) == []


def test_gen_on_a_full_disk_exits_1_with_one_line(project, monkeypatch, capsys):
    monkeypatch.setattr(os, "replace", _fail_replace(errno.ENOSPC))
    code, out, err = _in_process_gen(project, monkeypatch, capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(rf"opkit gen: generated/\S+: cannot write: {NO_SPACE}$", lines[0]), err
    assert _temp_files(project) == []


@pytest.fixture
def tiny_mount(project):
    """``project/generated`` on a tmpfs: ``size=12k`` fills up, ``ro`` is read-only (even for root,
    which chmod does not stop). Skipped where mounting is not allowed."""
    mounted = []

    def mount(options):
        folder = project / "generated"
        folder.mkdir(exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="needs root to mount a tmpfs")
@pytest.mark.parametrize("options, reason", [("size=12k", NO_SPACE), ("ro,size=64k", os.strerror(errno.EROFS))])
def test_gen_on_a_real_full_or_read_only_disk(project, tiny_mount, options, reason):
    folder = tiny_mount(options)
    code, out, err = opkit(project, "gen")
    assert code == 1, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert re.match(rf"opkit gen: generated/\S+: cannot write: {re.escape(reason)}$", last), err
    assert _temp_files(folder) == []


# ------------------------------------------------------------------------------------------------
# 5. machine paths: not in committed reports, not carried into pages

# an absolute path into a machine's folders ("/tmp/..." is the placeholder pages use for temp files)
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|home|Users|root|tmp|private/var)/(?!\.\.\.)")


def test_committed_reports_and_pages_carry_no_machine_paths():
    leaks = []
    for folder in ("conformance", "generated"):
        for rel in _files(os.path.join(ROOT, folder)):
            if not rel.endswith((".json", ".md")):
                continue
            with open(os.path.join(ROOT, folder, rel), encoding="utf-8") as f:
                found = MACHINE_PATH.search(f.read())
            if found:
                leaks.append(f"{folder}/{rel}: {found.group(0)}")
    assert not leaks, "absolute paths of the machine a report was made on: " + ", ".join(leaks[:10])


def test_pages_do_not_carry_machine_paths_from_reports(tmp_path):
    message = ('values differ in /home/bob/proj/generated/kernels/my_ops/x.py and /tmp/pytest-7/x.onnx '
               '(see /work/main/.venv/lib/python3.11/site-packages/fakert/core.py)')
    report = _report(message, library="/home/bob/.local/lib/libfakert.so")
    report["settings"]["expectations"] = ["/work/main/conformance/expectations/fakert.yaml"]
    for rel in (f"{scoreboard.REPORTS}/fakert.json", docs_pages.REPORTS_GLOB.replace("*", "fakert")):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report))
    pages = scoreboard.render(str(tmp_path), scoreboard.load(str(tmp_path)))
    text = "\n".join(pages.values())
    assert "libfakert.so" in text and "values differ" in text
    assert not MACHINE_PATH.search(text), text
    loaded = docs_pages.load_reports(str(tmp_path))
    assert loaded[0]["settings"]["expectations"] == ["conformance/expectations/fakert.yaml"]
    assert not MACHINE_PATH.search(json.dumps(loaded))
    assert "generated/kernels/my_ops/x.py" in loaded[0]["cases"][0]["message"]
    results = tmp_path / coverage.RESULTS
    results.write_text(json.dumps({"format": "opkit-conformance-report/1", "target": {"onnx": "1"},
                                   "cases": [{"backend": "reference", "suite": "onnx-node", "op": "ScaledTanh",
                                              "domain": "ai.onnx", "version": 1, "types": {}, "example": "test_x",
                                              "outcome": "mismatch", "message": message, "repro": None}]}))
    page = coverage.render([], coverage._results(str(tmp_path)))
    assert "test_x" in page and not MACHINE_PATH.search(page), page


def test_portable_paths_depend_on_the_text_only():
    from opkit.core.jsonfiles import portable_text

    assert portable_text("/work/main/conformance/expectations/ort.yaml") == "conformance/expectations/ort.yaml"
    assert portable_text("/anywhere/else/conformance/expectations/ort.yaml") == "conformance/expectations/ort.yaml"
    assert portable_text("at /tmp/python-build.1/Python-3.11.7/Modules/x.c:9") == "at /tmp/..."
    assert portable_text("open /home/ann/notes.txt") == "open ~/notes.txt"
    for same in ("see https://onnx.ai/onnx/docs/Operators.md", "docs/findings/iree/a/repro.py",
                 "tensor(float)/tensor(double)", "1/2", "no paths"):
        assert portable_text(same) == same


# ------------------------------------------------------------------------------------------------
# 6. generated/ holds only what opkit gen writes


def test_generated_holds_only_what_gen_rebuilds():
    with using(discover(ROOT)) as project:
        assert project.builtin
        ctx = gen_module.GenContext(tuple(gen_module.load_specs([t.specs for t in project.trees])[0]), project.root)
        produced = set()
        for _name, emit, _owned in gen_module.emitters_for(project):
            produced |= {os.path.normpath(gen_module._target(project, p)) for p in emit(ctx)}
        generated = project.generated
    extra = []
    for root, dirs, names in os.walk(generated):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        extra += [os.path.relpath(os.path.join(root, n), ROOT) for n in names
                  if os.path.normpath(os.path.join(root, n)) not in produced]
    assert not extra, f"files under generated/ that opkit gen does not write (inputs belong elsewhere): {extra}"


def test_emitter_inputs_live_outside_generated():
    for path in (coverage.RESULTS, docs_pages.REPORTS_GLOB, scoreboard.REPORTS):
        assert not path.startswith("generated/"), path
    assert os.path.exists(os.path.join(ROOT, coverage.RESULTS))
