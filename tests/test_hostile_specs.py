"""Hostile spec files (findings of a security review): whatever a spec holds, ``opkit gen`` writes
inside the project only, and ``opkit validate`` answers with located errors; it never crashes,
prints a traceback, hangs or exhausts memory.

1. ``op`` and ``domain`` name generated files: only plain names are accepted (no ``../``, ``/``,
   whitespace, NUL, non-ASCII), and a spec sits in the folder of its domain.
2. Ops whose generated or spec files would be one file (``Trilu`` / ``TRILU``; ``GatherND`` /
   ``Gather_ND``, both ``gather_nd.py``) are reported, naming both files.
3. YAML a spec never needs is refused before it is composed: deep nesting, explicit tags, anchors
   and aliases; also dates, absurd numbers and huge files. Each document of HOSTILE is validated in
   its own process, under a time and a memory limit.
4. Kernel template params that are Python (``expr``, ``fn`` ...) are parsed and name-checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from opkit.emit.kernels import TEMPLATE_DIR, known_templates
from opkit.spec.embedded_python import TEMPLATE_CODE_PARAMS
from opkit.spec.load import load_spec_file, load_specs

SPEC = ("op: {op}\ndomain: {domain}\nversions:\n- since: 1\n  inputs:\n  - {{name: X, type: tensor(float)}}\n"
        "  outputs:\n  - {{name: Y, type: tensor(float)}}\n")
LOCATED = re.compile(r"^\S.*:[1-9][0-9]*:[1-9][0-9]*: error: \S.*$")


def opkit(cwd, *argv, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "OPKIT_PROJECT"}
    done = subprocess.run([sys.executable, "-m", "opkit.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)
    return done.returncode, done.stdout, done.stderr


# ---------------------------------------------------------------------------------------------
# 1. op and domain names


# written inside YAML double quotes, where \0 is a NUL, \t a tab and \n a line break
UNSAFE = ["../../x", "a/b", "/abs", "", "a\\0b", "a b", " a", "a\\tb", "a\\nb", "..", ".", "a..b", "a.", ".a",
          "C:\\\\x", "a\\\\b", "~", "Ωp", "1a", "a-b"]


@pytest.mark.parametrize("value", UNSAFE)
def test_unsafe_domain_is_a_located_error(value):
    text = SPEC.format(op="Good", domain=f'"{value}"')
    spec, diags = load_spec_file("specs/x/Good.yaml", text.encode())
    assert [(d.location.line, d.location.col) for d in diags] == [(2, 9)], diags
    assert "is not dot-separated identifiers" in diags[0].message


@pytest.mark.parametrize("value", UNSAFE)
def test_unsafe_op_name_is_a_located_error(value):
    text = SPEC.format(op=f'"{value}"', domain="test")
    spec, diags = load_spec_file("specs/test/Good.yaml", text.encode())
    assert [(d.location.line, d.location.col) for d in diags] == [(1, 5)], diags
    assert "is not an identifier" in diags[0].message


@pytest.mark.parametrize("domain", ["ai.onnx", "ai.onnx.preview.training", "com.microsoft", "_x.y2", "A"])
def test_plain_domains_are_accepted(domain):
    assert load_spec_file("<test>", SPEC.format(op="Good", domain=domain).encode())[1] == []


def _project(root, specs_folder="ops"):
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "p"\nversion = "0.1"\n\n[tool.opkit]\n'
                                         f'specs = ["{specs_folder}"]\ngenerated = "generated"\n')
    (root / specs_folder).mkdir()
    return root


def test_gen_cannot_write_outside_the_project(tmp_path):
    """The review's reproduction: a spec folder not called specs/ (so the folder check did not
    apply) and a domain climbing out of generated/ made `opkit gen` write beside the project."""
    project = _project(tmp_path / "a" / "project")
    domain = "../../../escaped"
    folder = project / "ops" / "x"
    folder.mkdir()
    (folder / "Esc.yaml").write_text(SPEC.format(op="Esc", domain=domain) + "  kernel: {python: return X}\n")
    code, out, err = opkit(project, "gen", "-q")
    assert code == 1, out + err
    assert f"Esc.yaml:2:9: error: domain {domain!r} is not dot-separated" in out, out
    written = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    assert all(path.startswith(str(project) + os.sep) for path in written), written
    assert not (project / "generated").exists()


def test_a_spec_folder_of_any_name_holds_domain_folders(tmp_path):
    project = _project(tmp_path / "p")
    (project / "ops" / "elsewhere").mkdir()
    (project / "ops" / "elsewhere" / "Good.yaml").write_text(SPEC.format(op="Good", domain="my.ops"))
    specs, diags = load_specs([str(project / "ops")])
    assert [str(d).split(": error: ")[1] for d in diags] == [
        "op 'Good' of domain 'my.ops' is in folder 'elsewhere'; move it to ops/my.ops/"]


# ---------------------------------------------------------------------------------------------
# 2. ops whose files collide


@pytest.mark.parametrize("first, second, why", [
    (("ai.onnx", "TRILU"), ("ai.onnx", "Trilu"), "differ only in case"),
    (("ai.onnx", "GatherND"), ("ai.onnx", "Gather_ND"), "both generate the module gather_nd.py"),
    (("ai.onnx", "GatherNd"), ("ai.onnx", "Gather_nd"), "both generate the module gather_nd.py"),
    (("AI.onnx", "Trilu"), ("ai.onnx", "Trilu"), "differ only in case"),
])
def test_ops_whose_files_collide_are_reported_naming_both(tmp_path, first, second, why):
    paths = []
    for domain, op in (first, second):
        (tmp_path / domain).mkdir(exist_ok=True)
        path = tmp_path / domain / f"{op}.yaml"
        path.write_text(SPEC.format(op=op, domain=domain))
        paths.append(str(path))
    specs, diags = load_specs([str(tmp_path)])
    assert len(specs) == 1 and len(diags) == 1, diags
    (diag,) = diags
    named = {diag.location.file} | {p for p in paths if p in diag.message}
    assert named == set(paths), str(diag)
    assert why in diag.message and (diag.location.line, diag.location.col) == (1, 1)


def test_ops_in_different_domains_may_share_a_name(tmp_path):
    for domain in ("ai.onnx", "com.microsoft"):
        (tmp_path / domain).mkdir()
        (tmp_path / domain / "Trilu.yaml").write_text(SPEC.format(op="Trilu", domain=domain))
    specs, diags = load_specs([str(tmp_path)])
    assert (len(specs), diags) == (2, [])


# ---------------------------------------------------------------------------------------------
# 3. hostile YAML, each document through `opkit validate` in a subprocess

BASE = SPEC.format(op="H", domain="test")


def doc(value: str) -> str:
    return BASE + f"  doc: {value}\n"


def laughs() -> str:
    """The billion laughs: 9 levels of 9 aliases to the level below (10^9 'lol's if expanded)."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n" + BASE


