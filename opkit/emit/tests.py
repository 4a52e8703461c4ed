"""Emitter ``tests``: ``generated/tests/<domain>/test_<op>.py`` for every op with a spec kernel.

Each file spells out its hypothesis strategies (one composite per version: attributes from their
value domains, inputs from their types and rank rules) and holds, per version, one differential
test parametrized over the allowed type bindings, one test per example, one per property and one
per lowering. A pure function of the specs: same specs, same bytes.
"""

from __future__ import annotations

import os
import re

import jinja2

from ..spec.model import OpSpec, OpVersion
from . import GenContext, header
from .templating import environment, snake

NAME = "tests"
OWNED_DIRS = ("generated/tests",)


def _env() -> jinja2.Environment:
    return environment("tests")


def _ident(name: str) -> str:
    ident = re.sub(r"\W", "_", name).strip("_") or "x"
    return ident if not ident[0].isdigit() else "_" + ident


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join((text or "").split()).replace('"""', "'''").replace("\\", "\\\\")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rank_src(rank) -> str:
    if rank is None:
        return "None"
    return f"S.Rank({rank.min}, {rank.max})"


def _attr_entry(var: str, attr) -> dict:
    from ..strategies import TYPE_ATTRIBUTES

    dom = attr.domain
    if attr.name in TYPE_ATTRIBUTES and attr.type in ("int", "string"):
        return {"name": attr.name, "source": "st.just(S.ABSENT)",
                "comment": f"{attr.type}: set from the output's type binding by S.finish_case"}
    default = f"default {attr.default!r}" if attr.has_default else ("required" if attr.required else "no default")
    comment = f"{attr.type}, {default}" + (f", {dom.describe()}" if dom is not None else "")
    if dom is not None and dom.values is not None and attr.type in ("int", "float", "string"):
        values = f"st.sampled_from({list(dom.values)!r})"
        source = values if attr.required else f"st.one_of(st.just(S.ABSENT), {values})"
    else:
        source = f"S.attribute({var}.attribute({attr.name!r}))"
    return {"name": attr.name, "source": source, "comment": comment}


def _elem_src(param) -> str:
    if param.type.startswith("tensor("):
        return repr(param.type[7:-1])
    if "(" in param.type:
        return repr(param.type)  # seq(...) etc: strategies raise NotGeneratable at draw time
    return f"types[{param.type!r}]"


def _input_entry(param, broadcast: bool) -> dict:
    rank = _rank_src(param.rank)
    tensor = f"S.tensor({_elem_src(param)}, dims, rank={rank}{', broadcast=True' if broadcast else ''})"
    comment = f"{param.type}" + (f", {param.rank.describe()}" if param.rank else "")
    if param.option == "optional":
        return {"source": f"({param.name!r}, draw(S.optional({tensor})))", "comment": "optional " + comment}
    return {"source": f"({param.name!r}, draw({tensor}))", "comment": comment}


def _bindings(version: OpVersion):
    from ..strategies import covering_bindings

    bindings = covering_bindings(version)  # every type of every parameter; at most 64 combinations
    ids = ["-".join(t[7:-1] if t.startswith("tensor(") else t for _, t in sorted(b.items())) or "none"
           for b in bindings]
    return bindings, ids


def _version_context(spec: OpSpec, version: OpVersion) -> dict:
    from ..conformance.dtypes import in_class

    var = f"V{version.since}"
    fn = f"{snake(spec.name)}_{version.since}"
    broadcast = len([p for p in version.inputs if p.option != "variadic"]) > 1
    bindings, ids = _bindings(version)
    inputs, variadic = [], []
    for p in version.inputs:
        if p.option == "variadic":
            variadic.append(f"S.draw_variadic(draw, {p.name!r}, {_elem_src(p)}, dims, {_rank_src(p.rank)}, "
                            f"{p.min_arity}, {broadcast})  # variadic {p.type}")
        else:
            inputs.append(_input_entry(p, broadcast))
    examples = []
    for e in version.examples:
        types = {}
        for p in version.inputs:
            tv = dict(e.inputs).get(p.name)
            if tv is not None and "(" not in p.type:
                types.setdefault(p.type, f"tensor({tv.dtype})")
        examples.append({"name": e.name, "fn": _ident(e.name), "doc": _one_line(e.doc), "types": types})
    props = []
    for p in version.properties:
        chosen = [(b, i) for b, i in zip(bindings, ids)
                  if not p.types or all(in_class(t, p.types) for t in b.values())]
        props.append({"name": p.name, "fn": _ident(p.name), "doc": _one_line(p.doc) or p.name,
                      "holds": _one_line(p.holds, 2000),
                      "bindings": "[" + ", ".join(repr(b) for b, _ in chosen) + "]",
                      "ids": repr([i for _, i in chosen])})
    lowerings = [{"name": lw.name, "fn": _ident(lw.name), "to": lw.to, "doc": _one_line(lw.doc)}
                 for lw in version.lowerings]
    return {"since": version.since, "var": var, "fn": fn, "strategy": f"{fn}_calls", "bindings": bindings,
            "binding_ids": ids, "attributes": [_attr_entry(var, a) for a in version.attributes],
            "inputs": inputs, "variadic": variadic, "examples": examples, "properties": props,
            "lowerings": lowerings, "differential": version.determinism != "nondeterministic"}


def test_path(spec: OpSpec) -> str:
    return f"generated/tests/{spec.domain}/test_{snake(spec.name)}.py"


def emit(ctx: GenContext) -> dict[str, str]:
    env = _env()
    template = env.get_template("test_op.py.j2")
    out: dict[str, str] = {}
    for spec in sorted(ctx.specs, key=lambda s: (s.domain, s.name)):
        versions = [v for v in spec.versions if v.kernel is not None]
        if not versions:
            continue
        rel = os.path.relpath(spec.path, ctx.root) if spec.path else f"specs/{spec.domain}/{spec.name}.yaml"
        qualified = spec.name if spec.domain == "ai.onnx" else f"{spec.domain}::{spec.name}"
        text = template.render(header=header(rel.replace(os.sep, "/")), spec=spec, qualified=qualified,
                               versions=[_version_context(spec, v) for v in versions])
        out[test_path(spec)] = text
    out[REPORT_SCHEMA_PATH] = report_schema_text()
    out["generated/tests/pytest.ini"] = PYTEST_INI
    return out


# Test files of different domains share names (ai.onnx/test_trilu.py, com.microsoft/test_trilu.py)
# and domain folders cannot be packages (dots), so pytest must import them by path.
PYTEST_INI = """\
# @generated by opkit (opkit/emit/tests.py) -- do not edit; run `opkit gen`
[pytest]
addopts = --import-mode=importlib -p no:cacheprovider
markers =
    opkit(domain, op, version, suite, example, types): an opkit conformance test
"""


REPORT_SCHEMA_PATH = "opkit/conformance/report.schema.json"


def report_schema_text() -> str:
    """The conformance report's JSON Schema (opkit.conformance.report.REPORT_SCHEMA), published."""
    import json

    from ..conformance.report import REPORT_SCHEMA

    return json.dumps(REPORT_SCHEMA, indent=2) + "\n"


__all__ = ["NAME", "OWNED_DIRS", "emit", "test_path"]
