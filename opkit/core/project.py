"""Where specs come from and where generated files go: the built-in tree and the user's project.

Two kinds of spec tree exist side by side:

* the **built-in** tree, the specs opkit ships with their generated kernels and tests: package
  data in an installed wheel (``opkit/_builtin/``), or the checkout's ``specs/`` and
  ``generated/`` in an editable install;
* the **project**'s trees: the folders a user's ``pyproject.toml`` names in ``[tool.opkit]``
  (or ``--specs DIR``), with their own ``generated/`` folder that ``opkit gen`` writes.

Commands see both; a project op that redefines a built-in op is an error unless the project lists it
under ``overrides``. opkit's own checkout is a project with ``builtin = true``: its trees *are* the
built-in ones.

Child processes (the conformance worker pool is spawned, not forked) find the same trees through
the ``OPKIT_PROJECT`` environment variable, which ``activate`` sets.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
from dataclasses import dataclass, field, replace

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

# this file is opkit/core/project.py: the package is one folder up
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the checkout this package was installed from (editable installs)
SOURCE_ROOT = os.path.dirname(PACKAGE_DIR)
# where a wheel carries the built-in specs and their generated kernels and tests (setup.py copies
# them there at build time)
PACKAGED_BUILTIN = os.path.join(PACKAGE_DIR, "_builtin")
ENV = "OPKIT_PROJECT"
CONFIG_FILE = "pyproject.toml"


class ConfigError(Exception):
    """A bad ``[tool.opkit]`` table or ``--specs`` folder: one line naming the file and key."""


@dataclass(frozen=True)
class SpecTree:
    """One folder of ``<domain>/<Op>.yaml`` specs and the folder its generated files live in."""

    specs: str
    generated: str
    builtin: bool = False

    @property
    def kernels(self) -> str:
        return os.path.join(self.generated, "kernels")


@dataclass(frozen=True)
class Project:
    """The user's project as ``[tool.opkit]`` (or ``--specs``) describes it."""

    root: str  # the folder holding the config file (else the current directory)
    config: str | None  # the pyproject.toml read, or None
    trees: tuple[SpecTree, ...]  # the project's own spec trees (empty: built-in ops only)
    generated: str  # where ``opkit gen`` writes
    docs: str  # where ``opkit docs`` writes the site
    reports: str  # default folder of ``opkit test`` reports
    expectations: str  # folder of per-backend expectation files
    backend: str | None = None  # default ``opkit test --backend``
    overrides: frozenset[str] = field(default_factory=frozenset)  # "domain::Op" the project redefines
    builtin: bool = False  # this project provides the built-in trees (opkit's own checkout)

    @property
    def all_trees(self) -> tuple[SpecTree, ...]:
        """The project's trees first, then the built-in one (unless the project is the built-in)."""
        if self.builtin:
            return self.trees
        return self.trees + (builtin_tree(),)

    @property
    def writable(self) -> bool:
        """Whether ``gen`` may write: never into site-packages."""
        return bool(self.trees) and not any(_inside(t.specs, PACKAGED_BUILTIN) for t in self.trees)


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder + os.sep)


def builtin_root() -> str:
    """The folder holding opkit's built-in specs/, generated/ and conformance/expectations/: package
    data in a wheel, else the checkout opkit runs from."""
    for root in (PACKAGED_BUILTIN, SOURCE_ROOT):
        if os.path.isdir(os.path.join(root, "specs")):
            return root
    return PACKAGED_BUILTIN  # an install without built-in specs: an empty tree keeps commands working


def builtin_tree() -> SpecTree:
    root = builtin_root()
    return SpecTree(os.path.join(root, "specs"), os.path.join(root, "generated"), builtin=True)


def builtin_expectations() -> str:
    """The folder of the expectation files opkit ships for the runtimes it has triaged."""
    return os.path.join(builtin_root(), "conformance", "expectations")


# ------------------------------------------------------------------------------------------------
# [tool.opkit]