def with_since(value: str) -> str:
    return BASE.replace("- since: 1", f"- since: {value}")


def with_rule(holds: str) -> str:
    return BASE + f"  rules:\n  - {{label: C1, holds: '{holds}'}}\n"


DEEP = "values nest more than 100 levels deep"
TAG = "tags are not allowed in specs"
ALIAS = "anchors and aliases"
HOSTILE = {  # name: (file content, what the one error says)
    "deep_flow_lists": (doc("[" * 20000 + "]" * 20000), DEEP),  # ~50 KB, as in the review
    "deeper_flow_lists": (doc("[" * 100000 + "]" * 100000), DEEP),  # crashed the C composer
    "deep_flow_mappings": (doc("{a: " * 20000 + "1" + "}" * 20000), DEEP),
    "deep_mixed_flow": (doc("[{a: " * 10000 + "1" + "}]" * 10000), DEEP),
    "deep_block_lists": ("- " * 20000 + "x\n", DEEP),
    "deep_block_mappings": ("".join(" " * i + "k:\n" for i in range(300)) + " " * 300 + "v\n", DEEP),
    "tag_binary": (doc("!!binary aGVsbG8="), f"{TAG} (!!binary)"),
    "tag_int_not_a_number": (with_since("!!int abc"), f"{TAG} (!!int)"),
    "tag_float_not_a_number": (doc("!!float abc"), f"{TAG} (!!float)"),
    "tag_timestamp": (doc("!!timestamp 2001-01-01"), f"{TAG} (!!timestamp)"),
    "tag_python_object": (doc("!!python/object/apply:os.system ['echo pwned']"), f"{TAG} (!!python/object/apply"),
    "tag_python_name": (doc("!!python/name:os.system ''"), f"{TAG} (!!python/name:os.system)"),
    "tag_custom": (doc("!custom x"), f"{TAG} (!custom)"),
    "tag_custom_mapping": (doc("!custom {a: 1}"), f"{TAG} (!custom)"),
    "tag_custom_on_key": (BASE + "  !custom doc: x\n", f"{TAG} (!custom)"),
    "tag_nonspecific": (doc("! x"), f"{TAG} (!)"),
    "tag_verbatim": (doc("!<tag:yaml.org,2002:str> x"), f"{TAG} (!!str)"),
    "tag_str": (doc("!!str x"), f"{TAG} (!!str)"),
    "tag_set": (doc("!!set {a, b}"), f"{TAG} (!!set)"),
    "tag_omap": (doc("!!omap [a: 1]"), f"{TAG} (!!omap)"),
    "tag_directive": ("%TAG !e! tag:example.com,2000:\n---\n" + doc("!e!thing x"), f"{TAG} (tag:example.com"),
    "billion_laughs": (laughs(), ALIAS),
    "alias_to_itself": (doc("&a [*a]"), ALIAS),
    "alias_undefined": (doc("*nope"), ALIAS),
    "anchor_unused": (doc("&a x"), ALIAS),
    "merge_key": (doc("{<<: {a: 1}}"), "'doc' must be a string, got a mapping"),
    "huge_decimal": (with_since("9" * 50000), "is too large"),
    "huge_hex": (with_since("0x" + "F" * 50000), "is too large"),
    "number_without_digits": (with_since("0b_"), "'0b_' is not a valid number (hint: quote it"),
    "date": (with_since("2001-01-01"), "'2001-01-01' reads as a date"),
    "date_in_any_value": (BASE + "  attributes:\n    a: {type: int, default: 1}\n  examples:\n  - name: e\n"
                          "    attributes: {a: 2001-01-01}\n    inputs: {X: [1.0]}\n    outputs: {Y: [1.0]}\n",
                          "reads as a date"),
    "huge_op_name": ("op: " + "A" * (1 << 20) + "\ndomain: test\nversions:\n- since: 1\n", "must live in a file"),
    "huge_file": (doc("x" * (9 << 20)), "file is larger than 8 MB"),
    "invalid_utf8": (BASE.encode() + b"  doc: \xff\xfe\n", "file is not valid UTF-8 (byte 0xff)"),
    "overlong_utf8": (BASE.encode() + b"  doc: \xc0\xaf\n", "file is not valid UTF-8 (byte 0xc0)"),
    "utf8_surrogate": (BASE.encode() + b"  doc: \xed\xa0\x80\n", "file is not valid UTF-8 (byte 0xed)"),
    "bom_then_tab": ("\ufeff" + BASE + "\t- x\n", "tab character"),
    "bom_inside": (doc("a") + "\ufeff" + "x: 1\n", "YAML syntax error"),
    "tab_indent": (BASE.replace("  outputs:", "\toutputs:"), "tab character"),
    "nul_byte": (doc("a\0b"), "NUL bytes"),
    "control_character": (doc("a\x07b"), "invalid YAML"),
    "duplicate_key": (doc("a") + "  doc: b\n", "duplicate key 'doc'"),
    "duplicate_top_key": ("op: H\n" + BASE, "duplicate key 'op'"),
    "second_document": (BASE + "---\n" + BASE, "a second YAML document"),
    "deep_python": (with_rule("(" * 100000), "in rule C1"),
    "deep_python_unary": (with_rule("-" * 100000 + "1"), "in rule C1"),
    "deep_template_param": (BASE + "  kernel: {template: unary, params: {expr: '" + "(" * 5000 + "X" + ")" * 5000
                            + "'}}\n", "in kernel param 'expr'"),
}
TIME_LIMIT = 60  # seconds per document, process start included: each takes well under 2 on one core
MEMORY_LIMIT = 2 << 30  # bytes of address space; validating a spec needs a few hundred MB


