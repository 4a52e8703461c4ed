"""Emitter ``kernels``: one Python module per op with a kernel, ``generated/kernels/<domain>/<op>.py``.

Each op version with a ``kernel:`` becomes one function ``<op>_<since>(inputs..., *, attributes...)``:
generated validation (types per constraint, one type across a constraint, ranks, required inputs
and attributes, attribute value domains, labelled ``rules:``) followed by the compute core, which
is a ``python:`` body, a family template from ``opkit/templates/kernels/`` rendered with the
kernel's ``params``, or (``same_as``) another version's core. A pure function of the specs.
"""

from __future__ import annotations

import os
import re
from typing import Any

import jinja2

from ..spec.model import Kernel, OpSpec, OpVersion
from ..spec.rules import parse_rules
from ..spec.scopes import pyname  # the validator checks rules and kernel bodies against these names
from . import GenContext, header
from ..core.naming import function_name, module_path
from ..core.templating import environment, template_dir

NAME = "kernels"
OWNED_DIRS = ("generated/kernels",)

TEMPLATE_DIR = template_dir("kernels")


class KernelSpecError(ValueError):
    """A kernel block that cannot be rendered (unknown template, bad same_as, ...)."""


def _env() -> jinja2.Environment:
    return environment("kernels")


def resolve_kernel(spec: OpSpec, version: OpVersion) -> tuple[Kernel, OpVersion]:
    """Follow ``same_as`` links to the kernel that computes ``version`` (and the version holding it)."""
    kernel, holder, seen = version.kernel, version, {version.since}
    while kernel is not None and kernel.same_as is not None:
        target = spec.version(kernel.same_as)
        if target is None or target.kernel is None or target.since in seen:
            raise KernelSpecError(f"{spec.name}-{version.since}: same_as {kernel.same_as} names no version "
                                  "with a kernel (or a cycle)")
        seen.add(target.since)
        kernel, holder = target.kernel, target
    assert kernel is not None
    return kernel, holder


def _const(since: int, type_name: str) -> str:
    return f"_TYPES_{since}_" + re.sub(r"\W", "_", type_name)


def _may_be_empty_optional(version: OpVersion, param) -> bool:
    tc = version.type_constraint(param.type)
    types = tc.types if tc is not None else (param.type,)
    return any(t.startswith("optional(") for t in types)


def _validation(spec: OpSpec, version: OpVersion) -> list[str]:
    """Validation lines (unindented) for one version."""
    op, ver = spec.name, version.since
    lines: list[str] = []
    bound: set[str] = set()
    for p in version.inputs:
        name = pyname(p.name)
        key = p.type if version.type_constraint(p.type) else None
        # a type constraint is checked against its module-level frozenset and bound to _t_<T>;
        # a fixed type string ('tensor(int64)') is checked on its own
        allowed = _const(ver, p.type) if key else f"frozenset({{{p.type!r}}})"
        bind = f"_t_{pyname(p.type)}" if key else None
        expected = bind if (key and key in bound and p.homogeneous) else "None"
        if p.option == "variadic":
            lines.append(f"if len({name}) < {p.min_arity}:")
            lines.append(f"    fail({op!r}, {ver}, {'arity:' + p.name!r}, "
                         f"f\"variadic input '{p.name}' needs at least {p.min_arity} value(s), got {{len({name})}}\")")
            lines.append(f"{name} = list({name})")
            lines.append(f"for _i, _v in enumerate({name}):")
            lines.append("    if _v is None:")
            lines.append("        continue")
            if key and p.homogeneous:
                exp = bind if key in bound else f"({bind} if _i else None)"
                lines.append(f"    {name}[_i], {bind} = check_type({op!r}, {ver}, {p.name!r}, _v, {key!r}, "
                             f"{allowed}, {exp})")
                bound.add(key)
            else:
                lines.append(f"    {name}[_i], _ = check_type({op!r}, {ver}, {p.name!r}, _v, {p.type!r}, {allowed})")
            continue
        target = f"{name}, {bind}" if bind else f"{name}, _"
        check = f"{target} = check_type({op!r}, {ver}, {p.name!r}, {name}, {p.type!r}, {allowed}, {expected})"
        # an input typed optional(...) may hold no element (None) even when the node must give it
        # (OptionalHasElement-15): like a left-out optional input, None skips the type check
        if p.option == "optional" or _may_be_empty_optional(version, p):
            lines.append(f"if {name} is not None:")
            lines.append("    " + check)
            if bind and key not in bound:
                lines.append("else:")
                lines.append(f"    {bind} = None")
        else:
            lines.append(check)
        if key:
            bound.add(key)
        if p.rank is not None:
            cond = f"{name} is not None and " if p.option == "optional" else ""
            lines.append(f"if {cond}isinstance({name}, np.ndarray):")
            lines.append(f"    check_rank({op!r}, {ver}, {p.name!r}, {name}, {p.rank.min}, {p.rank.max!r})")
    for a in version.attributes:
        name = pyname(a.name)
        if a.required:
            lines.append(f"if {name} is None:")
            lines.append(f"    fail({op!r}, {ver}, {'required-attribute:' + a.name!r}, "
                         f"{'attribute ' + repr(a.name) + ' is required'!r})")
        if a.type == "graph":  # a Body (the caller's), ONNX text or a GraphProto (run with the kernels)
            lines.append(f"{name} = graph_attribute({op!r}, {ver}, {a.name!r}, {name})")
        if a.domain is not None:
            d = a.domain
            vals = tuple(d.values) if d.values is not None else None
            lines.append(f"if {name} is not None:")
            lines.append(f"    check_domain({op!r}, {ver}, {a.name!r}, {name}, {vals!r}, {d.min!r}, {d.max!r})")
    for r in parse_rules(version):
        lines.append(f"if not ({r.expression}):")
        lines.append(f"    fail({op!r}, {ver}, {r.label!r}, {r.message!r})")
    return lines


