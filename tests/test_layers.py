"""The layer rule (docs/design.md): each package of opkit imports only from the layers below it.

Every import counts: module-level ones, those inside functions (which hide cycles from a plain
import at start-up), and ``importlib.import_module("opkit....")`` with a literal name. A package
may import itself freely; any import of a package on its own layer or above fails here, naming the
file, the line and both layers.
"""

from __future__ import annotations

import ast
import os

import pytest

import opkit

# bottom to top; a package imports only from packages before it in this list
LAYERS = (
    ("core",),          # dtype and element tables, naming, files, project settings
    ("spec",),          # the spec model, loader, catalog, parsed rules
    ("importers",),     # onnx / onnxruntime schemas -> specs
    ("kernels",),       # reference kernels by family, the kernel registry
    ("cases",),         # Case, draws, bindings, fixed and edge cases, family hooks, the ONNX model builder
    ("backends",),      # runtimes behind one protocol
    ("results",),       # outcomes, the typed record, reports, causes, verdict words, recall, matrix
    ("conformance",),   # the engine: harness, comparison, runner, worker, repro, second opinion
    ("suites",),        # suites built on the engine (onnx's node tests)
    ("emit",),          # pure emitters: specs and reports -> generated files
    ("run",),           # opkit test: options, RunConfig, jobs, pool, interrupts, cluster
    ("commands",),      # every subcommand, the command table, exit codes
    ("cli", "pytest_plugin"),  # entry points: the parser, the pytest plugin
    ("__main__",),      # python -m opkit
)
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
PACKAGE_DIR = os.path.dirname(os.path.abspath(opkit.__file__))


def _modules():
    for folder, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))[:-3].replace(os.sep, ".")
                is_package = rel.endswith(".__init__")
                yield path, rel[: -len(".__init__")] if is_package else rel, is_package


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None  # opkit itself (the version) is below everything


def _imports(path: str, module: str, is_package: bool):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from opkit import results` reaches a package
                yield node.lineno, f"{target}.{alias.name}"
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def violations() -> list[str]:
    found: dict[tuple, str] = {}
    for path, module, is_package in _modules():
        source = _layer(module)
        if source is None:
            continue
        assert source in RANK, f"{path}: package {source!r} has no layer in tests/test_layers.py LAYERS"
        for line, target in _imports(path, module, is_package):
            if not target.startswith("opkit."):
                continue
            layer = _layer(target)
            if layer is None or layer == source or layer not in RANK:
                continue
            if RANK[layer] >= RANK[source]:
                where = f"{os.path.relpath(path, os.path.dirname(PACKAGE_DIR))}:{line}"
                found.setdefault((where, layer), f"{where}: {source} (layer {RANK[source]}) imports {target} "
                                                 f"(layer {RANK[layer]})")
    return list(found.values())


def test_no_import_goes_up_a_layer():
    found = violations()
    assert not found, "imports against the layer rule:\n" + "\n".join(found)


def test_every_package_has_a_layer():
    packages = {name for name in os.listdir(PACKAGE_DIR)
                if os.path.isfile(os.path.join(PACKAGE_DIR, name, "__init__.py"))}
    modules = {name[:-3] for name in os.listdir(PACKAGE_DIR) if name.endswith(".py") and name != "__init__.py"}
    assert packages | modules <= set(RANK), sorted((packages | modules) - set(RANK))


@pytest.mark.parametrize("snippet, expect", [
    ("from ..emit import findings\n", "imports opkit.emit"),
    ("def f():\n    from opkit.run import session\n", "imports opkit.run"),
    ("import importlib\nimportlib.import_module('opkit.commands.test')\n", "imports opkit.commands"),
])
def test_the_rule_sees_every_kind_of_import(tmp_path, monkeypatch, snippet, expect):
    """An upward import at module level, inside a function, or by importlib is each caught."""
    fake = tmp_path / "opkit"
    (fake / "results").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "results" / "__init__.py").write_text("")
    (fake / "results" / "bad.py").write_text(snippet)
    monkeypatch.setattr(__import__(__name__), "PACKAGE_DIR", str(fake))
    found = violations()
    assert len(found) == 1 and expect in found[0] and "bad.py" in found[0], found