def _limit_memory():  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_document_is_one_located_error(tmp_path, name):
    content, expected = HOSTILE[name]
    folder = tmp_path / name
    folder.mkdir()
    (folder / "H.yaml").write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    env = {k: v for k, v in os.environ.items() if k != "OPKIT_PROJECT"}
    done = subprocess.run([sys.executable, "-m", "opkit.cli", "validate", os.path.join(name, "H.yaml")],
                          cwd=tmp_path, capture_output=True, timeout=TIME_LIMIT, env=env,
                          preexec_fn=_limit_memory if sys.platform.startswith("linux") else None)
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert done.returncode == 1, (done.returncode, out[:2000], err[-2000:])
    lines = out.splitlines()
    assert len(lines) == 1 and LOCATED.match(lines[0]), out[:2000]
    assert lines[0].startswith(f"{name}/H.yaml:") and expected in lines[0], lines[0][:2000]
    assert len(lines[0]) < 400, "a value quoted in a message is shortened"
    assert err.count("\n") == 1 and ": 1 error" in err, err[-2000:]  # only the summary


def test_positions_of_hostile_documents():
    """Where the errors point: the first offending node, the tag or anchor as written."""
    def where(text: str) -> tuple[int, int]:
        (diag,) = load_spec_file("<test>", text.encode())[1]
        return diag.location.line, diag.location.col

    assert where(doc("[" * 200 + "]" * 200)) == (9, 8 + 97)  # level 101: the value of 'doc' is level 4
    assert where(doc("!!binary aGVsbG8=")) == (9, 8)
    assert where(laughs()) == (1, 5)  # the first anchor
    assert where("\ufeff" + BASE + "\t- x\n") == (9, 1)