def _signature(version: OpVersion) -> str:
    parts, seen_optional = [], False
    for p in version.inputs:
        name = pyname(p.name)
        if p.option == "optional" or seen_optional:
            seen_optional = True
            parts.append(f"{name}=None")
        elif p.option == "variadic":
            parts.append(f"{name}")
        else:
            parts.append(name)
    if version.attributes:
        parts.append("*")
        for a in version.attributes:
            default = a.default if a.has_default else None
            if a.type == "string" and isinstance(default, bytes):
                default = default.decode()
            parts.append(f"{pyname(a.name)}={default!r}")
    return ", ".join(parts)


class _Ctx:
    """What a family template sees besides its params."""

    def __init__(self, version: OpVersion):
        self.version = version
        self.since = version.since
        self.inputs = [pyname(p.name) for p in version.inputs]
        self.outputs = [pyname(p.name) for p in version.outputs]
        self.attrs = [pyname(a.name) for a in version.attributes]

    def has_attr(self, name: str) -> bool:
        return version_has(self.version, name)

    def has_input(self, name: str) -> bool:
        return any(p.name == name for p in self.version.inputs)


def version_has(version: OpVersion, attr: str) -> bool:
    return version.attribute(attr) is not None


def _core(env: jinja2.Environment, spec: OpSpec, version: OpVersion) -> str:
    kernel, _holder = resolve_kernel(spec, version)
    if kernel.python is not None:
        return kernel.python
    template = kernel.template or ""
    try:
        tpl = env.get_template(f"{template}.py.j2")
    except jinja2.TemplateNotFound as exc:
        raise KernelSpecError(f"{spec.path or spec.name}: unknown kernel template {template!r}; known: "
                              + ", ".join(known_templates())) from exc
    params: dict[str, Any] = dict(kernel.params)
    try:
        return tpl.render(p=params, k=_Ctx(version), op=spec.name)
    except jinja2.UndefinedError as exc:
        raise KernelSpecError(f"{spec.name}-{version.since}: template {template!r}: {exc}") from exc


def known_templates() -> list[str]:
    return sorted(f[:-6] for f in os.listdir(TEMPLATE_DIR) if f.endswith(".py.j2") and not f.startswith("_"))


def render_module(spec: OpSpec, env: jinja2.Environment | None = None) -> str:
    env = env or _env()
    functions = []
    type_consts: list[tuple[str, tuple[str, ...]]] = []
    for version in spec.versions:
        if version.kernel is None:
            continue
        for tc in version.type_constraints:
            type_consts.append((_const(version.since, tc.name), tuple(tc.types)))
        core = _core(env, spec, version).rstrip("\n")
        wants_n = "_n_outputs" in core
        signature = _signature(version)
        if wants_n:  # the core needs the number of outputs the node asks for (Split, ...)
            signature += (", " if "*" in signature.split(", ") else ", *, " if signature else "*, ") + "_n_outputs=None"
        functions.append({
            "name": function_name(spec, version.since),
            "since": version.since,
            "signature": signature,
            "wants_n": wants_n,
            "validation": "\n".join(("    " + line) if line else "" for line in _validation(spec, version)),
            "core": "\n".join(("        " + line) if line.strip() else "" for line in core.split("\n")),
            # float attributes are float32 in every model: the function rounds what it is given
            # (a spec default such as 0.01, a caller's Python float) to what a runtime sees
            "float_attrs": [pyname(a.name) for a in version.attributes if a.type in ("float", "floats")],
            "options": tuple(p.option for p in version.inputs),
            "n_outputs": len(version.outputs),
            "kernel_kind": ("same_as %d" % version.kernel.same_as) if version.kernel.same_as is not None
            else (f"template {version.kernel.template}" if version.kernel.template else "python"),
        })
    spec_path = f"specs/{spec.domain}/{os.path.basename(spec.path)}" if spec.path else f"specs/{spec.domain}/{spec.name}.yaml"
    return env.get_template("_module.py.j2").render(
        header=header(spec_path), spec=spec, functions=functions, type_consts=type_consts)


def emit(ctx: GenContext) -> dict[str, str]:
    env = _env()
    out: dict[str, str] = {}
    for spec in sorted(ctx.specs, key=lambda s: (s.domain, s.name)):
        if not any(v.kernel is not None for v in spec.versions):
            continue
        out[module_path(spec)] = render_module(spec, env)
    return out
