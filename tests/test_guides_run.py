"""The guides' command blocks run as written, in an empty folder, with the opkit under test.

docs/custom-op.md marks its hands-on block with ``<!-- guide-commands -->``; each line runs in a
fresh temporary folder (``pip install`` lines are checked to name an extra opkit has, not run: the
opkit under test is already installed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from opkit.core.project import KEYS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def marked_block(path: str, marker: str) -> list[str]:
    text = open(path, encoding="utf-8").read()
    match = re.search(rf"<!-- {marker} -->\s*```\w*\n(.*?)```\s*<!-- /{marker} -->", text, re.S)
    assert match, f"{path}: no <!-- {marker} --> block"
    return [line.split("#", 1)[0].strip() for line in match.group(1).splitlines() if line.strip()]


def test_custom_op_guide_runs_as_written(tmp_path):
    pytest.importorskip("sphinx")
    lines = marked_block(os.path.join(ROOT, "docs", "custom-op.md"), "guide-commands")
    extras = re.search(r"\[project.optional-dependencies\](.*?)\n\[", open(os.path.join(ROOT, "pyproject.toml")).read(),
                       re.S).group(1)
    script = ["set -euo pipefail"]
    for line in lines:
        if line.startswith("pip install"):
            for extra in re.findall(r"opkit\[([^\]]+)\]", line):
                for name in extra.split(","):
                    assert re.search(rf"^{name.strip()} = ", extras, re.M), f"the guide installs unknown extra {name}"
            continue
        script.append(line)
    env = {k: v for k, v in os.environ.items() if k != "OPKIT_PROJECT"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    project = tmp_path / "myops"
    assert (project / "generated" / "kernels" / "my.ops" / "scaled_tanh.py").exists()
    assert (project / "build" / "docs" / "operators" / "my.ops" / "ScaledTanh.html").exists()
    assert "14 pass" in done.stderr


def test_every_config_key_is_documented():
    text = open(os.path.join(ROOT, "docs", "install.md"), encoding="utf-8").read()
    table = text[text.index("### The `[tool.opkit]` table"):]
    for key in KEYS:
        assert f"| `{key}` |" in table, f"docs/install.md does not describe [tool.opkit] {key}"


def test_readme_main_command_runs_in_a_fresh_folder(tmp_path):
    """The README's main job, after its install step, exactly as written, in an empty folder:
    `--report reports/...` names a folder that does not exist yet."""
    pytest.importorskip("onnxruntime")
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    match = re.search(r"<!-- main-command -->\s*```\w*\n(.*?)```\s*<!-- /main-command -->", readme, re.S)
    assert match, "README.md: no main-command block"
    install, _, command = match.group(1).strip().partition(" && ")
    assert install.startswith("python -m pip install") and command.startswith("opkit test ")
    env = {k: v for k, v in os.environ.items() if k != "OPKIT_PROJECT"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = re.search(r"--report (\S+)", command).group(1)
    assert (tmp_path / report).exists()