# key -> (type name for errors, what it means); the docs' table is rendered from this
KEYS: dict[str, tuple[str, str]] = {
    "specs": ("list of folders", "spec folders of the project (`<domain>/<Op>.yaml` inside); default [\"specs\"]"),
    "generated": ("folder", "where `opkit gen` writes kernels, tests and docs pages; default \"generated\""),
    "docs": ("folder", "where `opkit docs` writes the HTML site; default \"build/docs\""),
    "reports": ("folder", "default folder of `opkit test` reports; default \"reports\""),
    "expectations": ("folder", "per-backend expected failures (`<backend>.yaml`); default "
                               "\"conformance/expectations\""),
    "backend": ("string", "default `opkit test --backend`"),
    "overrides": ("list of ops", "`domain::Op` names the project deliberately redefines over built-in specs"),
    "builtin": ("boolean", "this project provides opkit's built-in specs (opkit's own checkout only)"),
}
DEFAULTS = {"specs": ["specs"], "generated": "generated", "docs": "build/docs", "reports": "reports",
            "expectations": os.path.join("conformance", "expectations")}


def _key_line(text: str, key: str) -> int:
    """The line of ``key = ...`` inside ``[tool.opkit]`` (1-based; the table's line if not found)."""
    in_table, table_line = False, 1
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_table = stripped.replace(" ", "") in ("[tool.opkit]",)
            if in_table:
                table_line = number
            continue
        if in_table and re.match(rf"[\"']?{re.escape(key)}[\"']?\s*=", stripped):
            return number
    return table_line


def _error(path: str, text: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}:{_key_line(text, key)}: [tool.opkit] {key}: {message}")


def _folder(path: str, text: str, key: str, value, root: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _error(path, text, key, f"expected a folder name (a string), got {value!r}")
    return os.path.normpath(os.path.join(root, value))


def read_config(path: str) -> dict | None:
    """The ``[tool.opkit]`` table of a pyproject.toml, or None when it has none."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    table = data.get("tool", {}).get("opkit") if isinstance(data.get("tool"), dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.opkit] must be a table")
    return table


def project_from_config(path: str, table: dict) -> Project:
    """A Project from a ``[tool.opkit]`` table; ConfigError names the file, line and key."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    root = os.path.dirname(os.path.abspath(path))
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(KEYS)}"
            raise _error(path, text, key, f"unknown key{hint}")
    specs = table.get("specs", DEFAULTS["specs"])
    if isinstance(specs, str):
        specs = [specs]
    if not isinstance(specs, list) or not specs:
        raise _error(path, text, "specs", f"expected a list of folders, got {specs!r}")
    folders = []
    for value in specs:
        folder = _folder(path, text, "specs", value, root)
        if not os.path.isdir(folder):
            raise _error(path, text, "specs", f"folder {value!r} does not exist ({folder}); create it or run "
                                             "`opkit init`")
        folders.append(folder)
    folder_keys = {key: _folder(path, text, key, table.get(key, DEFAULTS[key]), root)
                   for key in ("generated", "docs", "reports", "expectations")}
    backend = table.get("backend")
    if backend is not None and (not isinstance(backend, str) or not backend):
        raise _error(path, text, "backend", f"expected a backend name, got {backend!r}")
    overrides = table.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "::" in o for o in overrides):
        raise _error(path, text, "overrides", "expected a list of \"domain::Op\" names")
    builtin = table.get("builtin", False)
    if not isinstance(builtin, bool):
        raise _error(path, text, "builtin", f"expected true or false, got {builtin!r}")
    generated = folder_keys["generated"]
    trees = tuple(SpecTree(f, generated, builtin=builtin) for f in folders)
    return Project(root=root, config=path, trees=trees, generated=generated, docs=folder_keys["docs"],
                   reports=folder_keys["reports"], expectations=folder_keys["expectations"], backend=backend,
                   overrides=frozenset(overrides), builtin=builtin)