# ---------------------------------------------------------------------------------------------
# 4. kernel template params that are code


@pytest.mark.parametrize("kernel, line, col, message", [
    ("{template: unary, params: {expr: 'np.abs(X +)'}}", 9, 55, "Python syntax error in kernel param 'expr'"),
    ("{template: unary, params: {expr: 'x = 1'}}", 9, 47, "Python syntax error in kernel param 'expr'"),
    ("{template: unary, params: {expr: np.abs(X), out: 'np.float32('}}", 9, 71,
     "Python syntax error in kernel param 'out'"),
    ("{template: binary, params: {expr: ''}}", 9, 45, "empty Python in kernel param 'expr'"),
    ("{template: reduce, params: {fn: np.sum, pre: 'lambda: ', empty: -np.inf}}", 9, 57,
     "Python syntax error in kernel param 'pre'"),
    ("{template: variadic, params: {fold: np.add)}}", 9, 53, "Python syntax error in kernel param 'fold'"),
    ("{template: call, params: {fn: 'import os'}}", 9, 42, "Python syntax error in kernel param 'fn'"),
    ("{template: unary, params: {expr: np.abs(Y)}}", 9, 51, "undefined name 'Y' in kernel param 'expr'"),
    ("{template: call, params: {fn: rms_nrom}}", 9, 41, "undefined name 'rms_nrom' in kernel param 'fn'"),
    ("{template: arg_reduce, params: {fn: np.argmax(}}", 9, 56, "Python syntax error in kernel param 'fn'"),
])
def test_template_param_code_is_checked(kernel, line, col, message):
    spec, diags = load_spec_file("<test>", (BASE + f"  kernel: {kernel}\n").encode())
    assert [(d.location.line, d.location.col) for d in diags] == [(line, col)], diags
    assert diags[0].message.startswith(message), diags[0].message


@pytest.mark.parametrize("kernel", [
    "{template: unary, params: {expr: np.abs(X), out: same}}",
    "{template: unary, params: {expr: np.abs(X), out: bool}}",
    "{template: reduce, params: {fn: np.sum, accumulate: float64}}",
    "{template: variadic, params: {fold: np.add, mean: true}}",
    "{template: call, params: {fn: rms_norm}}",
])
def test_template_params_that_are_not_code_or_are_fine(kernel):
    assert load_spec_file("<test>", (BASE + f"  kernel: {kernel}\n").encode())[1] == []


NOT_CODE = {"accumulate", "mean"}  # template params that steer the template (compared, not pasted)


def test_template_code_params_cover_every_template():
    """Every param a template reads is either code the validator checks or known not to be: a new
    template or param has to be classified here and in embedded_python.TEMPLATE_CODE_PARAMS."""
    assert set(TEMPLATE_CODE_PARAMS) == set(known_templates())
    for name in known_templates():
        with open(os.path.join(TEMPLATE_DIR, f"{name}.py.j2"), encoding="utf-8") as f:
            source = re.sub(r"\{#.*?#\}", "", f.read(), flags=re.S)  # not the comments
        read = set(re.findall(r"\bp\.(\w+)\b(?!\()", source)) | set(re.findall(r"\bp\.get\('(\w+)'", source))
        read.discard("get")
        assert read <= set(TEMPLATE_CODE_PARAMS[name]) | NOT_CODE, (name, read)
