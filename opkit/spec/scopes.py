"""Which names a spec's embedded Python sees, per kind of code: one table for the validator (which
reports every other name at ``opkit validate`` time) and for the code that builds the namespaces
(so the two cannot drift apart).

  rule      ``rules[].holds``: an ``if not (...)`` in the generated kernel function
            (templates/kernels/_module.py.j2), so it sees what a kernel body sees, except ``_n_outputs``.
  kernel    ``kernel.python``: the body of the generated kernel function. Its parameters are the
            inputs and attributes (named by ``pyname``; None when absent); the module imports math,
            ml_dtypes and np and star-imports the helpers of opkit.kernels.lib and .runtime.
  property  ``properties[].holds``: eval'd by conformance.harness.check_property with the inputs and
            attributes (None when absent), np, equal (exact comparison) and op (the op under test).
  lowering  ``lowerings[].python``: the body of a function with the op's signature
            (harness.lowering_function) that also sees np and target (the target op's kernel).

Builtins are in scope everywhere. Outputs never are: nothing runs after the op has computed them.
"""

from __future__ import annotations

import ast
import builtins
import functools
import keyword
import os
import re

KERNEL_IMPORTS = ("math", "ml_dtypes", "np")  # the imports of templates/kernels/_module.py.j2
GLOBALS = {
    "rule": KERNEL_IMPORTS,
    "kernel": KERNEL_IMPORTS + ("_n_outputs",),  # a keyword the kernel gets when its body uses it
    "property": ("np", "equal", "op"),
    "lowering": ("np", "target"),
}
# Kernel parameters may not shadow these ("rt" is kept so that generated names do not change).
RESERVED = set(KERNEL_IMPORTS) | {"rt"}
BUILTINS = frozenset(dir(builtins))


def pyname(name: str) -> str:
    """The Python identifier a formal parameter or attribute is bound to in a kernel."""
    ident = re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident) or ident in RESERVED:
        ident += "_"
    return ident


@functools.cache
def kernel_helpers() -> frozenset[str]:
    """The ``__all__`` of opkit.kernels.lib and .runtime, read from their source: importing them
    would load NumPy into every ``opkit validate``."""
    names: set[str] = set()
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")
    # lib/__init__.py star-imports one private module per newer family (``__all__ += ...``): read theirs too
    private = sorted(os.path.join("lib", f) for f in os.listdir(os.path.join(folder, "lib"))
                     if f.startswith("_") and f.endswith(".py") and f != "__init__.py")
    for module in (os.path.join("lib", "__init__.py"), "runtime.py", *private):
        with open(os.path.join(folder, module), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for stmt in tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            if stmt_value := getattr(stmt, "value", None):
                if any(getattr(t, "id", None) == "__all__" for t in targets):
                    names.update(ast.literal_eval(stmt_value))
    return frozenset(names)


def parameters(kind: str, version) -> list[str]:
    """The names the inputs and attributes of ``version`` are bound to in code of ``kind``."""
    names = [p.name for p in version.inputs] + [a.name for a in version.attributes]
    return [pyname(n) for n in names] if kind in ("rule", "kernel") else names


def names(kind: str, version) -> frozenset[str]:
    """Every name code of ``kind`` may load without binding it itself."""
    extra = kernel_helpers() if kind in ("rule", "kernel") else ()
    return frozenset(parameters(kind, version)).union(GLOBALS[kind], extra, BUILTINS)


def provide(kind: str, provided: dict) -> dict:
    """The globals code of ``kind`` runs with: exactly the names of GLOBALS[kind], which is what the
    validator lets the spec use."""
    if set(provided) != set(GLOBALS[kind]):
        raise AssertionError(f"{kind} code sees {sorted(GLOBALS[kind])}, but was given {sorted(provided)}")
    return dict(provided)


def namespace(kind: str, version, provided: dict, values: dict) -> dict:
    """The namespace an expression of ``kind`` is eval'd in: ``provided`` (see ``provide``), then
    every input and attribute, bound to None when ``values`` lacks it (absent), like a kernel's."""
    ns = provide(kind, provided)
    ns.update(dict.fromkeys(parameters(kind, version)))
    ns.update(values)
    return ns


# ---------------------------------------------------------------------------------------------
# names a piece of code loads but does not bind


def _binds(node: ast.AST) -> tuple[str, ...]:
    """The names one node binds: assignment, loop, comprehension, walrus and del targets, imports,
    def/class names, arguments, except/match captures."""
    if isinstance(node, ast.Name):
        return () if isinstance(node.ctx, ast.Load) else (node.id,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return tuple((a.asname or a.name).split(".")[0] for a in node.names)
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        return (node.name,)
    if isinstance(node, ast.MatchMapping) and node.rest:
        return (node.rest,)
    return ()


def undefined_names(source: str, mode: str, known: frozenset[str]) -> list[tuple[str, int, int]]:
    """(name, line, column) of each name ``source`` loads that is neither in ``known`` nor bound by
    the code itself, in source order; line 1-based, column 0-based in characters. ``mode`` is
    "eval" for an expression, "exec" for a function body. The source must parse.

    Bindings are collected flat, not per scope: a comprehension variable used after its
    comprehension is not caught, but nothing the code binds is ever flagged."""
    tree = ast.parse(source, mode=mode)  # a top-level 'return' parses; only compile rejects it
    bound, loads = set(known), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.append(node)
        else:
            bound.update(_binds(node))
    lines = source.split("\n")
    out = []
    for node in loads:
        if node.id not in bound:
            text = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
            col = len(text.encode("utf-8")[:node.col_offset].decode("utf-8", "replace"))  # ast counts bytes
            out.append((node.id, node.lineno, col))
    return sorted(out, key=lambda item: (item[1], item[2]))