def find_config(start: str) -> str | None:
    """The nearest pyproject.toml with a ``[tool.opkit]`` table, from ``start`` upwards."""
    probe = os.path.abspath(start)
    while True:
        candidate = os.path.join(probe, CONFIG_FILE)
        if os.path.isfile(candidate) and read_config(candidate) is not None:
            return candidate
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def _bare_project(root: str) -> Project:
    """No config: built-in ops only; outputs relative to ``root``."""
    return Project(root=root, config=None, trees=(), generated=os.path.join(root, DEFAULTS["generated"]),
                   docs=os.path.join(root, DEFAULTS["docs"]), reports=os.path.join(root, DEFAULTS["reports"]),
                   expectations=os.path.join(root, DEFAULTS["expectations"]))


def discover(cwd: str | None = None, specs: list[str] | tuple[str, ...] = ()) -> Project:
    """The project for a command run in ``cwd``; ``specs`` (``--specs DIR``) replaces its spec folders."""
    cwd = os.path.abspath(cwd or os.getcwd())
    config = find_config(cwd)
    project = project_from_config(config, read_config(config)) if config else _bare_project(cwd)
    if specs:
        folders = []
        for folder in specs:
            folder = os.path.abspath(folder)
            if not os.path.isdir(folder):
                raise ConfigError(f"--specs {folder}: no such folder")
            folders.append(folder)
        builtin = project.builtin or all(os.path.realpath(f) == os.path.realpath(builtin_tree().specs)
                                         for f in folders)
        trees = tuple(SpecTree(f, project.generated, builtin=builtin) for f in folders)
        project = replace(project, trees=trees, builtin=builtin)
    return project


# ------------------------------------------------------------------------------------------------
# the project of this process (and of the processes it spawns)

_ACTIVE: Project | None = None


def activate(project: Project) -> Project:
    """Make ``project`` the one every lookup in this process and its children uses."""
    global _ACTIVE
    _ACTIVE = project
    os.environ[ENV] = json.dumps(_to_json(project))
    _clear_lookups()
    return project


# modules that cache lookups made for the active project, each with a clear_caches()
_LOOKUP_CACHES = ("opkit.spec.catalog", "opkit.kernels.registry", "opkit.conformance.harness",
                  "opkit.backends.reference")


def _clear_lookups() -> None:
    """Forget everything looked up for the previous project (specs, kernels). Only modules already
    imported can hold anything: importing the others here would put hypothesis and onnx on every
    command's start-up."""
    import sys

    for name in _LOOKUP_CACHES:
        module = sys.modules.get(name)
        if module is not None:
            module.clear_caches()


@contextlib.contextmanager
def using(project: Project):
    """Activate ``project`` for a block, then restore the previous one (``opkit.cli.main`` called
    in-process, as tests and tools do, must not change what later lookups see)."""
    global _ACTIVE
    before, before_env = _ACTIVE, os.environ.get(ENV)
    activate(project)
    try:
        yield project
    finally:
        if before_env is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before_env
        if before is None:
            _forget()
        else:
            activate(before)


def _forget() -> None:
    global _ACTIVE
    _ACTIVE = None
    _clear_lookups()


def active() -> Project:
    """The activated project; else the one ``OPKIT_PROJECT`` describes; else discovered from cwd."""
    global _ACTIVE
    if _ACTIVE is None:
        raw = os.environ.get(ENV)
        _ACTIVE = _from_json(json.loads(raw)) if raw else discover()
    return _ACTIVE


def _to_json(project: Project) -> dict:
    data = {k: getattr(project, k) for k in ("root", "config", "generated", "docs", "reports", "expectations",
                                              "backend", "builtin")}
    data["trees"] = [[t.specs, t.generated, t.builtin] for t in project.trees]
    data["overrides"] = sorted(project.overrides)
    return data


def _from_json(data: dict) -> Project:
    trees = tuple(SpecTree(*t) for t in data.pop("trees"))
    return Project(trees=trees, overrides=frozenset(data.pop("overrides")), **data)
